"""An ERP session: one task's database, the form stack, and the one place tool calls are answered.

``ErpSession.call(name, arguments)`` validates the arguments against the tool's pydantic
model, runs the tool, and renders the response in the real server's JSON shape. Every
``ErpError`` and every argument error becomes an error response in that same shape;
nothing raises out of ``call``. Writes are transactional (``database.transaction``) and form
edits are only copied into the database at save, so a failed call changes nothing.
"""

from __future__ import annotations

import json
import logging
import random
import uuid
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

import pydantic
from pydantic import BaseModel, Field

from erp_sim import response, workflows
from erp_sim import response_keys as K
from erp_sim.database import database_bytes, database_from_bytes, open_database, state_hash
from erp_sim.errors import (
    ErpError,
    FormStateError,
    InternalError,
    NotFoundError,
    ResponseTooLargeError,
    ValidationError,
)
from erp_sim.faults import FaultInjector, FaultProfile
from erp_sim.forms.base import OpenForm, render_form_state
from erp_sim.grading import grade_session
from erp_sim.json_values import MAX_ARGUMENT_CHARS, MAX_ARGUMENT_DEPTH, JsonObject, json_value_problem
from erp_sim.tool_registry import TOOLS, Outcome, Tool
from erp_sim.verbosity import Verbosity, checked_verbosity

if TYPE_CHECKING:
    from erp_sim.workflow_task import WorkflowTask

MAX_RESPONSE_CHARS = 160_000  # the real server's limit
MAX_ERROR_CHARS = 2_000  # an error message's text (it appears twice in the response)
MAX_FORM_DEPTH = 8
_NAMESPACE = uuid.UUID("6f1b9a52-2c1d-4f7e-9d7e-5b0c1e2d3a4f")
BASE_URL = "https://usnconeboxax1aos.cloud.onebox.dynamics.com"
logger = logging.getLogger("erp_sim.erp_session")
T = TypeVar("T")


class SessionOptions(TypedDict, total=False):
    """``ErpSession``'s keyword options, for functions that pass them on (``erp_sim.open_session``)."""

    verbosity: Verbosity
    faults: FaultProfile | str | float | None
    instance: int


class ToolResponse(BaseModel):
    """A tool call's answer: the JSON text the agent sees, and the same content typed."""

    tool: str = Field(description="The tool that was called (as given).")
    text: str = Field(description="The response text, exactly what the agent sees.")
    is_error: bool = Field(description="True when the call failed (nothing was changed).")
    error_code: str | None = Field(None, description="ErpError code, e.g. ValidationError, when is_error.")
    read_only: bool = Field(True, description="Whether the tool is declared read-only.")
    envelope: dict[str, Any] = Field(description="The parsed response: SessionId, Result, Messages, FormState, ...")

    @property
    def result(self) -> str:
        result: str = self.envelope[K.RESULT]  # the envelope's shape (response.envelope)
        return result

    @property
    def form_state(self) -> JsonObject | None:
        state: JsonObject | None = self.envelope.get(K.FORM_STATE)
        return state


