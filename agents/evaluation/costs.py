"""What a configuration costs in money, with and without prompt caching, from the rows alone.

Prices come from ``--price ROLE=input,cached_input,output[,cache_write]`` (USD per 1M tokens,
one per role: agent, summarizer, user, and a sequential run's LLM consolidator); none are shipped,
since they change by model and by month. Per episode and role, with the o200k counts of
``EpisodeMetrics`` (the consolidator's: the row's ``memory.consolidator``, no cacheable prefix measured):

    without caching = input · p_input + output · p_output
    with caching    = cacheable · p_cached + (input − cacheable) · p_uncached + output · p_output

where ``cacheable`` is ``cacheable_prefix_tokens`` (``erp_sim.agents.tokens.prompt_cache``: an upper
bound of what a provider caches) and ``p_uncached`` is ``cache_write`` when given (providers
that bill writing the new suffix to the cache) and ``p_input`` otherwise. Roles without a price
are left out of the cost and named in the report. When a model service reported its counts, the
same formula over its own figures (reported input and output, ``provider_cached_tokens`` as the
cached part) is given apart: what the service would bill, in its units. Where the service also said what it
wrote to its cache (Anthropic's ``cache_creation_input_tokens``, ``provider_cache_write_tokens``), its bill is
exact instead of bounded: ``cached · p_cached + written · p_write + (input − cached − written) · p_input +
output · p_output`` (``p_write``: ``cache_write`` when given, else ``p_input``).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from erp_sim.agents.evaluation import statistics as st
from erp_sim.agents.evaluation.episode_row import EpisodeRow
from erp_sim.agents.tokens.prompt_cache import ROLES

COST_ROLES = (*ROLES, "consolidator")  # the consolidator's calls are a sequential run's, between its episodes
PRICE_FORMAT = (
    "ROLE=input,cached_input,output[,cache_write] (USD per 1M tokens; ROLE: agent, summarizer, user or consolidator)"
)
PER_TOKENS = 1_000_000


@dataclass(frozen=True)
class Price:
    """USD per 1M tokens of one role."""

    input: float
    cached_input: float
    output: float
    cache_write: float | None = None

    def __str__(self) -> str:
        parts = [self.input, self.cached_input, self.output] + (
            [self.cache_write] if self.cache_write is not None else []
        )
        return ",".join(f"{p:g}" for p in parts)


def parse_prices(values: Iterable[str] | None) -> dict[str, Price]:
    """``--price`` values by role; a ValueError with a one-line reason for anything malformed."""
    prices: dict[str, Price] = {}
    for value in values or ():
        role, sep, numbers = value.partition("=")
        role = role.strip().lower()
        if not sep or role not in COST_ROLES:
            raise ValueError(f"--price {value!r}: expected {PRICE_FORMAT}")
        if role in prices:
            raise ValueError(f"--price {value!r}: the {role} already has a price ({prices[role]})")
        try:
            parsed = [float(part) for part in numbers.split(",")]
        except ValueError:
            raise ValueError(f"--price {value!r}: prices must be numbers; expected {PRICE_FORMAT}") from None
        if len(parsed) not in (3, 4):
            raise ValueError(f"--price {value!r}: {len(parsed)} numbers given; expected {PRICE_FORMAT}")
        if not all(math.isfinite(p) and p >= 0 for p in parsed):
            raise ValueError(f"--price {value!r}: prices must be finite and not negative")
        prices[role] = Price(*parsed)
    return prices


def _consolidator(name: str) -> Callable[[EpisodeRow], Any]:
    """A figure of the row's LLM consolidator (0, or None for the cached tokens, where none ran)."""

    def figure(row: EpisodeRow) -> Any:
        use = row.memory.consolidator if row.memory is not None else None
        if use is None:
            return None if name == "provider_cached_tokens" else 0
        return getattr(use, name)

    return figure


#: Per role, the metrics (input, cached or cacheable, output) in each unit: ``o200k`` (ours, with the
#: cacheable prefix) or ``service`` (the service's reported counts, with its cached tokens; None: never reported).
RoleCounts = tuple[Callable[[EpisodeRow], float], Callable[[EpisodeRow], float | None], Callable[[EpisodeRow], float]]
ROLE_COUNTS: dict[str, dict[str, RoleCounts]] = {
    "o200k": {
        "agent": (
            lambda r: r.metrics.input_tokens,
            lambda r: r.metrics.cacheable_prefix_tokens,
            lambda r: r.metrics.output_tokens,
        ),
        "summarizer": (
            lambda r: r.metrics.summarizer_input_tokens,
            lambda r: r.metrics.summarizer_cacheable_prefix_tokens,
            lambda r: r.metrics.summarizer_output_tokens,
        ),
        "user": (
            lambda r: r.metrics.user_input_tokens,
            lambda r: r.metrics.user_cacheable_prefix_tokens,
            lambda r: r.metrics.user_output_tokens,
        ),
        "consolidator": (_consolidator("input_tokens"), lambda r: 0, _consolidator("output_tokens")),
    },
    "service": {
        "agent": (
            lambda r: r.metrics.reported_input_tokens,
            lambda r: r.metrics.provider_cached_tokens,
            lambda r: r.metrics.reported_output_tokens,
        ),
        "summarizer": (
            lambda r: r.metrics.summarizer_reported_input_tokens,
            lambda r: r.metrics.summarizer_provider_cached_tokens,
            lambda r: r.metrics.summarizer_reported_output_tokens,
        ),
        "user": (
            lambda r: r.metrics.user_reported_input_tokens,
            lambda r: r.metrics.user_provider_cached_tokens,
            lambda r: r.metrics.user_reported_output_tokens,
        ),
        "consolidator": (
            _consolidator("reported_input_tokens"),
            _consolidator("provider_cached_tokens"),
            _consolidator("reported_output_tokens"),
        ),
    },
}


