"""The env of every workflow: one ERP session per episode, tool calls and user messages as text actions.

What is a workflow's (the system prompt, what its user says, the task and progress in ``info``, its grade
and the ``done_fraction`` the shaping potential weighs) comes from the task's ``erp_sim.workflows.Workflow``.
"""

from __future__ import annotations

import json
import operator
import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, cast

import gymnasium as gym
import numpy as np
from gymnasium.error import ResetNeeded

import erp_sim
from erp_sim import workflows
from erp_sim.envs.action_checks import parse_action
from erp_sim.envs.observation_text import readable
from erp_sim.envs.spaces import MAX_ACTION_CHARS, MAX_OBSERVATION_CHARS, AnyText
from erp_sim.envs.user_models import UserModel, UserView, make_user_model
from erp_sim.faults import FaultProfile
from erp_sim.outcomes import ENV_TERMINATIONS, EnvTermination
from erp_sim.response import error_envelope, render
from erp_sim.task_sets import task_rows
from erp_sim.verbosity import checked_verbosity

if TYPE_CHECKING:
    from pydantic import BaseModel

    from erp_sim.json_values import JsonObject
    from erp_sim.verbosity import Verbosity
    from erp_sim.workflow_task import WorkflowTask
    from erp_sim.workflows import Progress

PARTIAL_CREDIT = Decimal("0.5")  # weight of the task's progress (its done_fraction) in the shaping potential
TERMINATION_REASONS = ENV_TERMINATIONS
REWARDS = ("success", "strict")
RESET_OPTIONS = (
    'Valid options: {"task_id": "<id>"} (a task of the env\'s task set) or {"task_index": <int>}; '
    "None draws a task with the env's seed."
)


def progress_info(state: Progress, workflow: workflows.Workflow[Any]) -> JsonObject:
    """The live grade in ``info``: the workflow's fields of its grader's Progress (a fresh dict each time)."""
    return dict(workflow.progress_info(state))


# Checks of keyword arguments that need more than a membership test: each fails at ``gym.make`` with a
# ValueError naming the value, and takes numpy's scalars as Python's.


def user_turn_limit(value: object) -> int:
    """``max_user_turns``: a whole number of at least 1 (not True, 2.5 or "3")."""
    try:
        turns = operator.index(value)  # type: ignore[arg-type]  # anything else raises TypeError
    except TypeError:
        turns = 0
    if isinstance(value, bool) or turns < 1:
        raise ValueError(f"max_user_turns must be a whole number of at least 1, got {value!r}")
    return turns


def receipt_flag(value: object) -> bool:
    """``receipt_in_instruction``: True or False ("no" would be truthy)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"receipt_in_instruction must be True or False, got {value!r}")
    return bool(value)


def rewarded(state: Progress, reward: str) -> bool:
    """Whether the state earns the reward in force: the study's success, or strict success."""
    return state.strict_success if reward == "strict" else state.success


def potential(state: Progress, reward: str = "strict") -> Decimal:
    """1 when the reward in force is earned, else PARTIAL_CREDIT x the task's ``done_fraction`` (for itemization,
    1 - |remaining| / header, floored at 0)."""
    if rewarded(state, reward):
        return Decimal(1)
    return PARTIAL_CREDIT * state.done_fraction


@lru_cache(maxsize=1)
def _session_module():
    """``erp_sim.erp_session``, imported on first use: by the first reset, not by gym.make (tests/test_startup.py,
    scripts/bench_startup.py); cached, as a from-import per step costs ~2 µs."""
    import erp_sim.erp_session

    return erp_sim.erp_session


@lru_cache(maxsize=1)
def _grading_module():
    """``erp_sim.grading``, imported on first use: by the episode's end or the first grade(), not by gym.make
    (tests/test_startup.py, scripts/bench_startup.py)."""
    import erp_sim.grading

    return erp_sim.grading


@lru_cache(maxsize=1)
def _tools_json() -> str:
    """The tool schemas every reset's ``info["tools"]`` gets a fresh copy of."""
    return json.dumps(erp_sim.openai_tool_schemas())


@dataclass(frozen=True)
class EnvSnapshot:
    """An episode's saved state, opaque and picklable: give it to ``restore`` of an env made with the same settings."""

    task_set: str
    data: bytes  # the pickled episode state (the ERP session travels as SQLite bytes)
    settings: tuple[tuple[str, Any], ...]  # the env's kwargs that shape an episode (SNAPSHOT_SETTINGS)

    def __repr__(self) -> str:
        return f"EnvSnapshot(task_set={self.task_set!r}, {len(self.data):,} bytes)"


