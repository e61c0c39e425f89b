"""Summarizers for context policies: an LLM one (prompts in ``agents/prompts``) and a
deterministic structured one, so every policy also runs offline.

Both offer the two operations ACON needs:
- ``summarize_history(task, messages, previous)``: fold ``messages`` (and the previous
  summary, if any) into a summary with the sections task, key variables, completed,
  to-do, guardrails;
- ``refine_observation(task, observation, history)``: rewrite one long tool response,
  with the task and recent history as context.

Both take an optional ``guideline``: the compressor's whole instruction in place of the
prompt file (ACON's optimisable compression guideline; ``acon_history:guideline=FILE``).
Policies pass it only when one is set, so summarizers without the keyword still work.

Each returns a ``SummaryResult`` with the text, the tokens it cost and the number of calls,
so the metrics can count summarizer spending apart from the agent's. An empty summary or
a failed call raises ``SummarizerError``: callers must not cache or show anything then.
(An ``InfrastructureError`` or a ``ModelRequestError`` from the model service passes through,
its message starting "summarizer: ", so the runner can tell an outage, an unscored row, from a
refused request, a scored failure named as the summarizer's, and both from a bad summary. A model
answer with no text, empty or a refusal, is a ``ModelRequestError`` too: the model's doing.)
"""

from __future__ import annotations

from collections import OrderedDict
from functools import cache
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field

from erp_sim.agents.facts import (
    Facts,
    copy_facts,
    facts_from_messages,
    observe_messages,
    render_observation,
    render_summary,
)
from erp_sim.agents.models.roles import failures_named, no_text
from erp_sim.agents.tokens import message_text
from erp_sim.agents.tokens.prompt_cache import record_call
from erp_sim.agents.types import ChatModel, InfrastructureError, Message, ModelRequestError, Usage

PROMPTS_DIR = Path(__file__).parent / "prompts"
HISTORY_PROMPT = "summarize_history.md"
OBSERVATION_PROMPT = "refine_observation.md"


class SummarizerError(RuntimeError):
    """A summary could not be produced (empty answer, or the summarizer failed)."""


class SummaryResult(BaseModel):
    text: str = Field(description="The summary or refined observation.")
    usage: Usage = Field(
        default_factory=Usage, description="Tokens as the summarizer's service reported them (0 offline)."
    )
    calls: int = Field(1, ge=0, description="Summarizer invocations this result took.")


@runtime_checkable
class Summarizer(Protocol):
    def summarize_history(
        self, task: str, messages: list[Message], previous: str | None = None, *, guideline: str | None = None
    ) -> SummaryResult: ...

    def refine_observation(
        self, task: str, observation: Message, history: list[Message], *, guideline: str | None = None
    ) -> SummaryResult: ...


def checked(result: SummaryResult, what: str) -> SummaryResult:
    if not result.text or not result.text.strip():
        raise SummarizerError(f"{what}: the summarizer returned an empty text")
    return result


@cache
def load_prompt(name: str) -> str:
    return (PROMPTS_DIR / name).read_text(encoding="utf-8")


def render_transcript(messages: list[Message]) -> str:
    """Messages as readable text for a summarizer prompt: one block per message."""
    blocks = []
    for message in messages:
        role = message.get("role", "?")
        text = message_text(message.get("content"))
        if role == "assistant":
            if text:
                blocks.append(f"[assistant] {text}")
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                blocks.append(f"[assistant calls {function.get('name', '?')}] {function.get('arguments', '')}")
        elif role == "tool":
            blocks.append(f"[result of {message.get('name') or message.get('tool_call_id', '?')}] {text}")
        else:
            blocks.append(f"[{role}] {text}")
    return "\n\n".join(blocks)


class LLMSummarizer:
    """Summaries written by any ``ChatModel``, with the prompts kept as files."""

    def __init__(
        self, model: ChatModel, *, history_prompt: str = HISTORY_PROMPT, observation_prompt: str = OBSERVATION_PROMPT
    ):
        self.model = model
        self.history_prompt = load_prompt(history_prompt)
        self.observation_prompt = load_prompt(observation_prompt)

    def summarize_history(
        self, task: str, messages: list[Message], previous: str | None = None, *, guideline: str | None = None
    ) -> SummaryResult:
        parts = [f"# Task\n{task}"]
        if previous:
            parts.append(f"# Previous summary\n{previous}")
        parts.append(f"# Steps to fold in\n{render_transcript(messages)}")
        return self._ask(guideline or self.history_prompt, "\n\n".join(parts), "history summary")

    def refine_observation(
        self, task: str, observation: Message, history: list[Message], *, guideline: str | None = None
    ) -> SummaryResult:
        parts = [
            f"# Task\n{task}",
            f"# Recent steps\n{render_transcript(history) or '(none)'}",
            f"# Response to rewrite\n{message_text(observation.get('content'))}",
        ]
        return self._ask(guideline or self.observation_prompt, "\n\n".join(parts), "refined observation")

    def _ask(self, system: str, user: str, what: str) -> SummaryResult:
        request = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        try:
            with failures_named("summarizer"):
                response = self.model.complete(request, None)
        except (InfrastructureError, ModelRequestError):  # an outage, or a refused request: the runner tells them apart
            raise
        except Exception as exc:  # any other failure of the model is a failed summary
            raise SummarizerError(f"{what}: the summarizer model failed: {exc}") from exc
        record_call("summarizer", request, None, response)  # o200k counts and the cacheable prefix, per episode
        text = message_text(response.message.get("content")).strip()
        if not text:  # the model's answer, not a harness bug: a scored failure named as the summarizer's
            raise ModelRequestError(f"summarizer: {what}: {no_text(response.message)}")
        return checked(SummaryResult(text=text, usage=response.usage, calls=1), what)


class StructuredSummarizer:
    """Deterministic summaries from the facts in D365-shaped tool responses; no model, 0 tokens.

    To continue a running summary it remembers the facts behind each summary it wrote
    (bounded), keyed by the summary text; a ``previous`` summary it did not write (say, an
    LLM's) is carried over verbatim as an "Earlier summary" section.
    """

    def __init__(self, memo_size: int = 256):
        self.memo_size = memo_size
        self._facts_by_summary: OrderedDict[str, Facts] = OrderedDict()

    def summarize_history(
        self, task: str, messages: list[Message], previous: str | None = None, *, guideline: str | None = None
    ) -> SummaryResult:
        """``guideline`` is accepted and ignored: these summaries come from parsed facts, not prose rules."""
        known = self._facts_by_summary.get(previous) if previous else None
        if known is not None:
            facts = copy_facts(known)
            observe_messages(facts, messages)
        else:
            facts = facts_from_messages(messages, task)
        text = render_summary(task, facts)
        if previous and known is None:
            text = f"## Earlier summary\n{previous.strip()}\n\n{text}"
        self._remember(text, facts)
        return checked(SummaryResult(text=text, calls=1), "history summary")

    def refine_observation(
        self, task: str, observation: Message, history: list[Message], *, guideline: str | None = None
    ) -> SummaryResult:
        text = render_observation(message_text(observation.get("content")))
        return checked(SummaryResult(text=text, calls=1), "refined observation")

    def _remember(self, text: str, facts: Facts) -> None:
        self._facts_by_summary[text] = facts
        self._facts_by_summary.move_to_end(text)
        while len(self._facts_by_summary) > self.memo_size:
            self._facts_by_summary.popitem(last=False)
