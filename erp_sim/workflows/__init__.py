"""The workflows: what each one brings to the ERP, and the one registry the generic layers read.

A workflow is a folder beside ``itemization/``: its tables, forms and menu items, entity sets and
actions, business rules (and a ``rules.md`` stating them), task model, task generation and task
sets, grader and oracle. The generic layers (the session, the forms framework, the tools, OData,
the database, grading, the MCP server) name no workflow: a session takes everything workflow-specific
from its task's ``Workflow``, so its ERP holds that workflow's tables, forms, menu items, entity
sets and actions only, and adding a workflow changes no response of another.

Adding a workflow is its folder and one line in ``PACKAGES``. The folder's package gives:

- in its ``__init__``, ``TASK_SETS`` (a ``TaskSets``): which fixture files it owns, how their
  rows read, and its Gymnasium ids. Cheap (no pydantic, no SQLite): ``import erp_sim.envs`` (which
  registers the ids), ``gym.make`` and every ``--tasks`` check read it;
- in its ``workflow`` module, ``WORKFLOW`` (a ``Workflow``): the rest, loaded by the first session (its
  tables, forms, data, actions, grader and oracle; the env's system prompt, simulated user and ``info``;
  the MCP server's task prompt);
- in its ``harness`` module, ``HARNESS`` (an ``erp_sim.workflows.faces.HarnessFace``): what the agent
  harness reads (the scripted agent's procedure, the summary's facts, the failure categories, ...),
  loaded by the harness only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache, lru_cache
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, TypedDict, TypeVar

from erp_sim.outcomes import GENERIC_FAILURES

if TYPE_CHECKING:
    from pydantic import BaseModel

    from erp_sim.actions import Action
    from erp_sim.forms.base import FormDefinition, FormHost, MenuItem
    from erp_sim.json_values import JsonObject
    from erp_sim.odata.entities import DataCatalog
    from erp_sim.workflow_task import WorkflowTask
    from erp_sim.workflows.faces import HarnessFace

#: Every workflow by name: the package of its folder.
PACKAGES: dict[str, str] = {
    "itemization": "erp_sim.workflows.itemization",
    "bank_reconciliation": "erp_sim.workflows.bank_reconciliation",
}
#: The task set a command, env or session uses when none is named.
DEFAULT_TASK_SET = "hotel_50"

TaskT = TypeVar("TaskT")
TargetT = TypeVar("TargetT")
ProgressT = TypeVar("ProgressT", bound="Progress")
Cell = int | str | None  # a column value as a world builder writes it (bool is an int: SQLite stores 0/1)
Rows = dict[str, list[dict[str, Cell]]]  # table -> rows, each a column -> value dict
Call = tuple[str, dict[str, Any]]  # (tool name, arguments): what an oracle yields


class OracleError(RuntimeError):
    """An oracle met a response it did not expect (a simulator bug, or injected faults)."""


# --- task sets: the cheap part, read before any workflow loads ---------------------------------------
class TaskRow(NamedTuple):
    """A task as its fixture line, with what set membership and the train/test split read."""

    task_id: str
    workflow: str  # the workflow that owns the task (its model reads ``line``)
    stratum: tuple[str, ...]  # what the split stratifies on, outermost first (itemization: expense type, difficulty)
    size: int  # the task's size, e.g. receipt charges over every line: long sets stratify by it too
    line: str  # the fixture line, JSON


RowSource = Callable[[str], tuple[TaskRow, ...]]  # a task set's rows by name (``erp_sim.task_sets.task_rows``)


def _no_view(name: str, rows: RowSource) -> tuple[TaskRow, ...]:
    return ()


def _no_view_names(rows: RowSource) -> list[str]:
    return []


@dataclass(frozen=True)
class TaskSets:
    """A workflow's task sets: the fixture files it owns, and how a fixture line reads."""

    files: Mapping[str, str]  # set name -> file under fixtures/
    stratum: Callable[[JsonObject], tuple[str, ...]]  # a task's fixture fields -> TaskRow.stratum
    size: Callable[[JsonObject], int]  # a task's fixture fields -> TaskRow.size
    parse: Callable[[str], WorkflowTask]  # a fixture line -> the workflow's task model
    generate: Callable[[str], list[str]]  # a set's fixture lines, regenerated from their seeds
    size_stratified: frozenset[str] = frozenset()  # sets whose split stratifies by size too
    view: Callable[[str, RowSource], tuple[TaskRow, ...]] = _no_view  # more set names (a filter of a set), or ()
    view_names: Callable[[RowSource], list[str]] = _no_view_names  # those names, for the unknown-set error
    env_ids: Mapping[str, str] = field(default_factory=dict)  # Gymnasium id -> its task set (erp_sim.envs registers)
    step_limits: Mapping[str, int] = field(default_factory=dict)  # Gymnasium id -> max_episode_steps, if not 200
    demo_tasks: Mapping[str, str] = field(default_factory=dict)  # task set -> the task ``erp-sim demo`` shows first
    size_name: str = "items"  # what ``size`` counts, in prose (``erp-sim scale``'s rungs): "receipt charges"
    size_unit: str = "items"  # the same, short, for tables: "charges"


