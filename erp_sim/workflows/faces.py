"""What the agent harness reads of a workflow: its ``HarnessFace`` (the folder's ``harness`` module's ``HARNESS``).

The harness (``erp_sim.agents``) names no workflow: the scripted agent's procedure and its reading of the
workflow's forms, the facts of the structured summary, the failure categories, the LLM user's context,
the memory consolidator's SOP wording and the report's labels are the workflow's, as plain functions over
what an agent sees (JSON texts, FormState dicts, chat messages as dicts). The harness finds the face of
a task set's workflow (``erp_sim.workflows.harness``), or, where it sees only the conversation, of the
workflow whose ``recognizes`` holds for the instruction (``erp_sim.workflows.harness_for``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from erp_sim.form_index import FormIndex

Decision = tuple[str, dict[str, Any]] | str  # (tool, arguments), or a message to the user
FormStateDict = dict[str, Any]


class Seen(Protocol):
    """What the generic scripted agent read off the visible messages (``erp_sim.agents.scripted.View``)."""

    @property
    def instruction(self) -> str:
        """The first user message."""
        ...

    @property
    def brief(self) -> Any:
        """What the workflow's ``read_instruction`` made of it."""
        ...

    @property
    def read(self) -> Mapping[str, Any]:
        """The reading after the last message: the generic keys and the workflow's ``initial``."""
        ...

    @property
    def state(self) -> FormStateDict | None:
        """The FormState of the latest visible tool result."""
        ...

    @property
    def form_index(self) -> FormIndex:
        """Its grids and controls by name."""
        ...

    @property
    def last_tool(self) -> str | None: ...

    @property
    def last_arguments(self) -> dict[str, Any]: ...

    @property
    def memory(self) -> bool:
        """The memory tools are offered (GenericAgent's long-term memory)."""
        ...

    @property
    def sop(self) -> dict[str, Any] | None:
        """The SOP memory_read showed, its "steps" as dicts."""
        ...

    @property
    def long_term_update_requested(self) -> bool: ...

    @property
    def derived(self) -> dict[Any, Any]:
        """What the workflow's view derives from read values, kept across the calls that reuse the reading
        (keyed by the workflow; an entry must say which read values it was made from)."""
        ...

    @property
    def recalls(self) -> bool:
        """The recall model is on (``recall`` may change an amount)."""
        ...

    def sop_step(self, tool: str) -> dict[str, Any] | None:
        """The SOP's first step that calls ``tool``."""
        ...

    def sop_menu_item(self) -> dict[str, str] | None:
        """The name and type of the SOP's verified ``form_open_menu_item`` call, if it has one."""
        ...

    def recall(self, amount: str, key: str, index: int, at: int) -> str:
        """``amount`` as the recall model remembers the ``index``-th fact under ``key`` read from message ``at``."""
        ...


@dataclass(frozen=True, eq=False)
class MessageReading:
    """What a workflow reads off the visible messages: the agent folds them into a reading (a dict, copied
    after every message: write new containers, never change the ones it holds); the workflow's keys start
    as ``initial``, and its folds see what its readers read off a tool result's FormState or a user message."""

    initial: Mapping[str, Any]  # the workflow's keys of the reading before any message
    read_form: Callable[[FormStateDict, FormIndex, Any], Any]  # (FormState, its index, brief) -> what to fold, or None
    fold_result: Callable[[dict[str, Any], Any, int, Any], None]  # (reading, read_form's value, message index, brief)
    read_user: Callable[[str, Any], Hashable]  # (a user message's text, brief) -> what it says (compared, cached)
    fold_user: Callable[[dict[str, Any], Any, int, Any], None]  # (reading, read_user's value, message index, brief)


@dataclass(frozen=True, eq=False)  # hashed by identity: the agent's per-text reading cache keys on it
class ScriptedProcedure:
    """The scripted agent's knowledge of a workflow: what its messages show, and what to do next."""

    read_instruction: Callable[[str], Hashable]  # the instruction -> the brief the other hooks take (hashable)
    unreadable: Callable[[Any], str | None]  # brief -> the question to ask when it names no task, else None
    sop_key: Callable[[Any], str]  # brief -> the key of the memory SOP that would fit the task
    reading: MessageReading
    view: Callable[[Seen], Any]  # the workflow's view of what is seen (the argument of ``decide``)
    decide: Callable[[Any, bool], Decision]  # (its view, ask before the first change) -> the next step


@dataclass(frozen=True)
class SummaryFacts:
    """The workflow's facts of its task for the structured summary (ACON's sections: key variables, to-do,
    guardrails) and GenericAgent's working memory, folded from the FormStates of the responses. The facts
    are a pydantic model whose containers the fold may change in place (the harness copies them first)."""

    new: Callable[[str], Any]  # the task's instruction -> its facts before any response
    observe: Callable[
        [Any, str, str, FormStateDict], None
    ]  # (facts, form name, caption, FormState): fold one response's
    key_variables: Callable[[Any], list[str]]  # the facts as "Key variables" lines
    todo: Callable[[Any, str], list[str]]  # (facts, the current form's name) -> what is left to do, never empty
    guardrails: tuple[str, ...]  # the task's rules, in the summary's Guardrails section