class ErpSession:
    """One episode's ERP: its task's workflow (tables, forms, menu items, entity sets, actions) and nothing
    else. Deterministic: same task, options and calls give byte-identical responses."""

    def __init__(
        self,
        task: WorkflowTask,
        *,
        verbosity: Verbosity = "default",
        faults: FaultProfile | str | float | None = None,
        instance: int = 0,
    ) -> None:
        self.verbosity = checked_verbosity(verbosity)
        self.task = task
        self.workflow = workflows.of_task(task)
        self.company = "USMF"
        self.sql_random = random.Random(task.seed)  # the SQL tool's random(): episode state, pickled with it
        self.db = open_database(task, self.sql_random)
        self.forms: list[OpenForm] = []
        self.call_count = 0
        self.session_id = str(uuid.uuid5(_NAMESPACE, f"{task.task_set}/{task.task_id}/{task.seed}/{instance}"))
        profile = FaultProfile.parse(faults)
        self.faults = FaultInjector(profile, task.seed) if profile and profile.rate > 0 else None
        self._messages: list[dict[str, str]] = []
        self._memo: dict[Hashable, Any] | None = None  # active only while rendering a response (read-only)
        self._read_cache: dict[str, tuple[int, Any]] = {}

    # --- used by forms and tools ---
    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        """Cache ``compute()`` for the rest of the current render; plain call otherwise."""
        if self._memo is None:
            return compute()
        if key not in self._memo:
            self._memo[key] = compute()
        value: T = self._memo[key]  # typed by its key's compute (an annotation: no cast call on this hot path)
        return value

    def add_message(self, level: str, text: str) -> None:
        self._messages.append({K.LEVEL: level, K.TEXT: text})

    def cached_read(self, key: str, compute: Callable[[], T]) -> T:
        """Cache a pure function of the database until its next write (sqlite's change counter moves).

        Callers must not mutate what they get back.
        """
        version = self.db.total_changes
        hit = self._read_cache.get(key)
        if hit is None or hit[0] != version:
            hit = self._read_cache[key] = (version, compute())
        value: T = hit[1]  # typed by its key's compute
        return value

    def open_form(self, name: str, context: dict[str, Any]) -> str:
        if len(self.forms) >= MAX_FORM_DEPTH:
            raise FormStateError(f"At most {MAX_FORM_DEPTH} forms can be open; close some with form_close_form.")
        definition = self.workflow.forms[name]
        self.forms.append(OpenForm(name=name, context=dict(context)))
        return f"Form {definition.caption(self, self.forms[-1])} ({name}) was opened."

    def close_form(self) -> str:
        if not self.forms:
            raise FormStateError("No form is open.")
        form = self.forms[-1]
        definition = self.workflow.forms[form.name]
        if definition.has_unsaved_changes(form) and not form.close_warned:
            form.close_warned = True
            self.add_message(
                "Warning",
                "The form has unsaved changes. Save them with form_save_form, or call form_close_form "
                "again to discard them.",
            )
            return f"Form {form.name} was not closed: it has unsaved changes."
        discarded = definition.has_unsaved_changes(form)
        definition.discard(form)
        self.forms.pop()
        if discarded:
            self.add_message("Warning", "Unsaved changes were discarded.")
        back = f" Back on {self.forms[-1].name}." if self.forms else ""
        return f"Form {form.name} was closed.{back}"

    # --- the one entry point ---
    def call(self, name: str, arguments: dict[str, Any] | str | None = None) -> ToolResponse:
        """Run a tool by name. Never raises for bad input: errors come back as error responses."""
        try:
            tool, args = parse_call(name, arguments)
        except ErpError as exc:
            self._start_call()
            return self._error(name, TOOLS.get(name) if isinstance(name, str) else None, exc)
        return self.call_parsed(tool, args)

    def call_parsed(self, tool: Tool, args: BaseModel) -> ToolResponse:
        """Run a tool on arguments ``parse_call`` returned (the env checks actions with it first)."""
        self._start_call()
        top = self.forms[-1] if self.forms else None
        warned_before = top.close_warned if top else False
        try:
            if self.faults:
                self.faults.maybe_fail()
            outcome = tool.fn(self, args)
        except ErpError as exc:
            return self._error(tool.name, tool, exc)
        except Exception as exc:  # a simulator bug: still an answer in the usual shape, and the episode goes on
            # the agent sees only the exception's type; whoever runs the simulator needs the traceback to fix it
            logger.exception("simulator bug in %s (session %s, call %d)", tool.name, self.session_id, self.call_count)
            return self._error(
                tool.name,
                tool,
                InternalError(f"The server could not process the request ({type(exc).__name__}). Nothing was changed."),
            )
        if top is not None and top in self.forms and warned_before and tool.name != "form_close_form":
            top.close_warned = False  # a discard needs two closes in a row
        return self._respond(tool.name, tool, outcome)

    def _start_call(self) -> None:
        self.call_count += 1
        self._messages = []

    # --- responses ---
    def _envelope(self, result: str, payload: JsonObject | None) -> JsonObject:
        if self.forms:  # before the messages are taken: reconciling may add a warning
            self.workflow.forms[self.forms[-1].name].reconcile(self, self.forms[-1])
        envelope = response.envelope(self.session_id, result, self._messages, payload)
        envelope[K.FORM_STATE] = self._form_state()
        envelope[K.ACTIVITY_ID] = str(uuid.uuid5(_NAMESPACE, f"{self.session_id}/{self.call_count}"))
        envelope[K.DEEP_LINKS] = self._deep_links()
        return envelope

    def _form_state(self) -> JsonObject | None:
        if not self.forms:
            return None
        form = self.forms[-1]
        self._memo = {}
        try:
            return render_form_state(self, form, self.workflow.forms[form.name], self.verbosity == "default")
        finally:
            self._memo = None

    def _deep_links(self) -> list[dict[str, str]]:
        if not self.forms:
            return []
        form = self.forms[-1]
        return [
            {
                K.LABEL: self.workflow.forms[form.name].caption(self, form),
                K.URL: f"{BASE_URL}/?cmp={self.company}&mi={form.name}",
            }
        ]

    def _respond(self, name: str, tool: Tool, outcome: Outcome) -> ToolResponse:
        envelope = self._envelope(outcome.result, outcome.payload)
        text = response.render(envelope)
        if len(text) > MAX_RESPONSE_CHARS:
            return self._error(
                name,
                tool,
                ResponseTooLargeError(
                    f"The response has {len(text):,} characters, over the limit of {MAX_RESPONSE_CHARS:,}. Narrow the request "
                    f"($top, $select, a WHERE clause or a grid filter)."
                ),
            )
        return ToolResponse(tool=name, text=text, is_error=False, read_only=tool.read_only, envelope=envelope)

    def _error(self, name: object, tool: Tool | None, exc: ErpError) -> ToolResponse:
        message = str(exc)
        if len(message) > MAX_ERROR_CHARS:  # e.g. every unknown property name of a huge request
            message = f"{message[:MAX_ERROR_CHARS]}... ({len(message) - MAX_ERROR_CHARS:,} more characters cut)"
        self._messages.append(response.error_message(message))
        envelope = self._envelope(response.error_result(message), response.error_payload(exc.code, message))
        return ToolResponse(
            tool=str(name)[:200],
            text=response.render(envelope),
            is_error=True,
            error_code=exc.code,
            read_only=tool.read_only if tool else True,
            envelope=envelope,
        )

    # --- for graders, tests and evaluators (never shown to the agent) ---
    def grade(self) -> Any:
        """The full grade of the ERP's state now: the workflow's grade model (``erp_sim.Grade`` for itemization)."""
        return grade_session(self)

    def state_hash(self) -> str:
        return state_hash(self.db)

    def close(self) -> None:
        self.db.close()

    # --- pickling and copying (tree search, vector envs): the database travels as SQLite bytes ---
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["db"] = database_bytes(self.db)
        state["_memo"], state["_read_cache"] = None, {}  # caches are keyed by the connection's change counter
        del state["workflow"]  # found again from the task: its forms and functions are the code's, not state
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.workflow = workflows.of_task(self.task)
        self.db = database_from_bytes(state["db"], self.task, self.sql_random)


