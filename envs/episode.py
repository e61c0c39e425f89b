"""One episode API under every training adapter (TRL, OpenEnv, verifiers): start, act, grade.

    episode = Episode("erp_sim/ExpenseItemization-v0", verbosity="compact")
    messages = episode.start(task_id="hotel-012")   # [system, user]: the chat a model starts from
    tools = episode.tools                           # 22 ERP tools + send_message_to_user, OpenAI form
    turn = episode.call_tool("form_find_menu_item", {"menuItemFilter": "expense"})
    turn = episode.send_message("Done: the line is itemized.")
    turn.observation, turn.done, episode.reward, episode.metrics()

Each adapter is a thin translation of this: TRL tool methods (``trl_adapter``), an OpenEnv server
(``openenv``), a verifiers environment (``verifiers_env``). Training defaults to ``reward="strict"``
(``"success"`` pays for one line holding the whole amount). The episode wraps the registered gym env
(``TimeLimit`` included), so every adapter sees the same observations, rewards and counts as ``env.step``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

import erp_sim
from erp_sim import task_sets, workflows
from erp_sim.envs import DEFAULT_ENV_ID
from erp_sim.envs.expense_env import expense_env_of

TRAINING_DEFAULTS = {"reward": "strict"}
MESSAGE_TOOL = "send_message_to_user"
MESSAGE_TOOL_SCHEMA = {
    "type": "function",
    "function": {
        "name": MESSAGE_TOOL,
        "description": "Send a message to the user (the employee who owns the expense report) and return their reply.",
        "parameters": {
            "type": "object",
            "properties": {
                "message": {
                    "type": "string",
                    "description": "The message to the user, e.g. a question or a report that the itemization is done.",
                }
            },
            "required": ["message"],
            "additionalProperties": False,
        },
    },
}
COUNTS = ("invalid_actions", "tool_errors", "tool_calls", "user_turns", "steps")


def graded_metrics(task_set: str) -> tuple[str, ...]:
    """The grade's figures ``Episode.metrics`` logs for a task set: strict success, success, and its workflow's
    fraction of the task done (the grader's ``fraction``: itemized_fraction for itemization)."""
    fraction = workflows.load(task_sets.workflow_of(task_set)).grader.fraction
    return ("strict_success", "success", *([fraction] if fraction else []))


def metric_names(env_id: str = DEFAULT_ENV_ID) -> tuple[str, ...]:
    """What ``Episode.metrics`` logs for an env id: its grade's figures, then the action counts."""
    return (*graded_metrics(gym.spec(env_id).kwargs["task_set"]), *COUNTS)


def logged_metrics(env_id: str = DEFAULT_ENV_ID) -> tuple[str, ...]:
    """What the training adapters log beside the reward (at weight 0): strict success, the workflow's fraction
    of the task done (itemized_fraction for itemization), invalid actions and tool errors."""
    graded = [name for name in metric_names(env_id) if name not in ("success", *COUNTS)]
    return (*graded, "invalid_actions", "tool_errors")


METRICS = metric_names()  # the default env id's


NO_EPISODE = "No episode is running: start one (reset) first."


class EpisodeError(ValueError):
    """An action the episode cannot take: none started yet, or it is over. Nothing changed."""


def tool_schemas() -> list[dict]:
    """The agent's tools in OpenAI function form: the 22 ERP tools, then ``send_message_to_user``."""
    return [*erp_sim.openai_tool_schemas(), MESSAGE_TOOL_SCHEMA]


@dataclass(frozen=True)
class Turn:
    """What one action returns: the text the agent reads, the step's reward, whether the episode ended."""

    observation: str
    reward: float
    done: bool
    truncated: bool
    invalid: bool  # the env could not parse or run the action (it counts in invalid_actions)
    info: dict


class Episode:
    """One gym env of ``env_id`` (``reward="strict"`` unless ``env_kwargs`` say otherwise), played one episode at a time."""

    def __init__(self, env_id: str = DEFAULT_ENV_ID, **env_kwargs: Any):
        self.env_id, self.env_kwargs = env_id, {**TRAINING_DEFAULTS, **env_kwargs}
        self.env = gym.make(env_id, **self.env_kwargs)
        self._graded = graded_metrics(expense_env_of(self.env).task_set)
        self.metric_names = (*self._graded, *COUNTS)  # what metrics() logs
        self.started = self.done = self.truncated = False
        self.reward = 0.0  # the episode's return so far
        self.info: dict = {}

    @property
    def tools(self) -> list[dict]:
        return tool_schemas()

    @property
    def tasks(self) -> list[erp_sim.Task]:
        return expense_env_of(self.env).tasks

    def start(self, task_id: str | None = None, task_index: int | None = None, seed: int | None = None) -> list[dict]:
        """Start an episode on a task (by id, by index, or drawn with ``seed``): the system and user messages.
        A bad id or index raises ValueError naming the valid ones, and the episode in progress goes on."""
        options = {key: value for key, value in (("task_id", task_id), ("task_index", task_index)) if value is not None}
        instruction, self.info = self.env.reset(seed=seed, options=options or None)
        self.started, self.done, self.truncated, self.reward = True, False, False, 0.0
        return [{"role": "system", "content": self.info.pop("system_prompt")}, {"role": "user", "content": instruction}]

    def call_tool(self, name: str, arguments: Any = None) -> Turn:
        """Call a tool by name (``send_message_to_user`` sends its ``message``); arguments as a dict or JSON text."""
        if name == MESSAGE_TOOL:  # the env's message action; another shape is its invalid action, keys named
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except (ValueError, RecursionError):  # the env names the JSON error
                    return self.act({"name": name, "arguments": arguments})
            if not isinstance(arguments, dict):
                return self.act({"message": arguments})
            if set(arguments) != {"message"}:  # never read as a tool call (its name and arguments): keys named
                return self.act({**arguments, "message": arguments.get("message")})
            return self.act(arguments)
        return self.act({"name": name, "arguments": {} if arguments is None else arguments})

    def send_message(self, message: str) -> Turn:
        return self.act({"message": message})

    def act(self, action: Any) -> Turn:
        """One env step with any action the env takes (a dict or JSON text); raises EpisodeError before
        ``start`` or after the episode ended (terminated or truncated)."""
        if not self.started:
            raise EpisodeError(NO_EPISODE)
        if self.done:
            raise EpisodeError("The episode is over: no more tool calls or messages; start a new one (reset).")
        observation, reward, terminated, truncated, self.info = self.env.step(action)
        self.reward += float(reward)
        self.done, self.truncated = bool(terminated or truncated), bool(truncated)
        return Turn(
            observation, float(reward), self.done, self.truncated, self.info["action"]["kind"] == "invalid", self.info
        )

    def grade(self) -> dict:
        """The full grade of the ERP's state now (``erp_sim.Grade`` as a dict): for evaluators, never the agent."""
        if not self.started:
            raise EpisodeError(NO_EPISODE)
        return expense_env_of(self.env).grade().model_dump(mode="json")

    def metrics(self) -> dict[str, float]:
        """The episode's figures for logging (``metric_names``): grade now and action counts; zeros before ``start``."""
        if not self.started:
            return dict.fromkeys(self.metric_names, 0.0)
        grade, counts = self.grade(), self.info["counts"]
        return {**{name: float(grade[name]) for name in self._graded}, **{name: float(counts[name]) for name in COUNTS}}

    def close(self) -> None:
        self.env.close()
        self.started = False