#: Per role, the cache writes the service reported (None: never reported, as OpenAI's caching bills none).
CACHE_WRITES: dict[str, Callable[[EpisodeRow], int | None]] = {
    "agent": lambda r: r.metrics.provider_cache_write_tokens,
    "summarizer": lambda r: r.metrics.summarizer_provider_cache_write_tokens,
    "user": lambda r: r.metrics.user_provider_cache_write_tokens,
    "consolidator": _consolidator("provider_cache_write_tokens"),
}


def role_tokens(row: EpisodeRow, role: str, units: str = "o200k") -> tuple[float, float, float]:
    tokens_in, cached, tokens_out = ROLE_COUNTS[units][role]
    return float(tokens_in(row)), float(cached(row) or 0), float(tokens_out(row))


def reported_cached(row: EpisodeRow, role: str) -> bool:
    """Whether the service reported the role's cached tokens in this row."""
    return ROLE_COUNTS["service"][role][1](row) is not None


def episode_cost(row: EpisodeRow, prices: Mapping[str, Price], *, caching: bool, units: str = "o200k") -> float:
    """USD of one episode over the priced roles; ``units="service"``: the service's counts and cached tokens."""
    total = 0.0
    for role, price in prices.items():
        tokens_in, cacheable, tokens_out = role_tokens(row, role, units)
        written = CACHE_WRITES[role](row) if units == "service" else None
        if caching and written is not None:  # the service said what it wrote: its bill, exactly
            write_price = price.cache_write if price.cache_write is not None else price.input
            total += cacheable * price.cached_input + written * write_price
            total += (tokens_in - cacheable - written) * price.input
        elif caching:
            uncached = price.cache_write if price.cache_write is not None else price.input
            total += cacheable * price.cached_input + (tokens_in - cacheable) * uncached
        else:
            total += tokens_in * price.input
        total += tokens_out * price.output
    return total / PER_TOKENS


def cost_metric(prices: Mapping[str, Price], *, caching: bool, units: str = "o200k") -> st.Metric:
    label = f"cost per benchmark (USD, {'with' if caching else 'without'} prompt caching, {units} counts)"
    return st.Metric(
        f"cost_{'cached' if caching else 'uncached'}_{units}",
        label,
        True,
        lambda row: episode_cost(row, prices, caching=caching, units=units),
    )


@dataclass(frozen=True)
class ConfigCost:
    """One configuration's tokens, cacheable shares and (with prices) costs."""

    config: str
    input_tokens: dict[str, float]  # per role: o200k input tokens per benchmark (mean over runs)
    cacheable_share: dict[str, float]  # per role: Σ cacheable / Σ input over scored episodes (NaN: no input)
    reported_input_tokens: dict[str, float]  # per role: the service's input tokens per benchmark
    provider_cached_tokens: dict[str, float | None]  # per role: per benchmark, None when never reported
    provider_cache_write_tokens: dict[str, float | None]  # per role: per benchmark, None when never reported
    success: st.Estimate
    cost_uncached: st.Estimate | None
    cost_cached: st.Estimate | None
    cost_reported: st.Estimate | None  # the service's counts and cached tokens (None: no priced role reported any)

    @property
    def saving(self) -> float:
        """1 − cost with caching / cost without (NaN without prices or cost)."""
        if self.cost_uncached is None or self.cost_cached is None or not self.cost_uncached.mean:
            return math.nan
        return 1 - self.cost_cached.mean / self.cost_uncached.mean