# --- the rest: loaded with the first session ---------------------------------------------------------
class Progress(Protocol):
    """The cheap part of a grade, computed after every step: what success needs, and how far the task is."""

    @property
    def success(self) -> bool: ...

    @property
    def strict_success(self) -> bool: ...

    @property
    def done_fraction(self) -> Decimal:
        """How much of the task is done, 0 to 1 (1 at success): a workflow's own measure, for shaping."""
        ...


@dataclass(frozen=True)
class Grader(Generic[TargetT, ProgressT]):
    """How a workflow grades a session. ``target`` is found once per episode (e.g. the RecIds of the lines
    to itemize); ``progress`` is cheap and cached until the next write; ``grade`` is the full grade as
    ``model``'s JSON (strict success, the collateral diff), built only when asked."""

    model: type[BaseModel]  # the full grade's model (erp_sim.Grade for itemization)
    target: Callable[[FormHost], TargetT]
    progress: Callable[[FormHost, TargetT], ProgressT]
    grade: Callable[[FormHost, TargetT, ProgressT | None], JsonObject]
    fraction: str | None = None  # the grade's field measuring how much is done (itemized_fraction), which the
    # training adapters log beside strict success


class UserSees(Protocol):
    """What a simulated user may look at when it replies (``erp_sim.envs.user_models.UserView``)."""

    task: Any  # the workflow's task
    turn: int  # 1-based number of the agent's message

    @property
    def grade(self) -> Any:
        """The full grade of the ERP's state now (the grader's model, or its JSON read by attribute)."""
        ...


@dataclass(frozen=True)
class TaskPrompt:
    """How the MCP server offers a session's task: its prompt, and how the server's instructions name it."""

    name: str  # the MCP prompt's name (itemization_task)
    description: str  # the prompt's description
    text: Callable[[Mapping[str, str]], str]  # the task brief (instruction, mapping_rules, ...) -> the prompt's text
    kind: str  # what a task is, in "Each session is one episode of one <kind> task"
    resource_description: str  # the erp-sim://task resource's description


def task_prompt_with_rules(workflow: str, *, kind: str, rules: str, description: str) -> TaskPrompt:
    """The task prompt of a workflow whose brief is its instruction and its rules (``rules``, e.g. "matching
    rules", heads them): the prompt ``<workflow>_task``, described by ``description``."""

    def text(brief: Mapping[str, str]) -> str:
        return f"{brief['instruction']}\n\n{rules.capitalize()}:\n{brief['mapping_rules']}"

    return TaskPrompt(
        name=f"{workflow}_task",
        description=description,
        text=text,
        kind=kind,
        resource_description=f"This session's task: id, instruction and {rules} (no answers).",
    )


def default_task_info(task: Any) -> JsonObject:
    """``info["task"]`` of a workflow that names nothing more: the task's id and set."""
    return {"task_id": task.task_id, "task_set": task.task_set}


def default_describe_task(fields: JsonObject) -> str:
    """A task in a few words for a person (``erp-sim play``), from ``info["task"]``: its set."""
    return str(fields["task_set"])


