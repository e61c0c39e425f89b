"""erp-sim scale: per-rung costs, log-log slopes, the overflow rung, the optional cacheable column."""

from __future__ import annotations

import pytest

from erp_sim.agents.evaluation.episode_row import EpisodeRow, load_results
from erp_sim.agents.evaluation.scale import main, render_scale, scale_study, slope, write_scale


def row(
    config: str,
    task_id: str,
    *,
    peak: int,
    tokens: int,
    steps: int = 10,
    success: bool = True,
    termination: str = "success",
    **extra,
) -> EpisodeRow:
    return EpisodeRow.model_validate(
        {
            "config": config,
            "policy": "full" if config == "C2" else "last_n:n=5",
            "task_set": "long_horizon",
            "task_id": task_id,
            "run": 0,
            "termination": termination,
            "grade": {
                "success": success,
                "strict_success": success,
                "itemized_fraction": 1.0 if success else 0.5,
                "remaining_amount": "0.00" if success else "10.00",
                "collateral": [],
            },
            "metrics": {"input_tokens": tokens, "peak_tokens": peak, "steps": steps, **extra},
        }
    )


def test_slope_is_the_exponent_of_a_power_law():
    assert slope([10, 20, 50, 100], [3 * x**2 for x in (10, 20, 50, 100)]) == pytest.approx(2.0)
    assert slope([10, 20], [5, 5]) == pytest.approx(0.0)
    assert slope([10], [5]) is None


def test_study_marks_the_first_overflow_and_fits_only_whole_rungs():
    rows = [
        row("C2", "long-010-00", peak=50_000, tokens=1_000),
        row("C2", "long-020-00", peak=90_000, tokens=4_000),
        row("C2", "long-050-00", peak=130_000, tokens=25_000, success=False, termination="context_overflow"),
        row("C3", "long-010-00", peak=10_000, tokens=500),
        row("C3", "long-050-00", peak=12_000, tokens=2_500),
    ]
    study = {p.config: p for p in scale_study(rows, window=100_000)}
    c2, c3 = study["C2"], study["C3"]
    assert c2.overflow_rung == 50 and c2.fitted_rungs == [10, 20]  # the cut-short rung is not fitted
    assert c2.slopes["input_tokens"] == pytest.approx(2.0)
    assert c3.overflow_rung is None and c3.slopes["input_tokens"] == pytest.approx(1.0)
    assert [r.success_within_window for r in c2.rungs] == [1.0, 1.0, 0.0]
    text = render_scale(list(study.values()), 100_000)
    assert "| C2 | full | 2.00 |" in text and "50 charges" in text and "never" in text
    assert "cacheable" not in text  # shown only when the rows record it


def test_the_cacheable_share_appears_when_rows_have_it():
    rows = [
        row("C2", "long-010-00", peak=5, tokens=1_000, cacheable_prefix_tokens=900),
        row("C2", "long-020-00", peak=5, tokens=2_000, cacheable_prefix_tokens=1_000),
    ]
    study = scale_study(rows, window=100)
    assert [r.cacheable_share for r in study[0].rungs] == [0.9, 0.5]
    assert "| cacheable share |" in render_scale(study, 100) and "90.0%" in render_scale(study, 100)


def test_report_only_writes_the_study_beside_the_results(tmp_path):
    rows = [row("C2", "long-010-00", peak=50_000, tokens=1_000), row("C2", "long-200-00", peak=900_000, tokens=90_000)]
    (tmp_path / "results.jsonl").write_text("".join(r.json_line() for r in rows))
    assert main(["--report-only", str(tmp_path), "--context-window", "128000"]) == 0
    assert "200 charges" in (tmp_path / "scale.md").read_text() and (tmp_path / "scale.png").stat().st_size > 1000


def test_one_command_runs_the_ladder_and_finds_where_full_history_overflows(tmp_path, capsys):
    out = tmp_path / "scale"
    assert (
        main(
            [
                *"--tasks long_horizon:long-010-00,long-020-00 --configs C2,C3 --context-window 75000 --out".split(),
                str(out),
                *"--quiet --concurrency 1".split(),
            ]
        )
        == 0
    )
    study = {p.config: p for p in scale_study(load_results(out).rows, 75_000)}
    assert study["C2"].overflow_rung == 20 and study["C3"].overflow_rung is None
    assert all(r.success == 1.0 for p in study.values() for r in p.rungs)  # measured on: the window only marks
    assert write_scale(out, 75_000).read_text() == (out / "scale.md").read_text()


def test_step_capped_rungs_are_left_out_of_the_fit_and_named(capsys, tmp_path):
    """Issue 39: a fit over episodes cut at the step limit read as 'steps slope -0.00'; such rungs are flagged."""
    rows = [
        row("C3", "long-010-00", peak=10_000, tokens=1_000, steps=40),
        row("C3", "long-020-00", peak=10_000, tokens=2_000, steps=80),
        row("C3", "long-050-00", peak=10_000, tokens=2_100, steps=200, success=False, termination="step_limit"),
    ]
    study = scale_study(rows, window=100_000)
    (c3,) = study
    assert c3.fitted_rungs == [10, 20] and c3.rungs[-1].step_capped == 1
    assert c3.slopes["steps"] == pytest.approx(1.0)  # not flattened by the capped rung
    text = render_scale(study, 100_000)
    assert "| step-capped |" in text and "| 1/1 |" in text
    assert "Left out of the fits, as their costs stop at a cap: C3 at 50 charges (1/1 step-capped)." in text
    (tmp_path / "results.jsonl").write_text("".join(r.json_line() for r in rows))
    write_scale(tmp_path, 100_000)
    assert "slopes leave out rungs cut short: C3 at 50 charges (1/1 step-capped)" in capsys.readouterr().err


def test_an_overflow_is_shown_with_the_size_of_the_refused_request():
    """Issue 39: 'peak 127,817 < 128,000 yet overflowed 1/1': the refused request was never counted."""
    rows = [
        row(
            "C2", "long-050-00", peak=127_817, tokens=9_000_000, success=False, termination="context_overflow",
            refused_request_tokens=128_903,
        ),
    ]  # fmt: skip
    (c2,) = scale_study(rows, window=128_000)
    assert c2.rungs[0].overflowed == 1 and c2.rungs[0].refused_request_tokens == 128_903
    text = render_scale([c2], 128_000)
    assert "| refused request |" in text and "| 127,817 | 128,903 |" in text
    # a run without the window enforced: the peak alone marks the overflow, no refused column
    assert "refused request |" not in render_scale(
        scale_study([row("C2", "long-050-00", peak=130_000, tokens=1)], 128_000), 128_000
    )


def test_the_plot_is_laid_out_in_a_grid_to_be_read(tmp_path):
    """Issue 39, point 4: five panels in one 3,150 px row; now at most three a row."""
    import struct

    rows = [
        row("C2", "long-010-00", peak=5, tokens=1_000, cacheable_prefix_tokens=900),
        row("C2", "long-020-00", peak=9, tokens=2_000, cacheable_prefix_tokens=1_000),
    ]
    (tmp_path / "results.jsonl").write_text("".join(r.json_line() for r in rows))
    write_scale(tmp_path, 100)
    width, height = struct.unpack(">II", (tmp_path / "scale.png").read_bytes()[16:24])  # the PNG's IHDR
    assert width / height < 2.5 and width < 2500  # five panels: two rows of three