def config_costs(rows: Iterable[EpisodeRow], prices: Mapping[str, Price]) -> dict[str, ConfigCost]:
    """:class:`ConfigCost` of every configuration with scored episodes, in natural order (the consolidator's
    figures only in a run that had an LLM consolidator, so other runs' report.json keeps its keys)."""
    rows = list(rows)
    roles = COST_ROLES if any(row.memory is not None and row.memory.consolidator for row in rows) else ROLES
    result = {}
    for name, group in st.by_config(rows).items():
        scored = st.scored_rows(group)
        if not scored:
            continue
        n_tasks = len({st.task_key(row) for row in group})
        inputs, shares, reported, cached, written = {}, {}, {}, {}, {}
        for role in roles:
            ours = [role_tokens(row, role) for row in scored]
            theirs = [role_tokens(row, role, "service") for row in scored]
            total_in = sum(tokens[0] for tokens in ours)
            inputs[role] = sum(tokens[0] for tokens in ours) / len(scored) * n_tasks
            shares[role] = sum(tokens[1] for tokens in ours) / total_in if total_in else math.nan
            reported[role] = sum(tokens[0] for tokens in theirs) / len(scored) * n_tasks
            cached[role] = (
                sum(tokens[1] for tokens in theirs) / len(scored) * n_tasks
                if any(reported_cached(row, role) for row in scored)
                else None
            )
            writes = [CACHE_WRITES[role](row) for row in scored]
            written[role] = (
                sum(w or 0 for w in writes) / len(scored) * n_tasks if any(w is not None for w in writes) else None
            )
        summary = st.estimate(group, st.METRIC_BY_KEY["success"])
        billed = any(reported.get(role, 0) > 0 for role in prices)
        result[name] = ConfigCost(
            config=name,
            input_tokens=inputs,
            cacheable_share=shares,
            reported_input_tokens=reported,
            provider_cached_tokens=cached,
            provider_cache_write_tokens=written,
            success=summary,
            cost_uncached=st.estimate(group, cost_metric(prices, caching=False)) if prices else None,
            cost_cached=st.estimate(group, cost_metric(prices, caching=True)) if prices else None,
            cost_reported=st.estimate(group, cost_metric(prices, caching=True, units="service")) if billed else None,
        )
    return result


def roles_used(costs: Mapping[str, ConfigCost]) -> list[str]:
    """Roles with any input tokens in these configurations, in COST_ROLES order."""
    return [role for role in COST_ROLES if any((c.input_tokens.get(role) or 0) > 0 for c in costs.values())]


def unpriced_roles(costs: Mapping[str, ConfigCost], prices: Mapping[str, Price]) -> list[str]:
    return [role for role in roles_used(costs) if role not in prices]


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _estimate_json(estimate: st.Estimate | None) -> dict[str, Any] | None:
    if estimate is None:
        return None
    return {
        "mean": _finite(estimate.mean),
        "low": _finite(estimate.low),
        "high": _finite(estimate.high),
        "method": estimate.method,
    }


def costs_json(costs: Mapping[str, ConfigCost], prices: Mapping[str, Price]) -> dict[str, Any]:
    """The cost figures as plain JSON (report.json's ``cost``): NaN becomes null."""
    return {
        "prices_usd_per_1m_tokens": {
            role: {"input": p.input, "cached_input": p.cached_input, "output": p.output, "cache_write": p.cache_write}
            for role, p in prices.items()
        },
        "unpriced_roles": unpriced_roles(costs, prices),
        "configs": {
            name: {
                "input_tokens_per_benchmark": {r: _finite(v) for r, v in c.input_tokens.items()},
                "cacheable_share": {r: _finite(v) for r, v in c.cacheable_share.items()},
                "reported_input_tokens_per_benchmark": {r: _finite(v) for r, v in c.reported_input_tokens.items()},
                "provider_cached_tokens_per_benchmark": {r: _finite(v) for r, v in c.provider_cached_tokens.items()},
                **(
                    {
                        "provider_cache_write_tokens_per_benchmark": {
                            r: _finite(v) for r, v in c.provider_cache_write_tokens.items()
                        }
                    }
                    if any(v is not None for v in c.provider_cache_write_tokens.values())
                    else {}
                ),
                "success": _estimate_json(c.success),
                "cost_per_benchmark_without_caching": _estimate_json(c.cost_uncached),
                "cost_per_benchmark_with_caching": _estimate_json(c.cost_cached),
                "cost_per_benchmark_service_counts_and_cached": _estimate_json(c.cost_reported),
                "saving_with_caching": _finite(c.saving),
            }
            for name, c in costs.items()
        },
    }


def add_price_argument(parser: argparse.ArgumentParser) -> None:
    """``--price`` of eval, sweep and report (parsed by ``costs.parse_prices``)."""
    parser.add_argument(
        "--price",
        action="append",
        metavar="ROLE=IN,CACHED,OUT[,WRITE]",
        help="USD per 1M tokens of a role (agent, summarizer, user, consolidator): input, cached input, output, "
        "optional cache write; the report adds the cost with and without prompt caching "
        "(repeatable, one per role; None: no cost figures, no prices are shipped)",
    )


def checked_prices(values: list[str] | None) -> dict[str, Price]:
    """``--price`` values by role, or a one-line exit before anything runs."""
    try:
        return parse_prices(values)
    except ValueError as error:
        raise SystemExit(f"erp-sim: {error}") from None
