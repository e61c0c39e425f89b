"""The sequential run's LLM consolidator: its model and its calls' tokens in the rows it consolidates for.

Against the project's strict local server (``test_model_roles``' role handler answers the
consolidator with an SOP and reports 30 prompt and 40 completion tokens), recorded and replayed.
"""

from __future__ import annotations

import json
import shutil

from test_model_roles import SOP_ANSWER, roles_server, without_timing

from erp_sim.agents.evaluation.eval_cli import main as eval_main
from erp_sim.agents.tokens import get_counter

SEQUENTIAL = [*"--policy ga_memory --sequential --quiet --concurrency 1 --tasks hotel_50:hotel-000,hotel-001".split()]


def test_the_llm_consolidators_model_and_tokens_are_in_the_rows_it_consolidates_for(tmp_path):
    argv = [*SEQUENTIAL, "--memory", str(tmp_path / "memory"), "--consolidator", "openai:fake-cons"]
    live = [*argv, *"--agent openai:fake-agent --model-param consolidator:max_tokens=800 --timeout 40".split()]
    with roles_server() as server:
        recording = ["--base-url", server.base_url, "--out", str(tmp_path / "run"), "--record", str(tmp_path / "rec")]
        assert eval_main([*live, *recording]) == 0
        asked = [body for body in server.requests if body["model"] == "fake-cons"]
        assert not server.rejections
    rows = without_timing(tmp_path / "run")
    consolidated = [row for row in rows if row["config"] == "with_memory"]
    assert len(asked) == len(consolidated) == 2
    counter = get_counter()
    answer = counter.count_message({"role": "assistant", "content": f"The SOP:\n{SOP_ANSWER}"})
    for row, body in zip(consolidated, asked):
        assert row["memory"]["consolidator"] == {
            "model": {
                "model": "fake-cons",
                "params": {"temperature": 0.0, "max_tokens": 800},
                "timeout": 40.0,
                "max_retries": 5,
                "base_url": server.base_url,
            },
            "calls": 1,
            "input_tokens": counter.count_messages(body["messages"]),  # o200k, ours
            "output_tokens": answer,
            "reported_input_tokens": 30,  # the service's own figures
            "reported_output_tokens": 40,
            "provider_cached_tokens": 0,
            "served_models": ["fake-model"],
        }
    assert all("memory" not in row for row in rows if row["config"] == "without_memory")
    sent = sum(counter.count_messages(body["messages"]) for body in asked)
    assert (
        f"Consolidator: `openai:fake-cons`, 2 calls, {sent:,} input and {2 * answer:,} output tokens (o200k; its "
        "service reported 60 and 80)"
    ) in (tmp_path / "run" / "report.md").read_text()
    # priced like the other roles: its tokens per benchmark in report.json, its cost in the configuration's
    from erp_sim.agents.evaluation.report.cli import main as report_main

    agent_only, with_it = ("agent=1,0.5,2",), ("agent=1,0.5,2", "consolidator=3,3,5")
    costs = {}
    for prices in (agent_only, with_it):
        assert report_main([str(tmp_path / "run"), *(f"--price={price}" for price in prices)]) == 0
        costs[prices] = json.loads((tmp_path / "run" / "report.json").read_text())["cost"]
    configs = costs[with_it]["configs"]
    assert configs["with_memory"]["input_tokens_per_benchmark"]["consolidator"] == sent
    assert configs["without_memory"]["input_tokens_per_benchmark"]["consolidator"] == 0
    assert costs[agent_only]["unpriced_roles"] == ["consolidator"] and costs[with_it]["unpriced_roles"] == []
    added = (3 * sent + 5 * 2 * answer) / 1e6  # without caching: no cacheable prefix is measured for it
    cost = {p: costs[p]["configs"]["with_memory"]["cost_per_benchmark_without_caching"]["mean"] for p in costs}
    assert abs(cost[with_it] - cost[agent_only] - added) < 1e-9
    # the replay reports the recorded consolidator and its tokens, byte for byte
    shutil.rmtree(tmp_path / "memory")
    assert eval_main([*argv, "--agent", f"replay:{tmp_path / 'rec'}", "--out", str(tmp_path / "replay")]) == 0
    assert json.dumps(without_timing(tmp_path / "replay")) == json.dumps(rows)


def test_an_offline_consolidation_names_no_consolidator(tmp_path):
    assert eval_main([*SEQUENTIAL, "--memory", str(tmp_path / "memory"), "--out", str(tmp_path / "run")]) == 0
    memory = [row["memory"] for row in without_timing(tmp_path / "run") if row["config"] == "with_memory"]
    assert memory and all(set(entry) == {"archive_key", "success", "promoted", "note"} for entry in memory)
