"""The context-policy wrapper: an Agent around an Agent that edits what the inner one sees.

Like a Gymnasium wrapper, a policy passes everything through to the agent it wraps and
overrides one method, ``build_context(messages) -> messages``. ``act`` applies it, calls the
inner agent with the result and adds the summarizer calls and tokens spent while building
it to the returned ``AgentStep``. Policies stack: ``str(policy)`` shows the whole stack,
outermost first, and ``policy.spec`` is its spec string (see ``erp_sim.agents.policies.spec``).

Rules every policy keeps (tested on random transcripts):
- the system prompt and the first user instruction are passed on verbatim (the one
  sanctioned change: ``acon_history`` appends its summary block to a COPY of the first
  user message, so the original text stays a prefix of it);
- units (see ``units``) are kept or dropped whole, so no tool result loses its call and no
  call loses its result;
- input messages are never mutated; edited messages are new dicts.

Each policy also says which prefixes of the context it built it will send again unchanged
(``stable_prefixes``, message counts; the default: the system messages), which the inner agent
gets with the context (``stable_prefix.PolicyContext``) and a backend with prompt-cache
breakpoints (Anthropic's Messages API) marks. A policy that knows how many leading messages of its context are,
unchanged, those of its last one (``kept_prefix``; the default: none) says so with it, which the agent, the
recorder and the prompt-cache figure trust to skip what they read before.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from erp_sim.agents.models.stable_prefix import PolicyContext, within
from erp_sim.agents.policies.claims import layout
from erp_sim.agents.policies.spec import format_layer
from erp_sim.agents.policies.units import IncrementalSplit, Split
from erp_sim.agents.summarizers import StructuredSummarizer, Summarizer, SummaryResult
from erp_sim.agents.tokens import TokenCounter, get_counter, message_text
from erp_sim.agents.types import Agent, AgentStep, Message, ToolSchema, Usage, unchanged_prefix


class PolicyParams(BaseModel):
    """Base of every policy's parameters: immutable, unknown names rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)


_NO_USAGE = Usage()  # a step's summarizer usage before any summary (never changed: ``+`` makes a new one)


class ContextPolicy:
    """Base of all context policies. Subclasses set ``name`` and ``Params``, override ``build_context``.

    Stateful policies (running summaries, eviction points) keep per-episode state on the
    instance and override ``reset_state``; ``reset`` clears it and resets the inner agent.
    """

    name: ClassVar[str] = ""
    Params: ClassVar[type[PolicyParams]] = PolicyParams

    def __init__(
        self,
        agent: Agent,
        params: PolicyParams | dict[str, Any] | None = None,
        *,
        summarizer: Summarizer | None = None,
        counter: TokenCounter | None = None,
        **param_values: Any,
    ):
        self.agent = agent
        if isinstance(params, PolicyParams):
            params = params.model_dump()
        self.params = self.Params.model_validate({**(params or {}), **param_values})
        self.summarizer: Summarizer = summarizer if summarizer is not None else StructuredSummarizer()
        self.counter = counter if counter is not None else get_counter()
        self._summary_usage = Usage()
        self._summary_calls = 0
        self._splitter = IncrementalSplit()
        self._offered: PolicyContext | None = None  # the last context handed on, for the cache it may have written
        self._received: list[Message] | None = None  # the list that context was built from, and its length then
        self._received_length = 0
        self.reset_state()

    # -- the one method a policy overrides -------------------------------------------------
    def build_context(self, messages: list[Message]) -> list[Message]:
        return list(messages)

    def reset_state(self) -> None:
        """Forget per-episode state. Stateless policies have none."""

    def stable_prefixes(self, context: list[Message]) -> list[int]:
        """Lengths of the prefixes of ``context`` (just built) that the next request will start with, if
        this policy's input grows by appending (``claims``). The default claims the system messages only."""
        return [layout(context).system]

    def kept_prefix(self, context: list[Message], received: int) -> int:
        """How many leading messages of ``context`` (just built) are the very objects of the last context at the
        same positions, none changed since, given that the first ``received`` messages of this call's input are
        those of the last call's, unchanged. It must hold (the agent trusts it); the default claims none."""
        return 0

    # -- Agent protocol ---------------------------------------------------------------------
    def reset(self) -> None:
        self.reset_state()
        self._offered, self._received = None, None
        self.agent.reset()

    def act(self, transcript: list[Message], tools: list[ToolSchema]) -> AgentStep:
        self._summary_usage, self._summary_calls = _NO_USAGE, 0
        received = unchanged_prefix(transcript, self._received, self._received_length)
        context = self.build_context(transcript)
        claims = PolicyContext(
            context,
            lambda: within(self.stable_prefixes(context), context, transcript),
            self._offered,
            self.kept_prefix(context, received) if self._offered is not None else 0,
        )
        self._offered, self._received, self._received_length = claims, transcript, len(transcript)
        step = self.agent.act(claims, tools)
        if self._summary_usage is _NO_USAGE and not self._summary_calls:  # no summary made: nothing to add
            return step
        return step.model_copy(
            update={
                "summarizer_usage": step.summarizer_usage + self._summary_usage,
                "summarizer_calls": step.summarizer_calls + self._summary_calls,
            }
        )

    # -- helpers for subclasses -------------------------------------------------------------
    def record_summary(self, result: SummaryResult) -> str:
        """Count a summarizer call towards this step and return its text."""
        self._summary_usage = self._summary_usage + result.usage
        self._summary_calls += result.calls
        return result.text

    def split_transcript(self, messages: list[Message]) -> Split:
        """``units.split_transcript``, re-splitting only what is new since the last step."""
        return self._splitter(messages)

    def task_text(self, instruction: Message | None) -> str:
        """The task as summarizers get it: the text of the first user message."""
        return message_text(instruction.get("content")) if instruction else ""

    # -- description ------------------------------------------------------------------------
    @property
    def layer_spec(self) -> str:
        return format_layer(self.name, self.params)

    @property
    def spec(self) -> str:
        """Spec string of this layer and every policy layer inside it."""
        inner = self.agent.spec if isinstance(self.agent, ContextPolicy) else None
        return f"{self.layer_spec}+{inner}" if inner else self.layer_spec

    @property
    def unwrapped(self) -> Agent:
        """The innermost agent, under every policy layer."""
        agent = self.agent
        while isinstance(agent, ContextPolicy):
            agent = agent.agent
        return agent

    def __str__(self) -> str:
        params = ",".join(f"{k}={v!r}" for k, v in self.params.model_dump().items())
        inner = str(self.agent) if isinstance(self.agent, ContextPolicy) else f"<{type(self.agent).__name__}>"
        return f"<{type(self).__name__}({params}){inner}>"

    __repr__ = __str__
