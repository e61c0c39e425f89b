"""What one episode leaves behind: the transcript, what the model was shown, costs, the grade.

Deterministic fields (everything but ``timing``) are byte-identical across reruns of a
deterministic agent; wall-clock figures live in ``timing`` only, so results files can be
compared with ``diff`` after dropping one key. ``erp-sim eval`` writes one trajectory per
episode to ``OUT/trajectories/CONFIG/TASK-runR.json.gz`` (gzip of this model's JSON).

The visible context (``Trajectory.context``): what the model was shown at every model call,
after every context policy, stored compactly::

    "context": {
      "messages": [{...}, {...}, ...],  # each distinct message once per episode (OpenAI chat dicts),
                                        # in the order the model first saw them
      "origins":  ["transcript", ...],  # one per message, see below
      "steps":    [[0, 1], [0, 1, 2, 3], ...],  # per model call k: indices into messages, in the
                                                # order shown (step k's input = messages[i] for i in steps[k])
      "tokens":   [812, 95, ...]    # one per message: its o200k_base count (the formula of erp_sim.agents.tokens)
    }

Origins say where a shown message came from:

- ``transcript``: a message of the full transcript, passed on unchanged;
- ``rewritten``: a transcript message changed by a policy (a tool result refined by
  ``acon_observation``, cut by ``head_tail``, cleared by tool clearing; an assistant message
  with the same tool calls but other text);
- ``summary``: a message carrying a summary of dropped history (C4's folded steps, ACON's
  history block appended to a copy of the instruction);
- ``inserted``: any other message a policy added (e.g. GenericAgent's memory anchor).

Step k's output is the k-th assistant message of ``messages`` (the transcript), and its
token counts are ``steps[k]`` of ``Trajectory.steps``. ``erp-sim show`` prints all of it.

What the LLM summarizer was sent and answered (``Trajectory.role_contexts["summarizer"]``) is
stored the same way, by the same recorder (``RoleRecorder``): each distinct message once, and
per summarizer call k its request as ``steps[k]``; the answers are messages too. Origins there are
``request`` or ``answer``. Each ``StepRecord.role_calls`` entry of the summarizer points into it
(``ModelCall.request``: its index in ``steps``; ``ModelCall.answer``: its answer's in ``messages``).
Offline summaries (the structured summarizer) make no model call: the key is absent then.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, ValidationInfo, field_validator

from erp_sim import task_sets, workflows
from erp_sim.agents.tokens import TokenCounter, get_counter, next_none, same_prefix
from erp_sim.agents.tokens.prompt_cache import ModelCall
from erp_sim.agents.types import Message, SealedMessage, ToolSchema, unchanged_prefix, unset
from erp_sim.outcomes import FailureCategory, Termination

ORIGINS = ("transcript", "rewritten", "summary", "inserted")


def _known_failure(category: str) -> str:
    known = workflows.failure_categories()
    if category not in known:
        raise ValueError(f"unknown failure category {category[:80]!r}; known: {', '.join(known)}")
    return category


#: A failure category a trajectory or a results row may hold: a generic one or a registered workflow's.
KnownFailure = Annotated[FailureCategory, AfterValidator(_known_failure)]
SUMMARY_MARKERS = ("<EARLIER_STEPS_SUMMARY>", "<HISTORY_SUMMARY>")  # the tags summarizing policies write


class VisibleContext(BaseModel):
    """What the model was shown at each call; the format is in the module docstring."""

    messages: list[Message] = Field(default_factory=list, description="Each distinct shown message, once.")
    origins: list[str] = Field(default_factory=list, description="Per message: " + ", ".join(ORIGINS) + ".")
    steps: list[list[int]] = Field(default_factory=list, description="Per model call, indices into messages.")
    tokens: list[int] = Field(
        default_factory=list,
        description="Per message: its o200k_base token count, so readers (the run page) need not tokenize again.",
    )

    def shown(self, step: int) -> list[Message]:
        """The messages model call ``step`` was shown, in order."""
        return [self.messages[i] for i in self.steps[step]]


class ContextRecorder:
    """Builds a ``VisibleContext`` step by step, storing each distinct message once.

    Messages are looked up by identity first (transcript messages are the same objects every
    step, and policies never mutate them), then by value: two messages can be equal (their
    canonical JSON) only if their role, text and call ids are (``_text_key``, which hashes a text
    once), so ``value_key`` (equal exactly when the canonical JSON is, without writing the JSON) is
    built only for a message whose ``_text_key`` some stored or transcript message already has.
    """

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self.context = VisibleContext()
        self._counter = counter or get_counter()
        self._by_id: dict[int, int] = {}
        self._by_text: dict[Hashable, list[int]] = {}  # _text_key -> indices of the stored messages with it
        self._value_of: dict[int, Hashable] = {}  # id -> value key, so no kept message is keyed twice
        self._kept: list[Message] = []  # holds every looked-up object, so no id() is reused
        self._transcript: list[Message] = []
        self._transcript_ids: set[int] = set()
        # what only a message that is not a transcript object needs (its origin), brought up to date then:
        # the _text_keys and tool-call ids of self._transcript[: self._scanned]
        self._transcript_texts: dict[Hashable, list[Message]] = {}
        self._transcript_tool_call_ids: set[str] = set()
        self._scanned = 0
        self._last_shown: list[Message] = []  # a copy of the last call's list (kept up to date in place)
        self._last_source: list[Message] | None = None  # that list itself (what its sender vouches for)
        self._last_indices: list[int] = []

    def record(self, shown: list[Message], transcript: list[Message]) -> None:
        new = transcript[len(self._transcript) :]
        if new:
            self._transcript += new
            self._transcript_ids.update(map(id, new))
        # the leading objects of the last call's list keep their indices (an object's index never changes): what
        # its sender vouches is unchanged is not compared; the other messages seen before are looked up by
        # identity in C, and only the rest go through _index
        last = self._last_shown
        vouched = unchanged_prefix(shown, self._last_source, len(last))
        known = vouched if vouched == min(len(shown), len(last)) else same_prefix(shown, last)
        indices: list[Any] = self._last_indices[:known]
        later = shown[known:]
        indices += map(self._by_id.get, map(id, later))
        position = next_none(indices, known)
        while position is not None:
            indices[position] = self._index(shown[position])
            position = next_none(indices, position + 1)
        self.context.steps.append(indices)  # every None was filled
        del last[vouched:]  # a copy (the caller may reuse its list): the very objects up to there
        last += later if vouched == known else shown[vouched:]
        self._last_source, self._last_indices = shown, indices

    def _index(self, message: Message) -> int:
        index = self._by_id.get(id(message))
        if index is not None:
            return index
        text = _text_key(message)
        same_text = self._by_text.get(text)
        if same_text is not None:  # an equal message may be stored: compared by value
            key = self._value(message)
            messages = self.context.messages
            index = next((i for i in same_text if self._value(messages[i]) == key), None)
        if index is None:
            index = len(self.context.messages)
            self.context.messages.append(message)
            self.context.origins.append(self._origin(message, text))
            self.context.tokens.append(self._counter.count_message(message))
            self._by_text.setdefault(text, []).append(index)
        self._by_id[id(message)] = index
        self._kept.append(message)
        return index

    def _value(self, message: Message) -> Hashable:
        key = self._value_of.get(id(message))
        if key is None:
            key = self._value_of[id(message)] = value_key(message)
            self._kept.append(message)
        return key

    def _origin(self, message: Message, text: Hashable) -> str:
        if id(message) in self._transcript_ids:
            return "transcript"
        for earlier in self._transcript[self._scanned :]:
            self._transcript_texts.setdefault(_text_key(earlier), []).append(earlier)
            self._transcript_tool_call_ids.update(_call_ids(earlier))
        self._scanned = len(self._transcript)
        same_text = self._transcript_texts.get(text)
        if same_text is not None:  # a copy equal to a transcript message is one too
            key = self._value(message)
            if any(self._value(earlier) == key for earlier in same_text):
                return "transcript"
        content = message.get("content")
        text_content = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        if any(marker in (text_content or "") for marker in SUMMARY_MARKERS):
            return "summary"
        if _call_ids(message) & self._transcript_tool_call_ids:
            return "rewritten"
        return "inserted"


#: The roles other than the agent whose requests and answers a trajectory keeps (``Trajectory.role_contexts``).
KEPT_ROLES = ("summarizer",)
REQUEST_ORIGINS = ("request", "answer")


class RoleRecorder(ContextRecorder):
    """One role's model calls as a ``VisibleContext``: ``steps[k]`` is call k's request, and each answer is
    stored as one more message; every distinct message once, as ``ContextRecorder`` stores the agent's (the
    summarizer's instruction, the same at every call, is stored once). Origins: request or answer."""

    def __init__(self, counter: TokenCounter | None = None) -> None:
        super().__init__(counter)
        self._answering = False

    def record_call(self, request: list[Message], answer: Message) -> tuple[int, int]:
        """Store a call; (its index in ``steps``, its answer's index in ``messages``)."""
        self.record(request, [])
        self._answering = True
        try:
            return len(self.context.steps) - 1, self._index(answer)
        finally:
            self._answering = False

    def _origin(self, message: Message, text: Hashable) -> str:
        return REQUEST_ORIGINS[self._answering]


