"""Record model calls to a cassette, and replay them offline.

A cassette is a JSONL file, one line per model call, in call order::

    {"step": 0, "key": "<sha256>", "request": {"messages": [...], "tools": [...], "params": {...}},
     "response": {"message": {...}, "usage": {...}, "model": "..."}}

The key is the sha256 of the canonical request: messages, tools and sampling params as
JSON with sorted keys, no whitespace and None-valued fields dropped. The model name is not
in it, so a cassette answers for whichever model configuration asks the same question.
Replay serves a recorded response for the same key; identical requests asked again are
served in the order they were recorded. In strict mode an unknown request is an error
that says at which step, and at which message, the run left the recorded path.

Since the model name is not in a cassette, a recording keeps each role's model and settings
beside its cassettes in ``models.json`` (``erp_sim.agents.models.roles``); ``erp-sim eval``
records each role of an episode (agent, LLM user, summarizer, consolidator) in a cassette
of its own.
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from erp_sim.agents.types import ChatModel, ChatResponse, InfrastructureError, Message, ToolSchema

EXCERPT_CHARS = 80


class CassetteMissError(InfrastructureError, LookupError):
    """Replay was asked a request that the cassette does not hold (or holds no more of).

    An infrastructure error to the runner: the replay failed, not the agent, so the episode is
    recorded unscored with this message and the run goes on (``--resume`` tries it again).
    """


class CassetteUnreadableError(InfrastructureError):
    """A cassette line that replay cannot use: cut short, not a JSON object, without its step, key
    or request, or a recorded response that does not validate. The message names the file and line.

    Raised at the first call of the replay that reads it, so, like a miss, it fails only its episode
    (unscored; ``--resume`` tries it again) and the run goes on. Not a ValueError: callers that take a
    ValueError for a bad answer (the memory consolidator's gate) must not take a broken cassette for one.
    """


def canonical_request(
    messages: list[Message], tools: list[ToolSchema] | None = None, params: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The request as the cassette stores and hashes it: plain JSON, no None-valued fields."""
    return {
        "messages": _without_none(list(messages)),
        "tools": _without_none(list(tools or [])),
        "params": _without_none(dict(params or {})),
    }


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(
    messages: list[Message], tools: list[ToolSchema] | None = None, params: Mapping[str, Any] | None = None
) -> str:
    """sha256 (hex) of the canonical request."""
    return hashlib.sha256(canonical_json(canonical_request(messages, tools, params)).encode()).hexdigest()


def read_cassette(path: str | Path) -> list[dict[str, Any]]:
    """The recorded calls, in file order (a missing file: none); ``CassetteUnreadableError`` names
    the first line that is not a whole call."""
    path = Path(path)
    if not path.exists():
        return []
    records = []
    with path.open("rb") as lines:  # bytes: a line cut inside a UTF-8 character is that line's problem
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                problem: str | None = f"not JSON, cut short? ({error.msg} at character {error.pos})"
            except UnicodeDecodeError:
                problem = "not UTF-8 text, cut short?"
            except (ValueError, RecursionError) as error:  # an integer of 5,000 digits, nesting too deep
                problem = "nested too deeply" if isinstance(error, RecursionError) else f"not readable ({error})"[:200]
            else:
                problem = _line_problem(record)
            if problem:
                raise CassetteUnreadableError(f"cassette unreadable: {path}: line {number}: {problem}")
            records.append(record)
    return records


def _line_problem(record: Any) -> str | None:
    """What keeps a parsed cassette line from being a recorded call (None: nothing)."""
    if not isinstance(record, dict):
        return f"a JSON {type(record).__name__}, not an object"
    if not isinstance(record.get("step"), int) or isinstance(record["step"], bool):
        return 'no "step" (an integer)'
    if not isinstance(record.get("key"), str):
        return 'no "key" (a string)'
    request = record.get("request")
    shapes = (("messages", list), ("tools", list), ("params", dict))
    if not isinstance(request, dict) or not all(isinstance(request.get(k), kind) for k, kind in shapes):
        return 'no "request" with its messages, tools and params'
    try:
        ChatResponse.model_validate(record.get("response"))
    except ValidationError as error:
        where = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'response'}: {e['msg']}" for e in error.errors()[:3])
        return f"its response does not validate ({where})"
    return None