def figures_line(heading: str, figures: Sequence[tuple[str, object]]) -> list[str]:
    """A key-variables line of the figures that are set (``heading: label value, label value``), or none when
    none is: what ``SummaryFacts.key_variables`` writes of a form's totals."""
    shown = [f"{label} {value}" for label, value in figures if value]
    return [f"{heading}: " + ", ".join(shown)] if shown else []


@dataclass(frozen=True)
class SopRules:
    """How GenericAgent's consolidator writes an SOP (layered memory's L3) of a successful episode of the
    workflow: the task's own values become {parameters}, a step done once per item of the task is folded."""

    parameters: Callable[[str], dict[str, str]]  # the instruction -> the task's values by parameter name
    step: Callable[[str, dict[str, Any], dict[str, str]], tuple[dict[str, Any], str]]  # (tool, arguments, values)
    # -> (the arguments with per-item placeholders, "" or what the step repeats for, e.g. "for each receipt charge")
    expect: Callable[[str, dict[str, str]], str]  # a step's Result text -> with the workflow's own values named
    say: Callable[[str], str]  # a message to the user -> with its counts named
    sop: Callable[[dict[str, str], int], dict[str, Any]]  # (values, folded steps) -> the Sop's key, summary, goal,
    # parameters, preconditions and failure_handling
    prompt: Path  # the LLM consolidator's prompt ({instruction}, {parameters}, {calls}, {schema})


@dataclass(frozen=True)
class FailureRules:
    """Why a graded episode of the workflow failed, beside the generic causes (``erp_sim.outcomes``): the
    classifier asks ``classify`` once the generic ones ahead of it (a stall, the step limit, invalid calls)
    do not apply; None leaves ``premature_termination``."""

    categories: tuple[str, ...]  # its own categories, in the failure table's order
    classify: Callable[[Any, Sequence[str]], str | None]  # (the grade or None, the agent's texts to the user)


@dataclass(frozen=True)
class HarnessFace:
    """Everything of one workflow that the agent harness reads."""

    name: str
    recognizes: Callable[[str], bool]  # an instruction (the first user message) is one of this workflow's tasks
    scripted: ScriptedProcedure
    user_context: Path  # the LLM user's prompt template: {end_token} and the fields of user_context_fields
    user_context_fields: Callable[[Any, Any], Mapping[str, str]]  # (task, grade) -> the template's other fields
    facts: SummaryFacts
    failures: FailureRules
    sop: SopRules
    labels: Mapping[str, str] = field(default_factory=dict)  # report wording: success (the eval table), progress
    # the form controls whose value is the work left (the run page charts the last one shown per model call)
    progress_controls: tuple[str, ...] = ()
    grade_terms: str = ""  # the report's Methods bullet: what the grade's figures mean (Markdown)


def folder_procedure(scripted: ModuleType) -> ScriptedProcedure:
    """The ``ScriptedProcedure`` of a folder's ``scripted`` module laid out as itemization's: its hooks under the
    field names of ``ScriptedProcedure`` and ``MessageReading`` (``read_instruction``, ``unreadable``, ``sop_key``,
    ``read_form``, ``fold_result``, ``read_user``, ``fold_user``, ``decide``), ``INITIAL`` the workflow's keys of
    the reading and ``VIEW`` its view."""

    def hooks(face: type[Any], **given: Any) -> Any:
        return face(**{f.name: getattr(scripted, f.name) for f in fields(face) if f.name not in given}, **given)

    procedure: ScriptedProcedure = hooks(
        ScriptedProcedure, reading=hooks(MessageReading, initial=scripted.INITIAL), view=scripted.VIEW
    )
    return procedure


def folder_harness(
    module: str,
    *,
    recognizes: Callable[[str], bool],
    labels: Mapping[str, str] | None = None,
    progress_controls: tuple[str, ...] = (),
) -> HarnessFace:
    """The ``HarnessFace`` of a folder laid out as itemization's (``HARNESS = folder_harness(__name__, ...)`` in
    its ``harness`` module, named ``module``). The folder's modules give the ``scripted`` procedure (``folder_procedure``),
    ``user.USER_CONTEXT`` and ``user.user_context``,
    ``facts.SUMMARY_FACTS``, ``failures.FAILURES`` and ``sop.SOP_RULES``, and ``grade_terms.md`` the report's terms
    (if it has one); the name is the folder's."""
    package = module.rpartition(".")[0]

    def part(name: str) -> Any:
        return import_module(f"{package}.{name}")

    user = part("user")
    terms = Path(user.__file__).with_name("grade_terms.md")
    return HarnessFace(
        name=package.rpartition(".")[2],
        recognizes=recognizes,
        scripted=folder_procedure(part("scripted")),
        user_context=user.USER_CONTEXT,
        user_context_fields=user.user_context,
        facts=part("facts").SUMMARY_FACTS,
        failures=part("failures").FAILURES,
        sop=part("sop").SOP_RULES,
        labels=labels or {},
        progress_controls=progress_controls,
        grade_terms=terms.read_text(encoding="utf-8") if terms.is_file() else "",
    )
