"""The report's number and table formats: every float in ``report.md`` goes through one of these."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from erp_sim import workflows
from erp_sim.agents.evaluation import statistics as st
from erp_sim.task_sets import workflow_of

DASH = "–"


def _clean(value: float, digits: int) -> float:
    """Rounded, without a negative zero ("-0.0" would differ from "0.0" by noise alone)."""
    value = round(value, digits)
    return 0.0 if value == 0 else value


def fmt_number(value: float, digits: int = 1, *, sign: bool = False, grouped: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return DASH
    spec = f"{'+' if sign else ''}{',' if grouped else ''}.{digits}f"
    return format(_clean(value, digits), spec)


def fmt_sci(value: float, *, sign: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return DASH
    return format(value, "+.2e" if sign else ".2e")


def _with_interval(est: st.Estimate, fmt, scale: float = 1.0) -> str:
    point = fmt(est.mean * scale)
    if point == DASH or not est.has_interval:
        return point
    low, high = fmt(est.low * scale), fmt(est.high * scale)
    if low == point == high:  # no spread at the shown precision: brackets would only add noise
        return point
    return f"{point} [{low}, {high}]"


def fmt_percent(est: st.Estimate, digits: int = 1) -> str:
    return _with_interval(est, lambda v: fmt_number(v, digits), 100)


def fmt_count(est: st.Estimate) -> str:
    return _with_interval(est, lambda v: fmt_number(v, 0, grouped=True))


def fmt_decimal(est: st.Estimate) -> str:
    return _with_interval(est, lambda v: fmt_number(v, 1))


def fmt_dependency(est: st.Estimate) -> str:
    return _with_interval(est, fmt_sci)


def _time_unit(seconds: float) -> tuple[str, float, int]:
    if seconds >= 7200:
        return "h", 3600.0, 2
    if seconds >= 120:
        return "min", 60.0, 1
    return "s", 1.0, 2


def fmt_duration(est: st.Estimate) -> str:
    """Seconds, minutes or hours (as the study's "14.56 h"), one unit per cell."""
    if not math.isfinite(est.mean):
        return DASH
    unit, divisor, digits = _time_unit(est.mean)
    return _with_interval(est, lambda v: fmt_number(v, digits), 1 / divisor) + f" {unit}"


def fmt_pp(est: st.Estimate) -> str:
    return _with_interval(est, lambda v: fmt_number(v, 1, sign=True), 100)


def fmt_relative(est: st.Estimate) -> str:
    if not math.isfinite(est.mean):
        return DASH
    return _with_interval(est, lambda v: fmt_number(v, 1, sign=True), 100)


def fmt_p(value: float, floor: float | None = None) -> str:
    """A p-value; at the floor of a resampling test, the bound, not a false exact value."""
    if not math.isfinite(value):
        return DASH
    if floor is not None and value <= floor * (1 + 1e-9):
        return f"≤ 2/(R+1) = {fmt_number(floor, 4)}"
    return "< 0.0001" if value < 0.0001 else fmt_number(value, 4)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def md_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], align: str | None = None) -> str:
    """A GitHub Markdown table; ``align`` holds one of l/r per column (default: first left, rest right)."""
    align = align or "l" + "r" * (len(headers) - 1)
    rule = ["---" if a == "l" else "---:" for a in align]
    lines = ["| " + " | ".join(_cell(h) for h in headers) + " |", "|" + "|".join(rule) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def fmt_usd(est: st.Estimate | None) -> str:
    if est is None:
        return DASH
    digits = 2 if est.mean >= 1 else 4
    return _with_interval(est, lambda v: fmt_number(v, digits, grouped=True))


def _share(value: float) -> str:
    return fmt_number(100 * value, 1) if math.isfinite(value) else DASH


def row_workflows(task_sets: Iterable[str]) -> list[str]:
    """The workflows of rows of these task sets, in registration order (a set no workflow owns: the first)."""
    names = {workflow_of(task_set, fallback=True) for task_set in task_sets}
    return [name for name in workflows.PACKAGES if name in names]


def success_label(task_sets: Iterable[str]) -> str:
    """What the rows' workflow calls success (``HarnessFace.labels``: "full itemization", "reconciled"), for the
    report's and the eval table's headings; rows of several workflows (or none): "success"."""
    names = row_workflows(task_sets)
    return workflows.harness(names[0]).labels.get("success", "success") if len(names) == 1 else "success"


def summaries_label(summaries: Mapping[str, st.ConfigSummary]) -> str:
    """``success_label`` of the configurations' task sets."""
    return success_label(summary.task_set for summary in summaries.values())
