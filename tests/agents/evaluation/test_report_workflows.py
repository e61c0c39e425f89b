"""The report speaks the rows' workflow: its success heading, its figures, and the study only beside its own."""

from __future__ import annotations

import json
import re

from view_support import page_payloads

from erp_sim.agents.evaluation.eval_cli import main as eval_main
from erp_sim.agents.evaluation.report import view


def test_a_bank_report_says_reconciled_and_leaves_out_itemization_and_the_study(tmp_path):
    out = tmp_path / "bank"
    assert (
        eval_main(
            ["--configs", "C2,C4", "--tasks", "bank_recon_50:bank-000,bank-001", "--quiet", "--out", str(out)]
            + ["--price", "agent=1.25,0.125,10"]
        )
        == 0
    )
    report = (out / "report.md").read_text()
    assert "![reconciled vs cost with caching](success_vs_cost.png)" in report
    assert "full itemization" not in report.split("## Methods")[0]
    assert "| config | reconciled (%) | strict success (%) |\n" in report
    assert "Δ reconciled (pp)" in report
    assert "itemized amount, capped" not in report.split("## Methods")[0]
    assert "## Reference figures" not in report and "STUDY (GPT-5)" not in report
    methods = report.split("## Methods")[1]
    assert "- **Reconciled** = `grade.success`" in methods and "itemized" not in methods


def test_an_itemization_report_keeps_its_wording_and_the_study(tmp_path):
    out = tmp_path / "hotel"
    assert (
        eval_main(["--configs", "C2,C4", "--tasks", "hotel_50:hotel-000,hotel-001", "--quiet", "--out", str(out)]) == 0
    )
    report = (out / "report.md").read_text()
    assert "| config | full itemization (%) | strict success (%) | itemized amount, capped (%) |" in report
    assert "Δ full itemization (pp)" in report and "## Reference figures: the study's GPT-5 numbers" in report
    methods = report.split("## Methods")[1]
    assert "- **Full itemization** = `grade.success`" in methods and "Reconciled" not in methods
    assert "over-itemized episodes" in methods and "- **Peak tokens** = the largest single" in methods


def test_a_bank_run_page_charts_the_unreconciled_difference_and_shows_the_bank_grade(tmp_path):
    """The run page's chart of the work left reads the workflow's own control (the unreconciled difference, which
    ends at 0.00 in a reconciled episode), its success column says reconciled, and the grade table is the bank
    grade's own fields (no itemized amounts)."""
    out = tmp_path / "bank"
    assert eval_main(["--configs", "C2", "--tasks", "bank_recon_50:bank-020", "--quiet", "--out", str(out)]) == 0
    page = view.build_page(out)
    [record] = page_payloads(page, "episode")
    assert record["progress_label"] == "unreconciled difference"
    assert len(record["progress"]) > 3 and record["progress"][-1][1] == "0.00"
    assert {"unmatched_lines", "difference", "reconciled"} <= set(record["grade"]) and record["grade"]["success"]
    data = json.loads(re.search(r'<script type="application/json" id="overview-data">([^<]*)</script>', page)[1])
    assert data["metrics"][0] == {"key": "success", "label": "reconciled rate", "per_benchmark": False, "percent": True}
