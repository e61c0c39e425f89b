"""The evaluation report: ``report.md`` and PNG plots from ``DIR/results.jsonl``.

``write_report(DIR)`` is what ``erp-sim report DIR`` (and the end of ``erp-sim eval``) calls.
All numbers come from :mod:`erp_sim.agents.evaluation.statistics`; this module only formats and draws them.
The output is a pure function of the rows: no timestamps, no absolute paths, rows put in
a canonical order, floats rounded by one set of formatters, PNGs saved without the
"Software" stamp, so re-running the report on the same results gives identical files.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from erp_sim import workflows
from erp_sim.agents.evaluation import costs as cost
from erp_sim.agents.evaluation import statistics as st
from erp_sim.agents.evaluation.attempts import latest_attempts
from erp_sim.agents.evaluation.episode_row import RESULTS_FILE, EpisodeRow, RefusedLine, infra_error_rows, load_results
from erp_sim.agents.evaluation.report.formats import plural, row_workflows, summaries_label
from erp_sim.agents.evaluation.report.learning_curve import WITHOUT, learning_curve_section
from erp_sim.agents.evaluation.report.methods import methods
from erp_sim.agents.evaluation.report.plots import (
    PEAK_TOKENS_PNG,
    SUCCESS_VS_COST_PNG,
    SUCCESS_VS_TOKENS_PNG,
    SWEEP_PNG_STEM,
    _agent_note,
    _plotted,
    plot_peak_tokens,
    plot_success_vs_cost,
    plot_success_vs_tokens,
    plot_sweep,
)
from erp_sim.agents.evaluation.report.reference import _reference, changes_vs_c2, compares_with_study, task_sets_note
from erp_sim.agents.evaluation.report.sections import (
    _caveats,
    _comparisons,
    _configurations,
    _cost,
    _deterministic_pass_k_note,
    _failures,
    _infra,
    _label_table,
    _outcomes,
    _pass_k,
    _prompt_cost,
    _sweeps,
    _terminations,
    _token_units,
)
from erp_sim.agents.evaluation.report.served_models import length_stops_note, served_models_note
from erp_sim.agents.evaluation.report.view import write_view

REPORT_FILE = "report.md"
REPORT_JSON = "report.json"
REFUSED_SHOWN = 5  # refused lines quoted in the report; the rest are counted


# ---------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------


def _sweep_png_names(count: int) -> list[str]:
    return [f"{SWEEP_PNG_STEM}.png"] if count == 1 else [f"{SWEEP_PNG_STEM}_{i}.png" for i in range(1, count + 1)]


@dataclass(frozen=True)
class ReportInputs:
    """What report.md, report.json and the plots are computed from: each folded and estimated once."""

    rows: list[EpisodeRow]  # one per episode (its last attempt), in canonical order
    folded: int  # rows of earlier attempts, left by a run stopped during --resume
    summaries: dict[str, st.ConfigSummary]
    costs: dict[str, cost.ConfigCost]  # priced when prices are given; the token figures either way
    prices: Mapping[str, cost.Price]


def report_inputs(rows: Sequence[EpisodeRow], prices: Mapping[str, cost.Price] | None = None) -> ReportInputs:
    latest = st.canonical_order(latest_attempts(rows))
    prices = prices or {}
    return ReportInputs(
        latest, len(rows) - len(latest), st.summarize(latest), cost.config_costs(latest, prices), prices
    )


def render_report(
    rows: Sequence[EpisodeRow],
    baseline: str | None = None,
    *,
    refused: Sequence[RefusedLine] = (),
    prices: Mapping[str, cost.Price] | None = None,
) -> str:
    """report.md's text for these rows (pure: no files read or written); one row per episode."""
    return _render(report_inputs(rows, prices), baseline, refused)