class RoleRequests:
    """The kept roles' recorders for one episode; ``keep`` is the meter's hook (``EpisodeMeter(keep=...)``),
    which points each of their ``ModelCall`` entries at its request and answer."""

    def __init__(self, counter: TokenCounter | None = None, roles: tuple[str, ...] = KEPT_ROLES) -> None:
        self._counter = counter
        self._roles = roles
        self._recorders: dict[str, RoleRecorder] = {}

    def keep(self, call: ModelCall, request: list[Message], answer: Message) -> None:
        if call.role not in self._roles:
            return
        recorder = self._recorders.get(call.role)
        if recorder is None:
            recorder = self._recorders[call.role] = RoleRecorder(self._counter)
        call.request, call.answer = recorder.record_call(request, answer)

    def contexts(self) -> dict[str, VisibleContext]:
        return {role: recorder.context for role, recorder in self._recorders.items()}


def _text_key(message: Message) -> Hashable:
    """A message's role, text content, tool-call id it answers and first call's id (None where one is not a
    str): equal for any two messages whose canonical JSON is equal, cheap (a text's hash is computed once, by
    the str), and apart for the messages of a transcript (an assistant's calls come with an empty text, and
    call ids are new at every step)."""
    get = message.get
    role, content, answered, calls = get("role"), get("content"), get("tool_call_id"), get("tool_calls")
    made = None
    if calls and isinstance(calls, (list, tuple)) and isinstance(calls[0], dict):
        made = calls[0].get("id")
    return (
        role if type(role) is str else None,
        content if type(content) is str else None,
        answered if type(answered) is str else None,
        made if type(made) is str else None,
    )