def default_progress_info(state: Progress) -> JsonObject:
    """``info["grade"]`` of a workflow that names nothing more: success, and how much of the task is done."""
    return {"success": state.success, "done_fraction": float(state.done_fraction)}


def default_progress_line(fields: JsonObject) -> str:
    """``render()``'s status line from ``info["grade"]``'s fields, for a workflow that words none of its own."""
    return ", ".join(f"{name.replace('_', ' ')} {value}" for name, value in fields.items())


@dataclass(frozen=True)
class Workflow(Generic[TaskT]):
    """Everything of one workflow that the generic layers read. ``TaskT``: its task model.

    The first fields are the session's (tables, forms, data, actions, grading, oracle); the rest are
    what the env (``erp_sim.envs``: the agent's system prompt, the rule-based user, ``info``) and the
    MCP server read. The agent harness's part is in the folder's ``harness`` module (``harness()``).
    """

    name: str
    schema_file: Path  # the compiled schema of its tables (``python -m <package>.tables > <package>/schema.json``)
    shared_rows: Callable[[], Rows]  # rows every task's database starts with (company, setup tables)
    task_rows: Callable[[TaskT], Rows]  # a task's own rows, ids sequential from 1
    clock: Callable[[TaskT], str]  # the task's simulated clock, YYYY-MM-DD HH:MM:SS (the SQL tool's 'now')
    forms: Mapping[str, FormDefinition]  # form name -> definition
    menu_items: Mapping[str, MenuItem]  # what form_find_menu_item finds and form_open_menu_item opens
    data: Callable[[], DataCatalog]  # entity sets of the data tools, built at their first call
    actions: Mapping[str, Action]  # api_find_actions / api_invoke_action
    grader: Grader[Any, Any]
    oracle: Callable[[TaskT], Generator[Call, str, None]]  # solves a task through the tools, from responses only
    system_prompt: Callable[[TaskT], str]  # the agent's system prompt for a task (what the study gave GPT-5)
    user_reply: Callable[[str, UserSees], tuple[str, bool]]  # the rule-based user: (its reply, ends the conversation)
    task_prompt: TaskPrompt  # the MCP server's prompt of the task
    task_info: Callable[[TaskT], JsonObject] = default_task_info  # info["task"]: the facts an evaluator logs
    describe_task: Callable[[JsonObject], str] = default_describe_task  # info["task"] in a few words, for a person
    progress_info: Callable[[Any], JsonObject] = default_progress_info  # info["grade"]: the grader's Progress
    progress_line: Callable[[JsonObject], str] = default_progress_line  # render()'s line from info["grade"]


def folder_workflow(module: ModuleType) -> Workflow[Any]:
    """The ``Workflow`` of a folder laid out as itemization's (``WORKFLOW = folder_workflow(sys.modules[__name__])``
    at the end of its ``workflow`` module, which is ``module``). The folder's modules give the parts every
    such workflow declares alike: ``SCHEMA_FILE`` (its ``__init__``), ``world.build_rows``, ``forms.FORMS`` and
    ``MENU_ITEMS``, ``catalog.shared_rows``, ``entity_sets.CATALOG`` (imported at the data tools' first call: building it and the OData
    engine it writes through costs about 10 ms, ``scripts/bench_startup.py``'s first reset, which an episode of
    form tools need not pay), ``actions.ACTIONS``, ``grading.GRADER``, ``oracle.oracle_calls``,
    ``prompt.system_prompt`` and ``user.reply``; ``module`` gives its own: ``clock``,
    ``TASK_PROMPT`` and, where the defaults do not do, ``task_info``, ``describe_task``, ``progress_info`` and
    ``progress_line``."""
    package = module.__name__.rpartition(".")[0]

    def part(name: str) -> Any:
        return import_module(f"{package}.{name}")

    forms = part("forms")
    return Workflow(
        name=package.rpartition(".")[2],
        schema_file=import_module(package).SCHEMA_FILE,
        shared_rows=part("catalog").shared_rows,
        task_rows=part("world").build_rows,
        clock=module.clock,
        forms=forms.FORMS,
        menu_items=forms.MENU_ITEMS,
        data=lambda: part("entity_sets").CATALOG,
        actions=part("actions").ACTIONS,
        grader=part("grading").GRADER,
        oracle=part("oracle").oracle_calls,
        system_prompt=part("prompt").system_prompt,
        user_reply=part("user").reply,
        task_prompt=module.TASK_PROMPT,
        task_info=getattr(module, "task_info", default_task_info),
        describe_task=getattr(module, "describe_task", default_describe_task),
        progress_info=getattr(module, "progress_info", default_progress_info),
        progress_line=getattr(module, "progress_line", default_progress_line),
    )