def _render(inputs: ReportInputs, baseline: str | None, refused: Sequence[RefusedLine]) -> str:
    rows, folded, summaries = inputs.rows, inputs.folded, inputs.summaries
    scored = st.scored_rows(rows)
    configs = list(summaries)
    infra = infra_error_rows(rows)
    scored_configs = [c for c in configs if summaries[c].n_episodes]
    curve = learning_curve_section(rows)  # a --sequential run: compared with its memoryless arm, curve last
    if curve is not None and WITHOUT in scored_configs:
        baseline = baseline or WITHOUT
    baseline = baseline or (st.default_baseline(scored_configs) if scored_configs else None)
    comparisons = st.compare_to_baseline(scored, baseline) if baseline and len(scored_configs) > 1 else []
    grids = st.sweep_grids(_plotted(summaries))

    notes = [
        f"{plural(len(scored), 'episode')} scored in {plural(len(configs), 'configuration')}; "
        f"{plural(len(infra), 'infrastructure error')} excluded from the scores (listed below)."
    ]
    if folded:
        notes.append(
            f"{plural(folded, 'row')} of `{RESULTS_FILE}` held earlier attempts of an episode (a run stopped "
            "during `--resume`); each episode counts once, as its last attempt, earlier ones listed below."
        )
    if refused:
        shown = "; ".join("`" + str(line).replace("`", "'") + "`" for line in refused[:REFUSED_SHOWN])
        more = f" and {len(refused) - REFUSED_SHOWN} more" if len(refused) > REFUSED_SHOWN else ""
        notes.append(f"{plural(len(refused), 'unreadable line')} skipped: {shown}{more}.")
    notes.append(
        "Every episode, with what the model was shown at each call, is on the run page [`view.html`](view.html) "
        "beside this file, which `erp-sim view DIR` writes (or `--view` at the end of the run)."
    )
    notes.append(
        "Brackets are 95% confidence intervals; a value without brackets has none: its interval rounds to the "
        "value at the shown precision, or none is computed for it (pass^k, Cohen's h, the prompt-caching "
        "table, a configuration of one task). See Methods at the end for every formula."
    )
    if (different := task_sets_note(scored)) is not None:
        notes.append(different)
    notes += _caveats(summaries)
    notes += [note for note in (served_models_note(rows), length_stops_note(rows)) if note]

    sections = [
        "# erp-sim evaluation report",
        " ".join(notes),
        "## Configurations",
        _configurations(summaries),
        "## Outcomes (mean [95% CI])",
        _outcomes(summaries),
        "## Cost (mean [95% CI])",
        _cost(summaries),
        f"![{summaries_label(summaries)} vs input tokens]({SUCCESS_VS_TOKENS_PNG})",
        f"![peak tokens per configuration]({PEAK_TOKENS_PNG})",
        _label_table(summaries),
        "## Prompt caching and cost",
        _prompt_cost(inputs.costs, inputs.prices, summaries_label(summaries)),
        "## Token units",
        _token_units(inputs.costs),
    ]
    if comparisons:
        sections += [
            f"## Against the baseline {baseline}",
            "Differences are configuration minus baseline, paired over the tasks both ran "
            f"(Δ {summaries_label(summaries)} in percentage points, token changes in % of the baseline).",
            _comparisons(comparisons, summaries_label(summaries)),
        ]
    sections += [
        "## pass^k",
        "Chance that k independent runs of a task all succeed, averaged over tasks (tau-bench)."
        + _deterministic_pass_k_note(summaries),
        _pass_k(scored, configs),
        "## Failure taxonomy",
        "Scored episodes by failure category.",
        _failures(scored, summaries),
        "## Termination reasons",
        _terminations(scored, summaries),
    ]
    if grids:
        sections += ["## Sensitivity to N and W", _sweeps(grids, summaries, _sweep_png_names(len(grids)))]
    if compares_with_study(summaries):
        sections += [
            "## Reference figures: the study's GPT-5 numbers",
            _reference(summaries, changes_vs_c2(scored, comparisons)),
        ]
    sections += ["## Infrastructure errors", _infra(rows), "## Methods", _methods(rows)]
    return "\n\n".join(sections) + "\n" + ("" if curve is None else "\n" + curve)


def write_plots(inputs: ReportInputs, out_dir: Path) -> list[Path]:
    """The PNGs of the report, written into ``out_dir``; stale sweep heatmaps are removed."""
    summaries, prices = _plotted(inputs.summaries), inputs.prices
    grids = st.sweep_grids(summaries)
    for stale in [*out_dir.glob(f"{SWEEP_PNG_STEM}*.png"), out_dir / SUCCESS_VS_COST_PNG]:
        stale.unlink(missing_ok=True)
    paths = [
        plot_success_vs_tokens(summaries, out_dir / SUCCESS_VS_TOKENS_PNG),
        plot_peak_tokens(summaries, out_dir / PEAK_TOKENS_PNG),
    ]
    for grid, name in zip(grids, _sweep_png_names(len(grids))):
        paths.append(plot_sweep(grid, summaries, out_dir / name))
    if prices:
        paths.append(
            plot_success_vs_cost(
                inputs.costs, out_dir / SUCCESS_VS_COST_PNG, _agent_note(summaries), summaries_label(summaries)
            )
        )
    return paths


def write_report(
    results_dir: str | Path,
    baseline: str | None = None,
    prices: Mapping[str, cost.Price] | None = None,
    *,
    view: bool = False,
) -> Path:
    """Read ``results_dir/results.jsonl``; write ``report.md``, ``report.json`` and the PNG plots beside it, and
    with ``view`` the run page ``view.html`` (else built on demand: ``erp-sim view``, which reads every
    trajectory, cost a run as much CPU as its report). ``prices`` (``costs.parse_prices``): USD per 1M tokens
    per role, for the cost figures."""
    results_dir = Path(results_dir)
    rows, refused = load_results(results_dir)
    path = results_dir / REPORT_FILE
    inputs = report_inputs(rows, prices)  # a run killed during --resume leaves an episode's attempts appended
    path.write_text(_render(inputs, baseline, refused), encoding="utf-8")
    report_json = {"cost": cost.costs_json(inputs.costs, inputs.prices)}
    (results_dir / REPORT_JSON).write_text(json.dumps(report_json, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    write_plots(inputs, results_dir)
    if view:
        write_view(results_dir, rows=inputs.rows)
    return path


def _methods(rows: list[EpisodeRow]) -> str:
    """The methods section with the grade terms of the rows' workflows."""
    names = row_workflows(row.task_set for row in rows) or list(workflows.PACKAGES)[:1]
    return methods(workflows.harness(name).grade_terms for name in names)
