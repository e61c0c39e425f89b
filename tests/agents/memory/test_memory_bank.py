"""GenericAgent's layered memory on bank reconciliation: a sequential run consolidates the first reconciled
episode into an SOP (the scripted agent asks for the update before the click that ends the episode), and the
next episode reads it and opens the reconciliation list by the SOP's verified call, skipping the menu search."""

from __future__ import annotations

import gzip
import json

from erp_sim.agents.evaluation.eval_cli import main as eval_main


def calls(path) -> list[str]:
    episode = json.loads(gzip.decompress(path.read_bytes()))
    return [c["function"]["name"] for m in episode["messages"] for c in m.get("tool_calls") or []]


def test_a_sequential_bank_run_learns_an_sop_and_the_next_episode_uses_it(tmp_path):
    out, memory = tmp_path / "out", tmp_path / "memory.sqlite"
    argv = ["--policy", "ga_memory", "--sequential", "--quiet", "--tasks", "bank_recon_50:bank-000,bank-001"]
    assert eval_main([*argv, "--memory", str(memory), "--out", str(out)]) == 0
    first, second = (calls(out / "trajectories" / "with_memory" / f"bank-00{i}-run0.json.gz") for i in (0, 1))
    assert first[-2:] == ["start_long_term_update", "form_click_control"]  # then Mark as reconciled ends it
    assert second[:2] == ["memory_read", "form_open_menu_item"] and "form_find_menu_item" not in second
    baseline = calls(out / "trajectories" / "without_memory" / "bank-001-run0.json.gz")
    assert baseline[0] == "form_find_menu_item" and "memory_read" not in baseline