class FixtureCodec(TypedDict):
    """``TaskSets.parse`` and ``TaskSets.generate``, as keyword arguments."""

    parse: Callable[[str], WorkflowTask]
    generate: Callable[[str], list[str]]


def pydantic_task_sets(package: str) -> FixtureCodec:
    """A workflow's ``TaskSets.parse`` and ``TaskSets.generate`` (``TaskSets(..., **pydantic_task_sets(__name__))``) when its task model is the pydantic model ``Task``
    of ``<package>.task`` and its sets' generators are ``<package>.taskgen.TASK_SETS`` (name -> tasks): both
    import those modules at their first call, so reading a set's rows (``gym.make``) never loads pydantic. A
    fixture line is the task's JSON, compact, in field order."""

    def parse(line: str) -> WorkflowTask:
        task: WorkflowTask = import_module(f"{package}.task").Task.model_validate_json(line)
        return task

    def generate(name: str) -> list[str]:
        tasks = import_module(f"{package}.taskgen").TASK_SETS[name]()
        return [json.dumps(t.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")) for t in tasks]

    return {"parse": parse, "generate": generate}


def _package(name: str) -> str:
    if name not in PACKAGES:
        raise KeyError(f"Unknown workflow {name!r}. Workflows: {', '.join(PACKAGES)}.")
    return PACKAGES[name]


@cache
def task_sets() -> dict[str, TaskSets]:
    """Every workflow's task sets, by workflow name (cheap: no workflow loads)."""
    owned = {name: import_module(_package(name)).TASK_SETS for name in PACKAGES}
    names = [name for sets in owned.values() for name in sets.files]
    if len(names) != len(set(names)):
        raise RuntimeError(f"Two workflows claim the same task set name: {sorted(names)}.")
    return owned


def fixture_set_names() -> list[str]:
    """Every workflow's fixture task sets by name, in registry order (cheap: what a command's help lists; a
    workflow's views of a set, such as itemization's expense types, read the fixtures and are left out)."""
    return [name for sets in task_sets().values() for name in sets.files]


@cache
def load(name: str) -> Workflow[Any]:
    """A workflow by name, loaded once (its forms, entity sets, actions, grader and oracle)."""
    workflow: Workflow[Any] = import_module(_package(name) + ".workflow").WORKFLOW
    return workflow


def of_task(task: WorkflowTask) -> Workflow[Any]:
    """The workflow a task belongs to (its model's ``workflow`` name)."""
    return load(type(task).workflow)


@cache
def harness(name: str) -> HarnessFace:
    """A workflow's face for the agent harness (its folder's ``harness`` module), loaded once."""
    face: HarnessFace = import_module(_package(name) + ".harness").HARNESS
    return face


@lru_cache(maxsize=256)
def harness_for(instruction: str) -> HarnessFace:
    """The harness face of the workflow an instruction (a task's first user message) belongs to: the first
    registered workflow whose ``recognizes`` holds for it, else the first registered one (for a harness
    that sees only the conversation, as a model does)."""
    faces = [harness(name) for name in PACKAGES]
    return next((face for face in faces if face.recognizes(instruction)), faces[0])


def failure_categories() -> tuple[str, ...]:
    """Every failure category an episode may get: the generic ones (``erp_sim.outcomes``) and each registered
    workflow's (``HarnessFace.failures``)."""
    return (*GENERIC_FAILURES, *(c for name in PACKAGES for c in harness(name).failures.categories))