def parse_call(name: object, arguments: dict[str, Any] | str | None) -> tuple[Tool, BaseModel]:
    """The tool and its typed arguments, or the ErpError ``call`` would answer with before reaching the ERP
    (unknown tool, arguments failing the tool's schema or the JSON checks): what the env calls an invalid action."""
    tool = TOOLS.get(name) if isinstance(name, str) else None
    if tool is None:
        raise NotFoundError(_unknown_tool(name))
    return tool, validate_arguments(tool, arguments)


def _unknown_tool(name: object) -> str:
    return f"Unknown tool {str(name)[:100]!r}. Tools: {', '.join(TOOLS)}."


def validate_arguments(tool: Tool, arguments: dict[str, Any] | str | None) -> BaseModel:
    """The tool's typed arguments, or a ValidationError naming what is wrong. Never raises anything else."""
    raw = _parse_arguments(arguments)
    problem = json_value_problem(raw)
    if problem:
        raise ValidationError(f"Invalid arguments for {tool.name}: {problem}")
    try:
        return tool.args_model.model_validate(raw)
    except pydantic.ValidationError as exc:
        raise ValidationError(_describe_validation_error(tool.name, exc)) from None


def _parse_arguments(arguments: dict[str, Any] | str | None) -> dict[str, Any]:
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, str):
        if len(arguments) > MAX_ARGUMENT_CHARS:
            raise ValidationError(
                f"The arguments are {len(arguments):,} characters long; the limit is {MAX_ARGUMENT_CHARS:,}."
            )
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"The arguments are not valid JSON: {exc.msg} at position {exc.pos}.") from None
        except ValueError as exc:  # e.g. an integer literal over Python's 4,300-digit limit
            raise ValidationError(f"The arguments cannot be read: {exc}.") from None
        except RecursionError:
            raise ValidationError(
                f"The arguments cannot be read: nested more than {MAX_ARGUMENT_DEPTH} levels deep."
            ) from None
    if not isinstance(arguments, dict):
        raise ValidationError(f"The arguments must be a JSON object, got {type(arguments).__name__}.")
    return arguments


def _describe_validation_error(tool: str, exc: pydantic.ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False)[:5]:
        location = ".".join(str(p) for p in error["loc"]) or "arguments"
        if error["type"] == "extra_forbidden":
            problems.append(f"{location}: unexpected argument")
        else:
            got = _short_repr(error.get("input"))
            problems.append(f"{location}: {error['msg']} (got {got[:60] + '...' if len(got) > 60 else got})")
    return f"Invalid arguments for {tool}: " + "; ".join(problems) + "."


def _short_repr(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"an integer of {value.bit_length()} bits"  # repr() refuses ints over 4,300 digits
    return repr(value)
