"""What acon optimize reports: each round's guideline and scores, the chosen one, as JSON and Markdown."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from erp_sim.agents.acon.scoring import cost_usd
from erp_sim.agents.tokens import get_counter

if TYPE_CHECKING:  # optimize imports this module
    from erp_sim.agents.acon.optimize import Run


NO_COMPRESSION = "none"  # the label of the round without compression


def build_report(run: Run, rounds: list[tuple[str, str, str]], chosen: str) -> dict[str, Any]:
    """rounds: (round name, label, optimizer-usage prefix)."""
    rows = []
    for name, label, prefix in [("no compression", NO_COMPRESSION, ""), *rounds]:
        row = {
            "round": name,
            "label": label,
            "policy": run.policy_spec(label, relative=True),
            "train": run.score(label, "train"),
            "test": run.score(label, "test") if run.test else None,
            "optimizer": run.optimizer_usage(prefix) if prefix else None,
            "guideline_tokens": {k: get_counter().count_text(t) for k, t in run.guideline(label).items()}
            if label != NO_COMPRESSION
            else None,
        }
        rows.append(row)
    optimizer = run.optimizer_usage("")
    return {
        "settings": run.settings.model_dump(mode="json", exclude={"initial_guideline"}),
        # each role's sampling params as sent ({}: the server's defaults); a replay reads them from its cassette
        "sampling": {
            role: dict(getattr(log.inner, "sampling_params", {}) or {}) for role, log in sorted(run.roles.items())
        },
        "train_tasks": run.train,
        "test_tasks": run.test,
        "rounds": rows,
        "chosen": chosen,
        "chosen_guidelines": {kind: f"guidelines/chosen-{kind}.md" for kind in run.kinds},
        "optimizer_total": {**optimizer, "cost_usd": cost_usd(optimizer, run.settings.prices.get("optimizer"))},
    }


def report_markdown(report: dict[str, Any]) -> str:
    lines = [
        "# ACON guideline optimisation",
        "",
        f"Agent `{report['settings']['agent']}`, compressor `{report['settings']['compressor']}`, optimizer "
        f"`{report['settings']['optimizer']}`; compression: {report['settings']['compression']}; train "
        f"`{report['settings']['tasks']}` ({len(report['train_tasks'])} tasks), test `{report['settings']['test_tasks']}` "
        f"({len(report['test_tasks'])} tasks). Chosen guideline: **{report['chosen']}**.",
        "",
        "Sampling params sent: "
        + "; ".join(
            f"{role} {json.dumps(params, sort_keys=True) if params else 'none (server defaults)'}"
            for role, params in report.get("sampling", {}).items()
        )
        + ".",
        "",
        "| round | guideline | split | success | peak tokens | dependency | steps | compressor calls | "
        "compressor tokens | agent tokens | cost (USD) |",
        "|" + "---|" * 11,
    ]
    for row in report["rounds"]:
        for split in ("train", "test"):
            s = row[split]
            if s is None:
                continue
            cost = "n/a" if s["cost_usd"] is None else f"{s['cost_usd']['total']:.4f}"
            lines.append(
                f"| {row['round']} | {row['label']} | {split} | {s['success']:.1%} | {s['peak_tokens']:,.0f} | "
                f"{s['dependency'] / 1e6:,.2f}M | {s['steps']:.1f} | {s['compressor']['calls']} | "
                f"{s['compressor']['input_tokens'] + s['compressor']['output_tokens']:,} | "
                f"{s['agent']['input_tokens'] + s['agent']['output_tokens']:,} | {cost} |"
            )
    lines += [
        "",
        "Optimizer per round (calls, input + output tokens): "
        + "; ".join(
            f"{row['round']}: {row['optimizer']['calls']} calls, {row['optimizer']['input_tokens'] + row['optimizer']['output_tokens']:,} tokens"
            for row in report["rounds"]
            if row["optimizer"]
        ),
        "",
        "Peak tokens: the largest context the agent was shown in an episode (mean over episodes). Dependency: "
        "ACON's sum over steps of (input + 2 x output) x output / 2 tokens, mean per episode. Compressor and agent "
        "tokens: totals over the split as the servers reported them. Cost: from --price; n/a without one.",
        "",
    ]
    return "\n".join(lines)
