"""What acon optimize reports, in Markdown, from the report's JSON (``optimize.build_report``): each round's
guideline and scores, and the chosen one."""

from __future__ import annotations

import json
from typing import Any

NO_COMPRESSION = "none"  # the label of the round without compression


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
