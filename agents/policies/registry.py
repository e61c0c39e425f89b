"""Policy names, spec parsing and the function that builds a wrapper stack."""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from erp_sim.agents.policies.acon import AconHistory, AconObservation
from erp_sim.agents.policies.base import ContextPolicy
from erp_sim.agents.policies.ga_memory import GaMemory
from erp_sim.agents.policies.generic_agent import BudgetEviction, HeadTail, WorkingMemoryAnchor
from erp_sim.agents.policies.recency import Fifo, Full, LastN, LastNSummary
from erp_sim.agents.policies.retrieval import Retrieval
from erp_sim.agents.policies.spec import LAYER_SEPARATOR, PolicySpecError, coerce_raw, format_layer, parse_layers
from erp_sim.agents.policies.tool_clearing import ClearToolUses
from erp_sim.agents.summarizers import StructuredSummarizer, Summarizer
from erp_sim.agents.tokens import TokenCounter
from erp_sim.agents.types import Agent

POLICIES: dict[str, type[ContextPolicy]] = {
    cls.name: cls
    for cls in (
        Full,
        LastN,
        LastNSummary,
        Fifo,
        AconHistory,
        AconObservation,
        HeadTail,
        BudgetEviction,
        WorkingMemoryAnchor,
        ClearToolUses,
        GaMemory,
        Retrieval,
    )
}
#: The policies that call their summarizer, which eval gives an LLM summarizer when asked for one (a test checks
#: this against every registered policy).
SUMMARIZING_POLICIES = frozenset({"last_n_summary", "acon_history", "acon_observation"})


class LayerSpec(BaseModel):
    name: str = Field(description="Registered policy name.")
    params: dict[str, Any] = Field(default_factory=dict, description="Validated parameters, every one present.")

    @property
    def spec(self) -> str:
        return format_layer(self.name, POLICIES[self.name].Params(**self.params))


class PolicySpec(BaseModel):
    """A parsed policy stack, outermost (first to see the transcript) first."""

    layers: list[LayerSpec]

    @property
    def spec(self) -> str:
        return LAYER_SEPARATOR.join(layer.spec for layer in self.layers)

    def __str__(self) -> str:
        return self.spec


def policy_class(name: str) -> type[ContextPolicy]:
    try:
        return POLICIES[name]
    except KeyError:
        close = difflib.get_close_matches(name, POLICIES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise PolicySpecError(f"unknown policy {name!r}{hint}; known: {', '.join(POLICIES)}") from None


def parse_layer(name: str, raw: dict[str, str]) -> LayerSpec:
    cls = policy_class(name)
    fields = cls.Params.model_fields
    for key in raw:
        if key not in fields:
            known = ", ".join(fields) or "none"
            raise PolicySpecError(f"policy {name!r} has no parameter {key!r}; its parameters: {known}")
    try:
        params = cls.Params.model_validate({key: coerce_raw(cls.Params, key, value) for key, value in raw.items()})
    except PolicySpecError as exc:
        raise PolicySpecError(f"{name}: {exc}") from None
    except ValidationError as exc:
        raise PolicySpecError(f"{name}: {_describe(exc, raw)}") from None
    return LayerSpec(name=name, params=params.model_dump())


def _describe(exc: ValidationError, raw: dict[str, str]) -> str:
    """Pydantic's errors as 'param: message (got 'value')', one per problem."""
    problems = []
    for error in exc.errors():
        if not error["loc"]:
            problems.append(error["msg"])
            continue
        key = str(error["loc"][0])
        problems.append(f"{key}: {error['msg']} (got {raw.get(key, error.get('input'))!r})")
    return "; ".join(problems)


def parse_policy(spec: str | PolicySpec) -> PolicySpec:
    """Parse ``"head_tail:chars=800+last_n:n=5"``; raises ``PolicySpecError`` with the reason."""
    if isinstance(spec, PolicySpec):
        return spec
    return PolicySpec(layers=[parse_layer(name, raw) for name, raw in parse_layers(spec)])


def summarizes(policy: str) -> bool:
    """Whether a policy stack has a layer that calls the summarizer."""
    return any(layer.name in SUMMARIZING_POLICIES for layer in parse_policy(policy).layers)


def wrap(
    agent: Agent, spec: str | PolicySpec, *, summarizer: Summarizer | None = None, counter: TokenCounter | None = None
) -> ContextPolicy:
    """Wrap ``agent`` in the policies of ``spec``; the first layer is the outermost.

    ``summarizer`` serves every layer that summarizes (default: one ``StructuredSummarizer``
    shared by the stack, so everything runs offline).
    """
    parsed = parse_policy(spec)
    summarizer = summarizer if summarizer is not None else StructuredSummarizer()
    wrapped: Agent = agent
    for layer in reversed(parsed.layers):
        wrapped = POLICIES[layer.name](wrapped, layer.params, summarizer=summarizer, counter=counter)
    assert isinstance(wrapped, ContextPolicy)
    return wrapped
