"""The scaling study's tables in docs/envs.md, from a run of ``erp-sim scale`` (scripted agent, C2-C4, long_horizon).

    .venv/bin/python scripts/horizon_docs.py                 # every rung: print both tables
    .venv/bin/python scripts/horizon_docs.py --write         # ... and put them between the doc's markers
    .venv/bin/python scripts/horizon_docs.py --rungs 10      # one rung: its rows only (what the test reruns)

The doc's figures are this script's output, not typed in: the per-rung table holds every rung's means
(what a run on a smaller ladder reprints row for row, which tests/agents/evaluation/test_horizon_docs.py
checks on the 10-charge rung), the summary table the 10 -> 200 charges ends and the slopes of
``erp-sim scale`` (agents/evaluation/scale.py), fitted over the rungs no episode was cut short on.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path

from erp_sim.agents.evaluation import scale
from erp_sim.agents.evaluation.episode_row import load_results
from erp_sim.task_sets import task_rows

DOC = Path(__file__).resolve().parent.parent / "docs" / "envs.md"
TASK_SET = "long_horizon"
CONFIGS = "C2,C3,C4"
BEGIN = "<!-- scripts/horizon_docs.py writes the tables below: begin -->"
END = "<!-- scripts/horizon_docs.py: end -->"
RUNG_HEADER = (
    "| config | charges | input tokens / episode | peak tokens | steps | success | success within the window "
    "| step-capped |\n|---|---:|---:|---:|---:|---:|---:|---:|"
)
SUMMARY_HEADER = (
    "| config | input tokens / episode, 10 → 200 charges | slope | peak tokens, 10 → 200 | slope | steps, 10 → 200 "
    "| slope | success at 200 | first overflow of 128k |\n|---|---:|---:|---:|---:|---:|---:|---:|---|"
)


def run_study(rungs: list[int], configs: str = CONFIGS) -> list[scale.PolicyScale]:
    """``erp-sim scale`` on the rungs' tasks (its defaults: 1 run, no window enforced), in a scratch directory."""
    ids = [row.task_id for row in task_rows(TASK_SET) if row.size in rungs]
    if not ids:
        raise SystemExit(f"horizon_docs: no {TASK_SET} task has {rungs} charges")
    with tempfile.TemporaryDirectory(prefix="horizon-docs-") as out:
        argv = ["--configs", configs, "--tasks", f"{TASK_SET}:{','.join(ids)}", "--out", out, "--quiet"]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            status = scale.main(argv)
        if status:
            raise SystemExit(f"horizon_docs: erp-sim scale {' '.join(argv)} exited {status}")
        return scale.scale_study(load_results(out).rows, scale.DEFAULT_WINDOW)


def _label(policy: scale.PolicyScale) -> str:
    return f"{policy.config} {policy.policy}"


def rung_rows(study: list[scale.PolicyScale]) -> list[str]:
    """One row per policy and rung: the means ``erp-sim scale`` writes to scale.md."""
    return [
        f"| {_label(p)} | {r.charges} | {r.input_tokens:,.0f} | {r.peak_tokens:,.0f} | {r.steps:,.1f} | "
        f"{r.success:.0%} | {r.success_within_window:.0%} | {r.step_capped}/{r.episodes} |"
        for p in study
        for r in p.rungs
    ]


def _millions(tokens: float) -> str:
    return f"{tokens / 1e6:,.2f}M" if tokens < 1e7 else f"{tokens / 1e6:,.1f}M"


def _slope(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def summary_rows(study: list[scale.PolicyScale]) -> list[str]:
    """The smallest and largest rung of each policy, the fitted slopes, success at the top and the overflow rung."""
    rows = []
    for p in study:
        low, high = p.rungs[0], p.rungs[-1]
        success = f"{high.success:.0%}"
        if high.success_within_window != high.success:
            success += f" ({high.success_within_window:.0%} within the window)"
        overflow = "never"
        if p.overflow_rung is not None:
            overflow = f"{p.overflow_rung} charges"
            before = [r for r in p.rungs if r.charges < p.overflow_rung]
            if before:  # how close the rung below came
                overflow += f" ({before[-1].charges}: {before[-1].peak_tokens / 1000:.0f}k)"
        rows.append(
            f"| {_label(p)} | {_millions(low.input_tokens)} → {_millions(high.input_tokens)} | "
            f"{_slope(p.slopes['input_tokens'])} | {low.peak_tokens:,.0f} → {high.peak_tokens:,.0f} | "
            f"{_slope(p.slopes['peak_tokens'])} | {low.steps:,.1f} → {high.steps:,.1f} | {_slope(p.slopes['steps'])} | "
            f"{success} | {overflow} |"
        )
    return rows


def tables(study: list[scale.PolicyScale], whole_ladder: bool) -> str:
    """The doc's block: the summary table (whole ladder only), then every rung's row."""
    parts = [SUMMARY_HEADER, *summary_rows(study), ""] if whole_ladder else []
    parts += [RUNG_HEADER, *rung_rows(study)]
    return "\n".join(parts) + "\n"


def doc_block(text: str) -> str:
    """What stands between the markers of ``text`` (the doc)."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{DOC.name} lacks the markers {BEGIN!r} ... {END!r}")
    return text[start + len(BEGIN) : end].strip("\n") + "\n"


def with_block(text: str, block: str) -> str:
    """``text`` with ``block`` between its markers instead of what was there."""
    doc_block(text)  # the markers are there
    head, rest = text.split(BEGIN, 1)
    return f"{head}{BEGIN}\n\n{block}\n{END}{rest.split(END, 1)[1]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ladder = sorted({row.size for row in task_rows(TASK_SET)})
    parser.add_argument(
        "--rungs",
        default=",".join(map(str, ladder)),
        help=f"comma-separated charges (default: the whole ladder, {ladder})",
    )
    parser.add_argument("--configs", default=CONFIGS, help="presets, as erp-sim scale takes them")
    parser.add_argument("--write", action="store_true", help=f"rewrite the tables in {DOC} (whole ladder only)")
    args = parser.parse_args(argv)
    rungs = sorted({int(n) for n in args.rungs.split(",") if n.strip()})
    whole = rungs == ladder
    if args.write and (not whole or args.configs != CONFIGS):
        parser.error("--write needs the whole ladder and the default configs (the doc shows all of them)")
    before, wall = os.times(), time.perf_counter()
    study = run_study(rungs, args.configs)
    block = tables(study, whole)
    print(block, end="", flush=True)
    after = os.times()  # the episodes run in worker processes: their CPU counts as the children's
    cpu = sum(after[:4]) - sum(before[:4])
    print(
        f"{sum(r.episodes for p in study for r in p.rungs)} episodes, {cpu:.0f} s of CPU, "
        f"{time.perf_counter() - wall:.0f} s wall",
        file=sys.stderr,
    )
    if args.write:
        DOC.write_text(with_block(DOC.read_text(encoding="utf-8"), block), encoding="utf-8")
        print(f"wrote {DOC}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