def _canonical(message: Message) -> str:
    return json.dumps(message, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


_DICT, _LIST, _INT, _FLOAT, _BOOL, _OTHER = range(6)  # tags of value_key's tuples (a bare str or None is itself)


def value_key(value: Any) -> Hashable:
    """A hashable stand-in for ``_canonical(value)``: two values made of JSON's own types (dicts
    with str keys, lists or tuples, str, int, float, bool, None) get equal keys exactly when their
    canonical JSON texts are equal, but nothing is serialised (a long tool result is not escaped
    again: the key holds the string itself). Anything else is keyed by its canonical JSON."""
    kind = type(value)
    if kind is str or value is None:
        return value
    if kind is dict or kind is SealedMessage:
        if set(map(type, value)) <= _STR:  # every name a str (checked in C)
            if set(map(type, value.values())) <= _LEAVES:  # every item its own key: the tuple is built in C
                return (_DICT, tuple(sorted(value.items())))
            return (_DICT, tuple([(name, value_key(item)) for name, item in sorted(value.items())]))
    elif kind is list or kind is tuple:
        return (_LIST, tuple(value) if set(map(type, value)) <= _LEAVES else tuple(map(value_key, value)))
    elif kind is bool:
        return (_BOOL, value)
    elif kind is int:
        return (_INT, value)
    elif kind is float:
        return (_FLOAT, repr(value))  # as JSON writes it (1.0 and 1 differ there)
    return (_OTHER, _canonical(value))


_STR, _LEAVES = {str}, {str, type(None)}  # a str or None is its own value_key


def _call_ids(message: Message) -> set[str]:
    """The tool-call ids a message answers (tool result) or makes (assistant)."""
    if message.get("role") == "tool":
        return {message.get("tool_call_id") or ""}
    return {call.get("id") or "" for call in message.get("tool_calls") or []}


class StepRecord(BaseModel):
    """One model call."""

    index: int = Field(description="0-based model call number.")
    shown_messages: int = Field(description="Messages the model was shown.")
    input_tokens: int = Field(description="Tokens of what the model was shown (messages + tool schemas).")
    output_tokens: int = Field(description="Tokens of the assistant message it produced.")
    reported_input_tokens: int = Field(0, description="Input tokens the model service reported (0 offline).")
    reported_output_tokens: int = Field(0, description="Output tokens the model service reported (0 offline).")
    cacheable_prefix_tokens: int = Field(
        0,
        description="o200k tokens of this request's longest prefix identical to an "
        "earlier request of the agent (erp_sim.agents.tokens.prompt_cache).",
    )
    provider_cached_tokens: int | None = Field(
        None, description="Cached prompt tokens the model service reported (None: not reported, e.g. offline)."
    )
    provider_cache_write_tokens: int | None = Field(
        None,
        exclude_if=unset,
        description="Prompt tokens the service says it wrote to its cache (the Messages API's "
        "cache_creation_input_tokens; absent: not reported).",
    )
    reasoning_tokens: int | None = Field(
        None, exclude_if=unset, description="Output tokens the service says went to reasoning (absent: not reported)."
    )
    summarizer_calls: int = Field(0)
    summarizer_tokens: int = Field(0, description="o200k tokens (input + output) of the summarizer's model calls.")
    tool_calls: int = Field(0, description="Tool calls in the assistant message.")
    role_calls: list[ModelCall] = Field(
        default_factory=list,
        description="Model calls of other roles in this step: the "
        "summarizer's (building this context) and the LLM user's (answering this step).",
    )
    # stored only where a service said them, so an offline trajectory has neither
    finish_reason: str | None = Field(
        None,
        exclude_if=unset,
        description="Why the agent's model stopped, as the service said ('length': its answer was cut at the "
        "token limit). Absent: not said (offline, or a service that does not report it).",
    )
    served_model: str | None = Field(
        None, exclude_if=unset, description="The model the service says answered (absent: not said, or offline)."
    )


class EpisodeMetrics(BaseModel):
    """Per-episode costs and counts (wall time is in ``Trajectory.timing``).

    Token figures are input (prompt) and output tokens of the agent's own model calls;
    summarizer calls inside context policies and an LLM user's calls are counted apart
    (``summarizer_*``, ``user_*``). Two units, never mixed in one field: ``*_tokens`` are o200k
    counts of ours (comparable across models and offline), ``*reported*`` and
    ``*provider_cached_tokens`` are what the model service reported.
    """

    steps: int = Field(0, description="Environment steps (tool calls + messages to the user).")
    model_calls: int = Field(0, description="Agent model calls.")
    tool_calls: int = 0
    invalid_actions: int = Field(
        0, description="Actions the env could not parse (not JSON, unknown tool, bad arguments)."
    )
    tool_errors: int = Field(0, description="Well-formed tool calls the ERP answered with an error.")
    user_turns: int = 0
    input_tokens: int = Field(0, description="Input tokens summed over model calls.")
    output_tokens: int = 0
    peak_tokens: int = Field(0, description="The largest single model input.")
    dependency: float = Field(0.0, description="ACON: sum over calls of (n_in + 2 n_out) * n_out / 2.")
    reported_input_tokens: int = Field(
        0, description="Agent input tokens as the model service reported them (0 offline)."
    )
    reported_output_tokens: int = Field(0, description="Agent output tokens as the model service reported them.")
    cacheable_prefix_tokens: int = Field(
        0,
        description="o200k input tokens a provider could serve from its prompt "
        "cache (erp_sim.agents.tokens.prompt_cache); share = this / input_tokens.",
    )
    provider_cached_tokens: int | None = Field(
        None, description="Cached agent input tokens as the service reported them (None: never reported)."
    )
    provider_cache_write_tokens: int | None = Field(
        None,
        exclude_if=unset,
        description="Agent input tokens the service says it wrote to its cache, billed at the cache-write price "
        "(the Messages API; absent: never reported).",
    )
    reasoning_tokens: int | None = Field(
        None, exclude_if=unset, description="Agent output tokens the service says went to reasoning (absent: never)."
    )
    summarizer_calls: int = 0
    summarizer_tokens: int = Field(0, description="o200k tokens (input + output) of the summarizer's model calls.")
    summarizer_input_tokens: int = Field(0, description="o200k.")
    summarizer_output_tokens: int = Field(0, description="o200k.")
    summarizer_cacheable_prefix_tokens: int = Field(0, description="o200k.")
    summarizer_reported_input_tokens: int = Field(0, description="As the summarizer's service reported them.")
    summarizer_reported_output_tokens: int = Field(0, description="As the summarizer's service reported them.")
    summarizer_provider_cached_tokens: int | None = Field(
        None, description="As the service reported them (None: never)."
    )
    summarizer_provider_cache_write_tokens: int | None = Field(
        None, exclude_if=unset, description="As the summarizer's service reported them (absent: never)."
    )
    user_model_calls: int = Field(0, description="Calls of an LLM user's model (0 for the rule-based user).")
    user_input_tokens: int = Field(0, description="o200k input tokens of the LLM user's calls.")
    user_output_tokens: int = Field(0, description="o200k output tokens of the LLM user's calls.")
    user_cacheable_prefix_tokens: int = Field(0, description="o200k.")
    user_reported_input_tokens: int = Field(0, description="As the LLM user's service reported them.")
    user_reported_output_tokens: int = Field(0, description="As the LLM user's service reported them.")
    user_provider_cached_tokens: int | None = Field(None, description="As the service reported them (None: never).")
    user_provider_cache_write_tokens: int | None = Field(
        None, exclude_if=unset, description="As the LLM user's service reported them (absent: never)."
    )
    length_stops: int | None = Field(
        None,
        exclude_if=unset,
        description="Agent answers the service cut at their token limit (finish_reason 'length'). Absent: no "
        "answer said why it stopped (offline).",
    )
    summarizer_length_stops: int | None = Field(
        None, exclude_if=unset, description="The summarizer's answers cut at their token limit (absent: none said)."
    )
    user_length_stops: int | None = Field(
        None, exclude_if=unset, description="The LLM user's answers cut at their token limit (absent: none said)."
    )
    refused_request_tokens: int | None = Field(
        None,
        exclude_if=unset,
        description="The size (o200k, messages + tool schemas) of the agent's request that ended the episode as "
        "context_overflow, never sent or refused by the server, so not in peak_tokens. Absent: no such request.",
    )


class Trajectory(BaseModel):
    task_id: str
    task_set: str
    seed: int | None = None
    policy: str = Field("full", description="Context policy spec the agent ran with.")
    messages: list[Message] = Field(default_factory=list, description="The full transcript, OpenAI chat format.")
    tools: list[ToolSchema] = Field(default_factory=list)
    context: VisibleContext = Field(
        default_factory=VisibleContext, description="What the model was shown at each call (see the module docstring)."
    )
    steps: list[StepRecord] = Field(default_factory=list)
    role_contexts: dict[str, VisibleContext] = Field(
        default_factory=dict,
        exclude_if=lambda contexts: not contexts,
        description="Per kept role (KEPT_ROLES: the LLM summarizer), what its model calls were sent and answered, "
        "stored as ``context`` is (see the module docstring); absent when the role made no model call (offline).",
    )
    metrics: EpisodeMetrics = Field(default_factory=EpisodeMetrics)
    grade: Any = Field(
        None,
        description="The ERP's grade at the end, the task set's workflow's grade model (erp_sim.Grade for "
        "itemization; stored as its JSON dump); None without a grade source.",
    )
    termination: Termination | Literal[""] = Field(
        "", description="How the episode ended (erp_sim.outcomes); empty until the runner sets it."
    )
    failure_category: KnownFailure | None = None
    infra_error: str | None = Field(
        None, description="Why the episode is not scored (infra_error, harness_error); resume runs it again."
    )
    model_error: str | None = Field(
        None, description="The refusal that ended the episode (model_error, context_overflow)."
    )
    timing: dict[str, float] = Field(default_factory=dict, description="Wall-clock figures; not deterministic.")

    @field_validator("grade", mode="before")
    @classmethod
    def _workflow_grade(cls, value: Any, info: ValidationInfo) -> Any:
        """A grade's JSON (a remote grade, a trajectory file) as its workflow's grade model."""
        if value is None or isinstance(value, BaseModel):
            return value
        return grade_model(info.data.get("task_set", "")).model_validate(value)

    def deterministic_dump(self) -> dict:
        return self.model_dump(mode="json", exclude={"timing"})

    def served_models(self) -> dict[str, list[str]] | None:
        """Each role's models as the services named them in their answers, in order of first answer (None:
        no answer named one, as offline): what served a run, beside the settings that asked for a model."""
        named: dict[str, dict[str, None]] = {}
        for step in self.steps:
            if step.served_model:
                named.setdefault("agent", {})[step.served_model] = None
            for call in step.role_calls:
                if call.served_model:
                    named.setdefault(call.role, {})[call.served_model] = None
        return {role: list(names) for role, names in named.items()} or None

    def finetuning_record(self) -> dict:
        """The ``{"messages", "tools"}`` shape used by chat fine-tuning APIs."""
        return {"messages": self.messages, "tools": self.tools}


def grade_model(task_set: str) -> type[BaseModel]:
    """The grade model of a task set's workflow (``erp_sim.Grade`` for itemization)."""
    return workflows.load(task_sets.workflow_of(task_set, fallback=True)).grader.model


def write_finetuning_jsonl(trajectories: list[Trajectory], path: str | Path) -> None:
    with Path(path).open("w", encoding="utf-8") as out:
        for trajectory in trajectories:
            out.write(json.dumps(trajectory.finetuning_record(), ensure_ascii=False) + "\n")