# The kwargs a snapshot must be restored under: they decide what the restored steps observe and pay.
SNAPSHOT_SETTINGS = (
    "task_set",
    "verbosity",
    "faults",
    "reward",
    "reward_shaping",
    "max_user_turns",
    "receipt_in_instruction",
)

# What an episode is: everything reset() sets and step() changes (the user model, as it may keep state).
EPISODE_STATE = (
    "session",
    "task",
    "_line_id",
    "_progress",
    "_potential",
    "_counts",
    "_termination",
    "_last_observation",
    "_task_info",
    "user",
    "_np_random",
    "_np_random_seed",
)


class ErpEnv(gym.Env[str, str]):
    """
    ## Description
    An agent works one task of a workflow (for itemization: it itemizes one expense line) in a
    simulated Dynamics 365 Finance and Operations (``erp_sim``), through the 22 tools of the D365 ERP
    MCP server, while a simulated user (for itemization, the employee who owns the report) answers
    its messages. Replays the hotel-expense itemization study offline and deterministically: the
    same seed and actions give byte-identical observations, rewards and infos. What is the
    workflow's (its system prompt, user, grade and ``info`` fields) comes from the task's
    ``erp_sim.workflows.Workflow``; the env itself names no workflow.

    ## Action Space
    ``AnyText(0, MAX_ACTION_CHARS)`` (200,000, the session's limit on argument text): a JSON string,
    either ``{"name": <tool>, "arguments": {...}}`` (a tool call; ``arguments`` may also be a JSON string, as in OpenAI tool calls) or
    ``{"message": <text>}`` (a message to the user). A dict of the same shape is accepted too, and
    so is ``InvalidAction(reason)``, an action an adapter refused itself (counted as invalid).

    Every action is one of three kinds, the same in the observation, ``info["action"]`` and
    ``info["counts"]``:
    - ``invalid``: the env could not turn it into a tool call the ERP accepts or a message: not
      JSON, the wrong shape, an unknown tool, arguments failing the tool's schema or holding
      what JSON tools refuse (NUL characters, lone surrogates, integers too long to print), a
      message with such text, or any action after the episode ended. The observation is an error of the ERP's shape with
      ``Error.Code == "InvalidAction"`` and the reason; ``info["action"]`` has
      ``is_error=True, error_code="InvalidAction"``; it counts in ``invalid_actions`` only.
      Nothing reaches the ERP; reward 0; the episode goes on.
    - ``tool``: a well-formed call the ERP answered. ``is_error``/``error_code`` are the ERP's
      (a business rule, a form state, an injected fault); it counts in ``tool_calls``, and in
      ``tool_errors`` when the ERP answered with an error.
    - ``message``: a message to the user; it counts in ``user_turns``.

    ## Observation Space
    ``AnyText(0, MAX_OBSERVATION_CHARS)`` (400,000): the tool's response exactly as the MCP server sends it
    (JSON with ``SessionId``, ``Result``, ``Messages``, ``FormState``, ...), the user's reply (plain text),
    or for an action the env could not parse, a JSON error of the same shape without
    ``FormState`` (``Error.Code`` is ``InvalidAction``). The first observation is the user's
    instruction. ``""`` is the observation of a message nobody answers (``user_model=None``).

    ## Starting State
    ``reset(seed=None, options=None)`` opens a fresh ERP session on one task of the task set:
    ``options={"task_id": "hotel-007"}`` or ``{"task_index": 7}`` (an int), else a task drawn with
    ``self.np_random``. No form is open. Any other key, both keys, an id not in the task set, or an
    index that is not an int in range raises ``ValueError`` naming the valid options, before
    anything changes: the env stays as it was and the next valid ``reset`` works.
    ``env.unwrapped.tasks`` lists the task set in index order: to play every task once, reset with
    ``{"task_index": i}`` for ``i in range(len(env.unwrapped.tasks))``.

    ## Rewards
    The workflow's grader judges the ERP's state against the task's original facts, never against
    what the agent rewrote in the ERP; any change the task did not ask for (``collateral``) fails
    both rewards.
    ``reward="strict"`` (default): 1.0 on the step that completes the task by the workflow's rule
    and the work equals the task's ground truth, else 0.0 (itemization: saved lines add up to the
    task's amount, remaining exactly 0.00, no unsaved rows, the itemization form closed, no
    collateral change, and the saved lines equal the receipt's charges as a multiset of
    (subcategory, date, amount); one line holding the whole amount earns nothing).
    ``reward="success"``: the study's rule, what "Less Context, Smarter Agents" measured: as
    ``"strict"`` without the ground truth, so a wrong itemization that adds up (one line with the
    whole amount, any subcategory and date) earns 1.0. Use it to compare with the study, never to
    train. Under either reward ``info["grade"]["success"]`` is the study's success, live, and the
    terminating step's ``info["final_grade"]`` has ``success`` and ``strict_success``.
    The episode ends at the study's success under either reward; ``info["reward"]`` names the
    reward in force.
    ``reward_shaping="none"`` (default): the reward above. ``reward_shaping="potential"``: each
    step earns ``phi(s') - phi(s)`` with ``phi = 1`` when the reward in force is earned, else
    ``0.5 * done_fraction``, the workflow's measure of how much is done (itemization:
    ``max(0, 1 - |remaining| / header amount)``; a multi-line task adds its lines' amounts and
    their ``|remaining|``, so over-itemizing one line does not make up for another). The return then
    equals ``phi`` of the last state whatever ends the episode (success, the user, or ``TimeLimit``):
    partial credit for the share done, none for over-itemization beyond the amount.

    ## Episode End
    Terminated on the study's success (under either reward); when the user ends the conversation (``user_ended``); when the
    agent has sent ``max_user_turns`` messages (``user_turn_limit``); or, with
    ``user_model=None``, at the first message to the user (``stalled``, the study's C1).
    Truncated by ``TimeLimit`` (``max_episode_steps`` at registration: 200 unless the workflow names its
    id's limit, ``TaskSets.step_limits``; 1,500 for long_horizon).
    ``close()`` ends the ERP session and may be called any number of times; ``step``, ``grade`` and
    ``snapshot`` before the first ``reset`` or after ``close()`` raise ``gymnasium.error.ResetNeeded``,
    and a ``reset`` starts a new episode.

    ## Information
    ``reset`` and ``step`` return fresh dicts with:
    - ``task``: the workflow's facts of the task (``Workflow.task_info``): task_id and task_set, and for
      itemization expense_type, family, difficulty, report_number, line_number, header_amount, currency,
      item_count (of a multi-line task: its first line, and the charges of all lines);
    - ``grade``: the live state, not the transcript (``Workflow.progress_info``): success, and for
      itemization remaining_amount, itemized_fraction, saved_lines, unsaved_rows, itemization_form_open;
    - ``counts``: steps, tool_calls, invalid_actions, tool_errors, user_turns;
    - ``termination_reason``: None while running, else one of ``TERMINATION_REASONS``;
    - ``reward``: the reward in force, ``"success"`` or ``"strict"``.
    ``reset`` adds ``tools`` (the 22 tools in OpenAI function form) and ``system_prompt``.
    ``step`` adds ``action`` (kind: tool / message / invalid, tool, is_error, error_code; see
    Action Space) and,
    on the terminating step, ``final_grade`` (the workflow's grade as a dict, ``erp_sim.Grade`` for
    itemization, with strict success and collateral changes). After truncation use ``env.unwrapped.grade()``.

    ## Arguments
    - ``task_set``: any workflow's task set (itemization: ``"hotel_50"``, ``"expense_types"`` or one expense
      type, ``"Meals"``); default ``erp_sim.workflows.DEFAULT_TASK_SET``.
    - ``verbosity``: ``"default"`` (the faithful, verbose form state) or ``"compact"``.
    - ``user_model``: ``"rule"`` (``RuleBasedUser``), ``None`` / ``"none"``, or an object with
      ``reset(task)`` and ``reply(message, view)`` (see ``erp_sim.envs.user_models``); it is reset with
      the env, so give each env of a vector env its own.
    - ``receipt_in_instruction``: list the task's source documents in the first message (itemization: the
      receipt's charges).
    - ``faults``: ``erp_sim`` fault profile (``0.1`` or ``"rate=0.1,seed=3"``), off by default. A faulted
      call fails before it runs (nothing changes) with ``info["action"]["error_code"]`` ``FormBusy``,
      ``SessionLost`` or ``RequestTimeout``; sending the same call again is the recovery.
    - ``reward``: ``"strict"`` (default) or ``"success"``, the study's rule (see Rewards).
    - ``reward_shaping``: ``"none"`` or ``"potential"`` (see Rewards).
    - ``max_user_turns``: messages the agent may send before the user leaves (default 10).
    - ``render_mode``: ``None`` or ``"ansi"``: ``render()`` returns the last observation as ``erp-sim play``
      shows it (the result, messages, the form's controls and grids as text tables; a user's reply as
      it is) and a line of the grade's progress.

    ## Snapshots, pickling, vector envs
    ``env.unwrapped.snapshot()`` returns an opaque, picklable ``EnvSnapshot`` of the episode (the
    ERP database as SQLite bytes, the open forms, counters, user model, RNG); ``restore(snapshot)``
    resumes from it, as often as wanted, so tree search and best-of-n branch without replaying.
    The steps after a restore equal the steps after the snapshot. ``restore`` refuses, with a
    ``ValueError`` naming each difference, a snapshot taken under other settings (task set,
    verbosity, faults, reward, shaping, user turns, receipt in the instruction). ``TimeLimit``'s step count
    lives in the wrapper, not in the snapshot: to branch with truncation, deepcopy the wrapped env.
    ``copy.deepcopy(env)`` and ``pickle`` work mid-episode, and so does
    ``gym.make_vec(..., vectorization_mode="async")`` with the spawn start method
    (``vector_kwargs={"context": "spawn", "shared_memory": False}``).

    ## Version History
    - v0: initial version; ``reward`` defaults to ``"strict"`` (earlier 0.1.0 builds: ``"success"``).
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        task_set: str = workflows.DEFAULT_TASK_SET,
        *,
        verbosity: Verbosity = "default",
        user_model: Any = "rule",
        receipt_in_instruction: bool = False,
        faults: Any = None,
        reward: Literal["success", "strict"] = "strict",
        reward_shaping: Literal["none", "potential"] = "none",
        max_user_turns: int = 10,
        render_mode: str | None = None,
    ):
        verbosity = checked_verbosity(verbosity)
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {reward!r}")
        if reward_shaping not in ("none", "potential"):
            raise ValueError(f"reward_shaping must be 'none' or 'potential', got {reward_shaping!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}, got {render_mode!r}")
        max_user_turns, receipt_in_instruction = user_turn_limit(max_user_turns), receipt_flag(receipt_in_instruction)
        # Arguments fail here, not at the first reset; the simulator itself (pydantic models, the
        # database layer) loads at the first reset, which keeps the first gym.make fast.
        FaultProfile.parse(faults)
        if not isinstance(task_set, str):
            raise TypeError(f"task_set must be a task set's name (e.g. 'hotel_50'), got {type(task_set).__name__}")
        try:
            task_rows(task_set)
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None
        self.task_set, self.verbosity, self.faults = task_set, verbosity, faults
        self.user: UserModel | None = make_user_model(user_model)
        self.receipt_in_instruction, self.reward, self.reward_shaping = receipt_in_instruction, reward, reward_shaping
        self.max_user_turns, self.render_mode = max_user_turns, render_mode
        self.action_space = AnyText(MAX_ACTION_CHARS)
        self.observation_space = AnyText(MAX_OBSERVATION_CHARS)
        self.session: erp_sim.ErpSession | None = None
        self.task: Any = None  # the episode's task (its workflow's model, erp_sim.Task for itemization)

    @property
    def tasks(self) -> list[Any]:
        """The task set's tasks, in set order (``reset(options={"task_index": i})`` picks ``tasks[i]``)."""
        return erp_sim.load_task_set(self.task_set)

    # --- Gymnasium API ---
    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, dict]:
        chosen = self._task_from_options(options)  # before any state changes: a refused reset leaves the env as it was
        if isinstance(seed, bool):  # an int to Python and to Gymnasium's check, yet no seed anyone meant
            raise ValueError(f"seed: {seed} is a bool, not a seed; give a non-negative integer or None.")
        try:
            super().reset(seed=seed)  # a bad seed raises before the generator is replaced
        except gym.error.Error as exc:  # refused like bad options: a ValueError (adapters answer ResetRefused)
            raise ValueError(f"seed: {exc}; give a non-negative integer or None.") from exc
        if chosen is None:
            tasks = self.tasks
            chosen = tasks[int(self.np_random.integers(len(tasks)))]
        self.task = chosen
        self.close()
        self.session = erp_sim.ErpSession(self.task, verbosity=self.verbosity, faults=self.faults)
        self._line_id = self.session.workflow.grader.target(self.session)  # what the grade is about (RecIds)
        self._refresh_progress()
        self._potential = potential(self._progress, self.reward)
        self._counts = dict.fromkeys(("steps", "tool_calls", "invalid_actions", "tool_errors", "user_turns"), 0)
        self._termination: EnvTermination | None = None
        if self.user is not None:
            self.user.reset(self.task)
        self._last_observation = self.task.instruction(include_receipt=self.receipt_in_instruction)
        workflow = self.session.workflow
        self._task_info = workflow.task_info(self.task)
        info = self._info()
        info.update(tools=json.loads(_tools_json()), system_prompt=workflow.system_prompt(self.task))
        return self._last_observation, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        if self.session is None:
            raise ResetNeeded("Call reset() before step().")
        if self._termination is not None:
            return (
                self._invalid_action("The episode is over; call reset() to start a new one."),
                0.0,
                True,
                False,
                self._info(kind="invalid"),
            )
        self._counts["steps"] += 1
        kind, payload = parse_action(action)
        tool_name = payload[0] if kind == "tool" else None
        if kind == "tool":
            try:
                payload = _session_module().parse_call(*payload)
            except erp_sim.ErpError as exc:
                kind, payload = "invalid", str(exc)
        if kind == "tool":
            observation, details = self._call_tool(*payload)
        elif kind == "message":
            observation, details = self._message_user(payload), {}
        else:
            observation, details = self._invalid_action(payload), {"tool": tool_name}
        self._last_observation = observation
        info = self._info(kind=kind, **details)
        if self._termination is not None:
            info["final_grade"] = _grading_module().grade_dict(self.session, self._line_id, self._progress)
        return observation, self._reward(), self._termination is not None, False, info

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self.session is None:
            return None
        workflow = self.session.workflow
        # a frame a person reads, as erp-sim play shows it (the raw JSON is the observation itself)
        return f"{readable(self._last_observation)}\n--- {workflow.progress_line(progress_info(self._progress, workflow))}\n"

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None

    # --- for evaluators (never shown to the agent) ---
    def grade(self) -> Any:
        """The full grade of the current ERP state (strict success, collateral changes, ...): the workflow's grade
        model (``erp_sim.Grade`` for itemization)."""
        if self.session is None:
            raise ResetNeeded("Call reset() before grade().")
        self._refresh_progress()  # cheap when nothing changed; exact if the session was driven directly
        return _grading_module().grade_session(self.session, self._line_id, self._progress)

    # --- for tree search and best-of-n (never shown to the agent) ---
    def snapshot(self) -> EnvSnapshot:
        """The episode's state, to ``restore`` later (also in another process: it pickles). The steps after a
        restore equal the steps after the snapshot. The user model must pickle (``"rule"`` and ``None`` do)."""
        if self.session is None:
            raise ResetNeeded("Call reset() before snapshot().")
        return EnvSnapshot(
            self.task_set, pickle.dumps({name: getattr(self, name) for name in EPISODE_STATE}), self._settings()
        )

    def restore(self, snapshot: EnvSnapshot) -> None:
        """Resume from ``snapshot`` (this env's current episode is closed); the snapshot stays reusable."""
        if not isinstance(snapshot, EnvSnapshot):
            raise TypeError(f"restore() takes an EnvSnapshot from snapshot(), got {type(snapshot).__name__}.")
        mine, theirs = dict(self._settings()), dict(snapshot.settings)
        differing = [name for name in SNAPSHOT_SETTINGS if theirs.get(name) != mine[name]]
        if differing:
            raise ValueError(
                "The snapshot was taken under other env settings: "
                + ", ".join(f"{name}={theirs.get(name)!r} (this env: {mine[name]!r})" for name in differing)
                + "."
            )
        state = pickle.loads(snapshot.data)
        self.close()
        self.__dict__.update(state)

    # --- helpers ---
    def _settings(self) -> tuple[tuple[str, Any], ...]:
        values = {name: getattr(self, name) for name in SNAPSHOT_SETTINGS}
        values["faults"] = FaultProfile.parse(self.faults)  # 0.1, "0.1" and "rate=0.1" are one profile
        return tuple(values.items())

    def _task_from_options(self, options: Any) -> WorkflowTask | None:
        """The task ``options`` names, None to draw one, or ValueError naming the valid options."""
        if options is None:
            return None
        if not isinstance(options, Mapping):
            raise ValueError(f"options must be a dict or None, got {type(options).__name__}. {RESET_OPTIONS}")
        unknown = sorted(repr(key)[:60] for key in options if key not in ("task_id", "task_index"))
        if unknown:
            raise ValueError(f"Unknown reset option(s) {', '.join(unknown)}. {RESET_OPTIONS}")
        if len(options) > 1:
            raise ValueError(f"Give task_id or task_index, not both. {RESET_OPTIONS}")
        tasks = self.tasks  # a fresh list per access
        if "task_id" in options:
            task_id = options["task_id"]
            match = next((t for t in tasks if t.task_id == task_id), None) if isinstance(task_id, str) else None
            if match is None:
                shown = ", ".join(t.task_id for t in tasks[:3])
                raise ValueError(
                    f"task_id {repr(task_id)[:80]} is not a task of {self.task_set!r}; its {len(tasks)} "
                    f"ids are {shown}, ... (env.unwrapped.tasks)."
                )
            return match
        if "task_index" in options:
            index = options["task_index"]
            if not isinstance(index, (int, np.integer)) or isinstance(index, bool) or not 0 <= index < len(tasks):
                raise ValueError(
                    f"task_index must be an int from 0 to {len(tasks) - 1} ({self.task_set!r} has "
                    f"{len(tasks)} tasks), got {repr(index)[:80]}."
                )
            return tasks[int(index)]
        return None

    def _episode(self) -> tuple[erp_sim.ErpSession, Any]:
        """The episode's session and task: the step helpers run inside an episode (step() checked it)."""
        if self.session is None or self.task is None:
            raise ResetNeeded("Call reset() before step().")
        return self.session, self.task

    def _call_tool(self, tool: erp_sim.Tool, arguments: BaseModel) -> tuple[str, dict]:
        response = self._episode()[0].call_parsed(tool, arguments)
        self._counts["tool_calls"] += 1
        if response.is_error:
            self._counts["tool_errors"] += 1
        self._refresh_progress()
        if self._progress.success:
            self._termination = "success"
        return response.text, {"tool": response.tool, "is_error": response.is_error, "error_code": response.error_code}

    def _refresh_progress(self) -> None:
        """Cheap: grading caches its database reads until the next write."""
        session = self._episode()[0]
        self._progress = session.workflow.grader.progress(session, self._line_id)

    def _message_user(self, message: str) -> str:
        self._counts["user_turns"] += 1
        if self.user is None:
            self._termination = "stalled"
            return ""
        session, task = self._episode()
        view = UserView(task, self._counts["user_turns"], session.grade)
        reply = self.user.reply(message, view)
        if reply.ends_conversation:
            self._termination = "user_ended"
        elif self._counts["user_turns"] >= self.max_user_turns:
            self._termination = "user_turn_limit"
        return str(reply.text)

    def _invalid_action(self, reason: str) -> str:
        self._counts["invalid_actions"] += 1
        return render(error_envelope(self._episode()[0].session_id, "InvalidAction", reason))

    def _reward(self) -> float:
        if self.reward_shaping == "none":
            return 1.0 if self._termination == "success" and rewarded(self._progress, self.reward) else 0.0
        # phi(s') - phi(s) of the episode's own states: restore refuses a snapshot taken under other
        # shaping, so _potential is always this env's
        value = potential(self._progress, self.reward)
        shaped, self._potential = value - self._potential, value
        return float(shaped)

    def _info(
        self, kind: str | None = None, tool: str | None = None, is_error: bool = False, error_code: str | None = None
    ) -> dict:
        info = {
            "task": dict(self._task_info),
            "grade": progress_info(self._progress, self._episode()[0].workflow),
            "counts": dict(self._counts),
            "termination_reason": self._termination,
            "reward": self.reward,
        }
        if kind == "invalid":
            info["action"] = {"kind": kind, "tool": tool, "is_error": True, "error_code": "InvalidAction"}
        elif kind is not None:
            info["action"] = {"kind": kind, "tool": tool, "is_error": is_error, "error_code": error_code}
        return info


#: The env's name before a workflow was a folder (itemization's ids made it): the same class.
ExpenseItemizationEnv = ErpEnv


def expense_env_of(env: gym.Env) -> ErpEnv:
    """``env.unwrapped`` typed as what every erp_sim env id makes, for its evaluator methods (grade, tasks)."""
    return cast("ErpEnv", env.unwrapped)