class RecordingModel:
    """Wraps a ``ChatModel`` and appends each call it answers to a cassette.

    Sampling params come from ``params`` or else from ``inner.recorded_params`` (as
    ``OpenAIChatModel`` exposes them: its sampling params and client-side switches). An existing cassette is appended to, its step
    numbers continued, so a replay of the whole file sees steps in file order. Failed calls
    are not recorded. One cassette per episode keeps steps meaningful under concurrency.
    """

    def __init__(self, inner: ChatModel, path: str | Path, params: Mapping[str, Any] | None = None):
        self.inner = inner
        self.path = Path(path)
        recorded = getattr(inner, "recorded_params", None) or getattr(inner, "sampling_params", {})
        self.sampling_params: dict[str, Any] = dict(params if params is not None else recorded)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._next_step = len(read_cassette(self.path))
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RecordingModel({self.inner!r}, {str(self.path)!r})"

    def complete(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> ChatResponse:
        response = self.inner.complete(messages, tools)
        self._append(messages, tools, response)
        return response

    async def acomplete(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> ChatResponse:
        response = await self.inner.acomplete(messages, tools)
        self._append(messages, tools, response)
        return response

    def _append(self, messages: list[Message], tools: list[ToolSchema] | None, response: ChatResponse) -> None:
        request = canonical_request(messages, tools, self.sampling_params)
        with self._lock:
            record = {
                "step": self._next_step,
                "key": request_key(messages, tools, self.sampling_params),
                "request": request,
                "response": response.model_dump(mode="json"),
            }
            with self.path.open("a", encoding="utf-8") as cassette:
                cassette.write(json.dumps(record, ensure_ascii=False) + "\n")
            self._next_step += 1


class ReplayModel:
    """A ``ChatModel`` that answers from a cassette, offline.

    ``params`` must match the recorded sampling params; by default they are taken from the
    cassette (which must then use one set throughout). With ``strict=False`` a request not
    in the cassette gets the response recorded at the same step, if that one is unused:
    for replaying a run through harmless prompt edits. ``unserved`` counts recorded calls
    not yet replayed, so a test can check a replay used the whole cassette. A missing file
    is an empty cassette: its first request is a miss that names the file, so in an evaluation
    only that episode fails (unscored), not the run; so does a cassette with a line that is not a
    whole recorded call (``CassetteUnreadableError``, naming the file and line, at the first call).
    ``settings`` (the recording's manifest entry for this role) gives the params and is what a
    replayed row reports as the model's settings.
    """

    def __init__(
        self, path: str | Path, strict: bool = True, params: Mapping[str, Any] | None = None, settings: Any = None
    ):
        self.path = Path(path)
        self.strict = strict
        try:
            self.records = read_cassette(self.path)
            self.unreadable: str | None = None
        except CassetteUnreadableError as error:  # raised at the first call: only this episode fails
            self.records, self.unreadable = [], str(error)
        self.settings = settings  # the recorded model and settings (roles.ModelSettings), reported as this model's
        if params is None and settings is not None:
            params = settings.params
        self.sampling_params: dict[str, Any] = dict(params) if params is not None else self._recorded_params()
        self.step = 0
        self._served = [False] * len(self.records)
        self._unserved_by_key: dict[str, deque[int]] = {}
        self._index_by_step: dict[int, int] = {}
        for index, record in enumerate(self.records):
            self._unserved_by_key.setdefault(record["key"], deque()).append(index)
            self._index_by_step.setdefault(record["step"], index)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ReplayModel({str(self.path)!r}, strict={self.strict})"

    @property
    def unserved(self) -> int:
        return self._served.count(False)

    def complete(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> ChatResponse:
        if self.unreadable:
            raise CassetteUnreadableError(self.unreadable)
        key = request_key(messages, tools, self.sampling_params)
        with self._lock:
            step = self.step
            self.step += 1
            index = self._take_by_key(key)
            if index is None:
                index = self._take_by_step_if_lenient(step)
            if index is None:
                raise CassetteMissError(self._explain_miss(step, key, messages, tools))
            self._served[index] = True
        return ChatResponse.model_validate(copy.deepcopy(self.records[index]["response"]))

    async def acomplete(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> ChatResponse:
        return self.complete(messages, tools)

    def _take_by_key(self, key: str) -> int | None:
        queue = self._unserved_by_key.get(key, deque())
        while queue:
            index = queue.popleft()
            if not self._served[index]:  # a lenient replay may have served it by step
                return index
        return None

    def _take_by_step_if_lenient(self, step: int) -> int | None:
        index = self._index_by_step.get(step)
        if self.strict or index is None or self._served[index]:
            return None
        return index

    def _recorded_params(self) -> dict[str, Any]:
        distinct = {canonical_json(record["request"]["params"]) for record in self.records}
        if len(distinct) > 1:
            raise ValueError(f"{self.path} mixes sampling params {sorted(distinct)}; pass params= to choose")
        return self.records[0]["request"]["params"] if self.records else {}

    def _explain_miss(self, step: int, key: str, messages: list[Message], tools: list[ToolSchema] | None) -> str:
        recorded_times = sum(record["key"] == key for record in self.records)
        head = f"cassette replay miss: {self.path}: step {step}: "
        if not self.records and not self.path.exists():
            return head + "there is no cassette for this episode (the file does not exist)"
        if recorded_times:
            return head + f"this request was recorded {recorded_times} time(s) and all were replayed already"
        index = self._index_by_step.get(step)
        if index is None:
            return (
                head + f"request not in cassette, which has no call at step {step} ({len(self.records)} calls recorded)"
            )
        return (
            head
            + "request not in cassette; "
            + _first_difference(
                self.records[index]["request"], canonical_request(messages, tools, self.sampling_params)
            )
        )


def _first_difference(recorded: dict[str, Any], requested: dict[str, Any]) -> str:
    """Where a request departs from the one recorded at the same step, in words."""
    recorded_messages, requested_messages = recorded["messages"], requested["messages"]
    for position, (was, now) in enumerate(zip(recorded_messages, requested_messages)):
        if canonical_json(was) != canonical_json(now):
            return (
                f"it first differs from the recorded request at message {position} ({now.get('role')}): "
                + _excerpts(was, now)
            )
    if len(recorded_messages) != len(requested_messages):
        shared = min(len(recorded_messages), len(requested_messages))
        return (
            f"it first differs from the recorded request at message {shared}: the recorded request has "
            f"{len(recorded_messages)} messages, this one {len(requested_messages)}"
        )
    if canonical_json(recorded["tools"]) != canonical_json(requested["tools"]):
        return "messages match the recorded request, tools differ: " + _excerpts(recorded["tools"], requested["tools"])
    return "messages and tools match the recorded request, sampling params differ: " + _excerpts(
        recorded["params"], requested["params"]
    )


def _excerpts(was: Any, now: Any) -> str:
    """The two JSON texts from just before their first differing character."""
    was_text, now_text = canonical_json(was), canonical_json(now)
    at = next((i for i, (a, b) in enumerate(zip(was_text, now_text)) if a != b), min(len(was_text), len(now_text)))
    start = max(0, at - 20)
    cut = "…" if start else ""
    return (
        f"recorded {cut}{was_text[start : start + EXCERPT_CHARS]} "
        f"vs requested {cut}{now_text[start : start + EXCERPT_CHARS]}"
    )


def _without_none(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _without_none(item) for key, item in value.items() if item is not None}
    if isinstance(value, (list, tuple)):
        return [_without_none(item) for item in value]
    return value
