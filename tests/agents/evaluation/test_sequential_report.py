"""``erp-sim eval --sequential`` prices its report like plain eval, and ``erp-sim report`` keeps its learning curve."""

from __future__ import annotations

import json

from usage_support import usage_error

from erp_sim.agents.evaluation.eval_cli import main as eval_main
from erp_sim.agents.evaluation.report.cli import main as report_main

PRICE = "agent=2.5,1.25,10"
SEQUENTIAL = [*"--policy ga_memory --sequential --quiet --tasks hotel_50:hotel-000,hotel-001".split()]


def test_a_bad_price_is_refused_before_a_sequential_run_writes_anything(tmp_path, capsys):
    for argv in (["--policy", "ga_memory"], [*SEQUENTIAL, "--memory", str(tmp_path / "memory")]):
        message = usage_error(capsys, eval_main, [*argv, "--out", str(tmp_path / "out"), "--price", "not-a-price"])
        assert message.startswith("--price 'not-a-price': expected ")
    assert not any(tmp_path.iterdir())  # no run directory, no memory store


def test_a_sequential_report_has_its_prices_and_keeps_its_learning_curve_when_rewritten(tmp_path):
    out = tmp_path / "out"
    argv = [*SEQUENTIAL, "--memory", str(tmp_path / "memory"), "--out", str(out), "--price", PRICE]
    assert eval_main(argv) == 0
    report = (out / "report.md").read_text()
    prices = json.loads((out / "report.json").read_text())["cost"]["prices_usd_per_1m_tokens"]
    assert prices == {"agent": {"input": 2.5, "cached_input": 1.25, "output": 10.0, "cache_write": None}}
    assert "No prices given" not in report
    assert report.count("## Learning curve") == 1 and report.endswith((out / "learning_curve.md").read_text())
    assert "## Against the baseline without_memory" in report
    assert report_main([str(out), "--price", PRICE]) == 0
    assert (out / "report.md").read_text() == report  # the same report, whichever command wrote it
    assert report_main([str(out)]) == 0
    unpriced = (out / "report.md").read_text()
    assert "No prices given" in unpriced and unpriced.endswith((out / "learning_curve.md").read_text())
