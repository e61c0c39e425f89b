"""The report's PNG plots: fixed colours and short labels per configuration, saved without a
"Software" stamp so the same rows give identical files.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from erp_sim.agents.evaluation import costs as cost
from erp_sim.agents.evaluation import statistics as st
from erp_sim.agents.evaluation.report.formats import summaries_label

if TYPE_CHECKING:
    from matplotlib.typing import ColorType, RcKeyType

SUCCESS_VS_TOKENS_PNG = "success_vs_tokens.png"
PEAK_TOKENS_PNG = "peak_tokens.png"
SUCCESS_VS_COST_PNG = "success_vs_cost.png"
SWEEP_PNG_STEM = "sweep_heatmap"

#: The matplotlib settings of every plot of a run (the report's and scale's).
PLOT_STYLE: dict[RcKeyType, Any] = {
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
}


@cache
def matplotlib_module() -> ModuleType:
    """matplotlib with the parts the plots draw with (figure, lines, ticker, transforms, style), imported on first
    use: every eval worker imports the report package (its formats), and its start-up need not load matplotlib
    (about 0.3 s; tests/test_startup.py). The plots draw on ``Figure`` objects, never through pyplot."""
    import matplotlib.figure
    import matplotlib.lines
    import matplotlib.style
    import matplotlib.ticker
    import matplotlib.transforms

    return matplotlib


def _errors(est: st.Estimate, scale: float = 1.0) -> tuple[float, float]:
    """Asymmetric error bar lengths; zero where there is no interval."""
    if not est.has_interval:
        return 0.0, 0.0
    return max(0.0, (est.mean - est.low) * scale), max(0.0, (est.high - est.mean) * scale)


def save_png(fig, path: Path) -> None:
    """Save ``fig`` as a PNG without the "Software" stamp (the matplotlib version); PNG carries no date, so the
    same figure gives the same bytes."""
    fig.savefig(path, format="png", metadata={"Software": None})


#: Fixed colours: the presets always get the same ones; any other configuration a colour picked
#: from its name (sha256), so one configuration has one colour in every report.
_PRESET_COLORS = {"C1": "#7f7f7f", "C2": "#1f77b4", "C3": "#ff7f0e", "C4": "#2ca02c"}
_PALETTE = (
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
    "#17becf",
    "#393b79",
    "#637939",
    "#8c6d31",
    "#843c39",
    "#7b4173",
    "#3182bd",
    "#e6550d",
    "#31a354",
    "#756bb1",
    "#636363",
)
SHORT_LABEL_CHARS = 8


def config_color(name: str) -> str:
    if name.upper() in _PRESET_COLORS:
        return _PRESET_COLORS[name.upper()]
    return _PALETTE[int(hashlib.sha256(name.encode()).hexdigest(), 16) % len(_PALETTE)]


def _colors(names: Sequence[str]) -> list[str]:
    return [config_color(name) for name in names]


def short_labels(names: Sequence[str]) -> dict[str, str]:
    """Names up to 8 characters stay; longer ones (policy specs) become P1, P2, ... in order."""
    labels, number = {}, 0
    for name in names:
        if len(name) <= SHORT_LABEL_CHARS:
            labels[name] = name
        else:
            number += 1
            labels[name] = f"P{number}"
    return labels


def is_scripted(agent: str) -> bool:
    return agent.split(":", 1)[0] == "scripted"


def _plotted(summaries: Mapping[str, st.ConfigSummary]) -> dict[str, st.ConfigSummary]:
    """Configurations with at least one scored episode: the only ones a plot can show."""
    return {name: s for name, s in summaries.items() if s.n_episodes}


def _agent_note(summaries: Mapping[str, st.ConfigSummary]) -> str:
    """A second title line on every figure made from the scripted agent ("" otherwise)."""
    agents = sorted({s.agent for s in summaries.values()})
    scripted = [a for a in agents if is_scripted(a)]
    if not scripted:
        return ""
    if len(scripted) == len(agents):
        return "\nagent: scripted (not an LLM)"
    return "\nagents: " + ", ".join(f"{a} (not an LLM)" if is_scripted(a) else a for a in agents)


def _bar(errors: tuple[float, float]) -> list[list[float]] | None:
    """An error bar, or None where there is no spread (no zero-width bar drawn as a stray tick)."""
    return [[errors[0]], [errors[1]]] if errors[0] + errors[1] > 0 else None


_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")


def plot_success_vs_tokens(summaries: Mapping[str, st.ConfigSummary], path: Path) -> Path:
    """Full itemization vs input tokens per benchmark: the study's trade-off, one point per config.

    Configurations of an N x W sweep are drawn colour-by-N and marker-by-W without text
    labels (a dozen names on one cloud of points is unreadable); the others are named.
    """
    mpl = matplotlib_module()
    points = {name: s for name, s in summaries.items() if math.isfinite(s.estimates["success"].mean)}
    labels = short_labels(list(points))
    in_sweep = {config: (grid, n, w) for grid in st.sweep_grids(points) for (n, w), config in grid.cells.items()}
    sweep_n = sorted({n for _, n, _ in in_sweep.values()})
    sweep_w = sorted({w for _, _, w in in_sweep.values()})
    named = [name for name in points if name not in in_sweep]
    n_colors = {n: mpl.colormaps["viridis"](0.05 + 0.8 * i / max(1, len(sweep_n) - 1)) for i, n in enumerate(sweep_n)}

    with mpl.style.context("default"), mpl.rc_context(PLOT_STYLE):
        fig = mpl.figure.Figure(figsize=(7.5, 4.8), layout="constrained")
        ax = fig.add_subplot()
        handles = []
        for name, summary in points.items():
            tokens, success = summary.estimates["input_tokens"], summary.estimates["success"]
            x, y = (tokens.mean if math.isfinite(tokens.mean) else 0.0), 100 * success.mean
            style: dict[str, Any] = {"markersize": 6}
            color: ColorType
            if name in in_sweep:
                # hollow markers, larger for earlier W: sweep points that coincide stay visible as nested shapes
                _, n, w = in_sweep[name]
                index = sweep_w.index(w)
                color, marker = n_colors[n], _MARKERS[index % len(_MARKERS)]
                style = {
                    "markersize": 6 + 4 * (len(sweep_w) - 1 - index),
                    "markerfacecolor": "none",
                    "markeredgewidth": 1.3,
                }
            else:
                color, marker = config_color(name), "o"
            ax.errorbar(
                x,
                y,
                xerr=_bar(_errors(tokens)),
                yerr=_bar(_errors(success, 100)),
                fmt=marker,
                color=color,
                ecolor=color,
                elinewidth=1.1,
                capsize=3,
                alpha=0.9,
                **style,
            )
            if name not in in_sweep:
                handles.append(mpl.lines.Line2D([], [], color=color, marker="o", linestyle="", label=labels[name]))
        if in_sweep:
            families = sorted({grid.family for grid, _, _ in in_sweep.values()})
            handles.append(mpl.lines.Line2D([], [], linestyle="", label="sweep: " + "; ".join(families)))
            handles += [
                mpl.lines.Line2D([], [], color=n_colors[n], marker="s", linestyle="", label=f"N={n}") for n in sweep_n
            ]
            handles += [
                mpl.lines.Line2D(
                    [],
                    [],
                    color="0.3",
                    marker=_MARKERS[i % len(_MARKERS)],
                    markerfacecolor="none",
                    linestyle="",
                    label=f"W={w}",
                )
                for i, w in enumerate(sweep_w)
            ]
        ax.set_xlabel("input tokens per benchmark (mean over runs)")
        ax.set_ylabel(f"{summaries_label(summaries)} (%)")
        # one text per spot: configurations at the same point share it ("C2 = P2"); neighbours alternate
        # above and below so that their labels do not print over each other
        spots: dict[tuple[float, float], list[str]] = {}
        for name in named:
            tokens, success = points[name].estimates["input_tokens"], points[name].estimates["success"]
            spot = (round(tokens.mean if math.isfinite(tokens.mean) else 0.0, 0), round(100 * success.mean, 6))
            spots.setdefault(spot, []).append(name)
        for number, (spot, names) in enumerate(sorted(spots.items())):
            ax.annotate(
                " = ".join(labels[n] for n in names),
                spot,
                xytext=(6, 5 if number % 2 == 0 else -12),
                textcoords="offset points",
                fontsize=8,
                color=config_color(names[0]),
            )
        ax.set_title(
            f"{summaries_label(summaries).capitalize()} vs input tokens (error bars: 95% CI)" + _agent_note(points)
        )
        ax.xaxis.set_major_formatter(mpl.ticker.EngFormatter(sep=""))
        ax.set_ylim(-3, 103)
        ax.set_xlim(left=0)
        ax.margins(x=0.1)
        if handles:
            ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=7, frameon=False)
        save_png(fig, path)
    return path


def plot_success_vs_cost(
    costs: Mapping[str, cost.ConfigCost], path: Path, note: str = "", success: str = "full itemization"
) -> Path:
    """``success`` (the workflow's word: ``formats.success_label``) vs USD per benchmark with prompt caching, one point per configuration; a hollow
    marker at the cost without caching and a dashed arrow from it to the filled one show what caching saves
    (an arrow with a head, never a plain line, so it cannot be read as the error bars, which have caps)."""
    mpl = matplotlib_module()
    points = {n: c for n, c in costs.items() if c.cost_cached is not None and math.isfinite(c.success.mean)}
    labels = short_labels(list(points))
    with mpl.style.context("default"), mpl.rc_context(PLOT_STYLE):
        fig = mpl.figure.Figure(figsize=(7.5, 4.8), layout="constrained")
        ax = fig.add_subplot()
        above = mpl.transforms.offset_copy(ax.transData, fig=fig, y=7, units="points")
        for name, c in points.items():
            assert c.cost_cached is not None  # points keeps the priced configurations only
            color, y = config_color(name), 100 * c.success.mean
            x, x_plain = c.cost_cached.mean, c.cost_uncached.mean if c.cost_uncached is not None else math.nan
            if math.isfinite(x_plain):
                ax.plot([x_plain], [y], marker="o", markerfacecolor="none", color=color, markersize=7)
                if x_plain > x:
                    ax.annotate(  # 7 points above the markers: apart from the filled point's horizontal CI
                        "",
                        xy=(x, y),
                        xytext=(x_plain, y),
                        xycoords=above,
                        textcoords=above,
                        arrowprops={
                            "arrowstyle": "-|>",
                            "linestyle": (0, (4, 3)),
                            "color": color,
                            "alpha": 0.55,
                            "linewidth": 0.9,
                            "shrinkA": 5,
                            "shrinkB": 6,
                            "mutation_scale": 11,
                        },
                    )
            ax.errorbar(
                x,
                y,
                xerr=_bar(_errors(c.cost_cached)),
                yerr=_bar(_errors(c.success, 100)),
                fmt="o",
                color=color,
                ecolor=color,
                elinewidth=1.1,
                capsize=3,
                markersize=6,
            )
            ax.annotate(
                labels[name], (x, y), xytext=(6, -13), textcoords="offset points", fontsize=8, color=color
            )  # below: the arrow is above
        ax.set_xlabel("USD per benchmark")
        ax.set_ylabel(f"{success} (%)")
        ax.legend(
            handles=[
                mpl.lines.Line2D(
                    [], [], marker="o", markerfacecolor="none", color="gray", linestyle="none", label="without caching"
                ),
                mpl.lines.Line2D([], [], marker="o", color="gray", linestyle="none", label="with prompt caching"),
                mpl.lines.Line2D(
                    [], [], color="gray", linestyle=(0, (4, 3)), marker="<", markevery=[0], label="what caching saves"
                ),
                mpl.lines.Line2D([], [], color="gray", marker="|", markersize=9, label="95% CI (with caching)"),
            ],
            fontsize=8,
            loc="best",
        )
        ax.set_title(f"{success.capitalize()} vs cost with prompt caching (error bars: 95% CI)" + note)
        ax.set_ylim(-9, 104)  # room for the labels below the points
        ax.set_xlim(left=0)
        ax.margins(x=0.1)
        save_png(fig, path)
    return path


def plot_peak_tokens(summaries: Mapping[str, st.ConfigSummary], path: Path) -> Path:
    """Mean peak tokens per episode by configuration, with 95% CI error bars."""
    mpl = matplotlib_module()
    configs = list(summaries.values())
    with mpl.style.context("default"), mpl.rc_context(PLOT_STYLE):
        fig = mpl.figure.Figure(figsize=(7, max(2.4, 0.8 + 0.38 * len(configs))), layout="constrained")
        ax = fig.add_subplot()
        ys = list(range(len(configs)))[::-1]  # first configuration on top
        means = [s.estimates["peak_tokens"].mean for s in configs]
        means = [m if math.isfinite(m) else 0.0 for m in means]
        errors = [_errors(s.estimates["peak_tokens"]) for s in configs]
        ax.barh(ys, means, color=_colors([s.config for s in configs]), height=0.6)
        spread = [(y, m, e) for y, m, e in zip(ys, means, errors) if e[0] + e[1] > 0]
        if spread:  # no bar-end tick where runs agree exactly
            ax.errorbar(
                [m for _, m, _ in spread],
                [y for y, _, _ in spread],
                xerr=[[e[0] for *_, e in spread], [e[1] for *_, e in spread]],
                fmt="none",
                ecolor="0.25",
                elinewidth=1,
                capsize=3,
            )
        for y, mean, error in zip(ys, means, errors):
            ax.annotate(
                f"{mean:,.0f}", (mean + error[1], y), xytext=(4, 0), textcoords="offset points", va="center", fontsize=8
            )
        labels = short_labels([s.config for s in configs])
        ax.set_yticks(ys, [labels[s.config] for s in configs])
        ax.set_xlabel("peak tokens per episode (largest single model input), mean over runs")
        ax.set_title("Peak context size by configuration (95% CI)" + _agent_note(summaries))
        ax.xaxis.set_major_formatter(mpl.ticker.EngFormatter(sep=""))
        ax.grid(axis="y", visible=False)
        ax.margins(x=0.15)
        ax.set_ylim(-0.6, len(configs) - 0.4)
        save_png(fig, path)
    return path


def plot_sweep(grid: st.SweepGrid, summaries: Mapping[str, st.ConfigSummary], path: Path) -> Path:
    """N x W heatmaps of full itemization and input tokens per benchmark for one sweep."""
    mpl = matplotlib_module()
    panels = (
        ("success", f"{summaries_label(summaries)} (%)", "viridis", 100.0, (0.0, 100.0), lambda v: f"{v:.1f}"),
        (
            "input_tokens",
            "input tokens per benchmark",
            "magma_r",
            1.0,
            None,
            lambda v: mpl.ticker.EngFormatter(places=1, sep="")(v),
        ),
    )
    width = 1.3 + 1.1 * len(grid.w_values)
    with mpl.style.context("default"), mpl.rc_context({**PLOT_STYLE, "axes.grid": False}):
        fig = mpl.figure.Figure(figsize=(2 * width + 1.2, 1.6 + 0.55 * len(grid.n_values)), layout="constrained")
        axes = fig.subplots(1, 2)
        for ax, (metric, label, cmap, scale, limits, text) in zip(axes, panels):
            values = grid.matrix(summaries, metric) * scale
            masked = np.ma.masked_invalid(values)
            vmin, vmax = limits if limits else (np.nanmin(values), np.nanmax(values))
            image = ax.imshow(
                masked, cmap=mpl.colormaps[cmap].with_extremes(bad="0.9"), vmin=vmin, vmax=vmax, aspect="auto"
            )
            for i in range(values.shape[0]):
                for j in range(values.shape[1]):
                    if not math.isfinite(values[i, j]):
                        ax.text(j, i, "n/a", ha="center", va="center", fontsize=8, color="0.4")
                        continue
                    r, g, b, _ = image.cmap(image.norm(values[i, j]))
                    dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
                    ax.text(
                        j,
                        i,
                        text(values[i, j]),
                        ha="center",
                        va="center",
                        fontsize=8,
                        color="white" if dark else "black",
                    )
            ax.set_xticks(range(len(grid.w_values)), [str(w) for w in grid.w_values])
            ax.set_yticks(range(len(grid.n_values)), [str(n) for n in grid.n_values])
            ax.set_xlabel("W (summary window)")
            ax.set_ylabel("N (pairs kept)")
            ax.set_title(label)
            colorbar = fig.colorbar(image, ax=ax, shrink=0.9)
            if metric == "input_tokens":
                colorbar.formatter = mpl.ticker.EngFormatter(sep="")
                colorbar.update_ticks()
        fig.suptitle(
            f"Sensitivity to N and W: {grid.family} on {grid.task_set}"
            + _agent_note({c: summaries[c] for c in grid.cells.values()}),
            fontsize=10,
        )
        save_png(fig, path)
    return path
