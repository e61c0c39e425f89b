"""ACON's per-configuration figures (success, peak tokens, dependency, compressor calls and tokens)
and their cost from --price."""

from __future__ import annotations

from typing import Any


def score(episodes: list[dict[str, Any]], prices: dict[str, list[float]]) -> dict[str, Any]:
    """ACON's per-configuration figures: success, peak tokens, dependency, compressor calls/tokens, cost."""
    n = len(episodes) or 1

    def mean(key: str) -> float:
        return round(sum(e["metrics"].get(key, 0) for e in episodes) / n, 3)

    usage = {
        role: {
            key: sum(e[f"{role}_usage"][key] for e in episodes) for key in ("calls", "input_tokens", "output_tokens")
        }
        for role in ("agent", "compressor")
    }
    result = {
        "episodes": len(episodes),
        "success": round(sum(e["success"] for e in episodes) / n, 4),
        "peak_tokens": mean("peak_tokens"),
        "dependency": mean("dependency"),
        "steps": mean("model_calls"),
        "agent": usage["agent"],
        "compressor": usage["compressor"],
    }
    cost = {role: cost_usd(usage[role], prices.get(role)) for role in usage}
    priced = {role: usd for role, usd in cost.items() if usd is not None}
    result["cost_usd"] = {**priced, "total": round(sum(priced.values()), 6)} if len(priced) == len(cost) else None
    return result


def cost_usd(usage: dict[str, int], price: list[float] | None) -> float | None:
    if price is None:
        return None
    return round((usage["input_tokens"] * price[0] + usage["output_tokens"] * price[1]) / 1e6, 6)
