"""The report's reference figures: the study's numbers beside this run's configurations of the same name,
and the changes against C2 that compare across (paired over the tasks both ran)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from erp_sim.agents.evaluation import statistics as st
from erp_sim.agents.evaluation.episode_row import EpisodeRow
from erp_sim.agents.evaluation.report.formats import DASH, fmt_count, fmt_number, fmt_percent, fmt_relative, md_table
from erp_sim.task_sets import workflow_of

#: The study's figures: Lodha et al., context management for an LLM agent itemizing hotel
#: expenses in Dynamics 365 (GPT-5 agent, GPT-4.1 user model, 50 hotel tasks x 5 runs):
#: config, setup, full itemization, mean itemized amount, tokens per benchmark (a unit the
#: study does not define), hours per benchmark.
STUDY_REFERENCE: tuple[tuple[str, str, float, float | None, int | None, float | None], ...] = (
    ("C1", "no user model", 0.080, None, None, None),
    ("C2", "full context", 0.710, None, 1_480_996, 14.56),
    ("C3", "last 5 pairs", 0.790, None, 535_274, 5.39),
    ("C4", "last 5 pairs + summary (W=3)", 0.916, 0.9964, 553_374, 5.79),
)


STUDY_ORDER = ("C2", "C3", "C4")
STUDY_WORKFLOW = "itemization"  # the workflow of the study's tasks: its figures compare with that workflow's rows only


def compares_with_study(summaries: Mapping[str, st.ConfigSummary]) -> bool:
    """Whether every configuration ran the study's workflow, so that its figures stand beside them."""
    return {workflow_of(s.task_set, fallback=True) for s in summaries.values()} == {STUDY_WORKFLOW}


def _study_change(config: str) -> float:
    tokens = {c: t for c, *_, t, _ in STUDY_REFERENCE}
    mine, base = tokens.get(config), tokens.get("C2")
    return mine / base - 1 if mine and base else math.nan


def _order_note(summaries: Mapping[str, st.ConfigSummary]) -> str:
    """Pairs of C2-C4 whose order of full itemization differs from the study's, in words."""
    study = {c: success for c, _, success, *_ in STUDY_REFERENCE}
    ours = {c: summaries[c].estimates["success"].mean for c in STUDY_ORDER if c in summaries}
    flipped = []
    for i, a in enumerate(STUDY_ORDER):
        for b in STUDY_ORDER[i + 1 :]:
            comparable = a in ours and b in ours and math.isfinite(ours[a]) and math.isfinite(ours[b])
            if comparable and ((ours[a] > ours[b]) != (study[a] > study[b]) or ours[a] == ours[b]):
                flipped.append(
                    f"{a} {fmt_number(100 * ours[a], 1)}% vs {b} {fmt_number(100 * ours[b], 1)}% "
                    f"(study: {fmt_number(100 * study[a], 1)}% vs {fmt_number(100 * study[b], 1)}%)"
                )
    if len(ours) < 2:  # one of them: no order to compare
        return ""
    if not flipped:
        return f"\n\nThe order of full itemization across {', '.join(ours)} is the study's."
    return (
        "\n\n**The order of full itemization differs from the study's**: " + "; ".join(flipped) + ". A level "
        "that matches the study (e.g. C2) does not make the others comparable."
    )


def task_sets_note(rows: Sequence[EpisodeRow]) -> str | None:
    """A warning when the configurations' scored episodes cover different tasks (None: the same tasks)."""
    tasks = {name: {st.task_key(row) for row in group} for name, group in st.by_config(rows).items()}
    if len({frozenset(keys) for keys in tasks.values()}) <= 1:
        return None
    every = set().union(*tasks.values())
    counts = ", ".join(f"{name} {len(keys)}" for name, keys in tasks.items())
    return (
        f"**The configurations ran different tasks** (of {len(every)}: {counts}). Per-benchmark figures (cost, "
        "caching, the reference table's levels) are each over the configuration's own tasks, so they compare "
        "different tasks; the changes against the baseline and against C2 are paired over the tasks both ran."
    )


def changes_vs_c2(rows: Sequence[EpisodeRow], comparisons: Sequence[st.Comparison]) -> dict[str, st.Estimate]:
    """C3's and C4's input tokens against C2's, paired over the tasks both ran (the baseline section's figure
    when C2 is the baseline): a ratio of per-benchmark totals over different task sets would compare tasks."""
    known = {c.config: c for c in comparisons if c.baseline == "C2"}
    groups = st.by_config(st.scored_rows(rows))
    changes = {}
    for config in STUDY_ORDER[1:]:
        comparison = known.get(config)
        if comparison is None and config in groups and "C2" in groups:
            comparison = st.compare(groups[config], groups["C2"])
        if comparison is not None and comparison.paired:
            changes[config] = comparison.input_tokens_change
    return changes


def _reference(summaries: Mapping[str, st.ConfigSummary], vs_c2: Mapping[str, st.Estimate]) -> str:
    rows = []
    for config, setup, success, amount, tokens, _hours in STUDY_REFERENCE:
        ours = summaries.get(config)
        study_success = fmt_number(100 * success, 1)
        if amount is not None:
            study_success += f" (amount {fmt_number(100 * amount, 2)})"
        study_change, our_change = _study_change(config), vs_c2.get(config)
        rows.append(
            (
                config,
                setup,
                study_success,
                f"{fmt_number(tokens, 0, grouped=True)}" if tokens else DASH,
                fmt_number(100 * study_change, 1, sign=True)
                if config != "C2" and math.isfinite(study_change)
                else DASH,
                f"`{ours.policy}`, {ours.agent}" if ours else DASH,
                fmt_percent(ours.estimates["success"]) if ours else DASH,
                fmt_count(ours.estimates["input_tokens_per_episode"]) if ours else DASH,
                fmt_count(ours.estimates["input_tokens"]) if ours else DASH,
                fmt_relative(our_change) if our_change is not None else DASH,
            )
        )
    headers = (
        "config",
        "study setup",
        "STUDY (GPT-5): full itemization (%)",
        "STUDY: tokens / benchmark (unit not defined)",
        "STUDY: tokens vs C2 (%)",
        "this run: policy, agent",
        "this run: full itemization (%)",
        "this run: input tokens / episode",
        "this run: input tokens / benchmark",
        "this run: input tokens vs C2 (%)",
    )
    return (
        "The study's numbers are **GPT-5 on a live D365 tenant, 50 hotel tasks x 5 runs** (Lodha et al.); "
        "they were not produced by this evaluation. Our columns are this run's configurations of the same "
        "name, whatever agent and policy they used.\n\n"
        '**Units.** The study reports "tokens per benchmark" without saying what is counted (input only or '
        "input + output, per run or over all runs, which tokenizer); its C2 figure (1,480,996) is far below "
        "what 50 full-context episodes take here, so the levels are not comparable. Ours are **input "
        "(prompt) tokens of the agent's model calls** (o200k_base counts of the messages and tool schemas "
        "shown), per episode and per benchmark (= per episode x the number of tasks, one run; the mean over "
        "runs). What is comparable is the **relative change against C2** (over the tasks both ran: "
        "Σ tokens / Σ tokens of C2 − 1, with its paired interval), which sits beside the study's.\n\n"
        + md_table(headers, rows, "llrrrlrrrr")
        + _order_note(summaries)
        + "\n\nACON (Kang et al., agent context optimization: history and observation compression on AppWorld, "
        "OfficeBench and multi-objective QA) reports peak tokens down 26-54% at equal or better accuracy; "
        'compare the "Δ peak tokens" column of the section against the baseline.'
    )
