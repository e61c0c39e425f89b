"""The report speaks the rows' workflow: its success heading, its figures, and the study only beside its own."""

from __future__ import annotations

from erp_sim.agents.evaluation.eval_cli import main as eval_main


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


def test_an_itemization_report_keeps_its_wording_and_the_study(tmp_path):
    out = tmp_path / "hotel"
    assert (
        eval_main(["--configs", "C2,C4", "--tasks", "hotel_50:hotel-000,hotel-001", "--quiet", "--out", str(out)]) == 0
    )
    report = (out / "report.md").read_text()
    assert "| config | full itemization (%) | strict success (%) | itemized amount, capped (%) |" in report
    assert "Δ full itemization (pp)" in report and "## Reference figures: the study's GPT-5 numbers" in report
