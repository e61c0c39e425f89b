"""The env as a verifiers environment (verifiers 0.3, its classic ``MultiTurnEnv`` API): rollouts, a rubric, a dataset.

    from erp_sim.envs.verifiers_env import load_environment
    env = load_environment(env_id="erp_sim/ExpenseItemization-v0", verbosity="compact")
    results = env.evaluate_sync(client=vf.ClientConfig(...) or a vf Client, model="...", num_examples=5)

    # or through verifiers' loader (its first argument is the module; the gym id is then ``erp_env_id``):
    env = vf.load_environment("erp_sim.envs.verifiers_env", erp_env_id="erp_sim/MealsItemization-v0")

Each dataset row is one task: ``prompt`` (the system and user turns) and ``info.task_id``; no ``task`` or
``env_id`` column, since verifiers reserves the first and drops the second (it also overwrites the
environment's ``env_id`` with its loader's argument: the gym id lives in ``erp_env_id``). Every rollout
plays one ``erp_sim.envs.episode.Episode``: each tool call of the model is one env step, answered by a
tool message; an assistant turn without tool calls is a message to the simulated user, answered by a
user turn. The rollout stops when the episode ends (success, the user, the step limit). The rubric pays
the episode's return (``reward="strict"`` by default: 1.0 for the receipt's charges itemized) and logs
strict success, the itemized fraction, invalid actions and tool errors with weight 0.
"""

from __future__ import annotations

import json
from typing import Any

import verifiers as vf
from datasets import Dataset

from erp_sim.envs import registered_step_limit
from erp_sim.envs.episode import DEFAULT_ENV_ID, Episode, EpisodeError, tool_schemas
from erp_sim.response import error_payload

LOGGED_METRICS = ("strict_success", "itemized_fraction", "invalid_actions", "tool_errors")


def dataset_rows(env_id: str = DEFAULT_ENV_ID, **env_kwargs: Any) -> list[dict]:
    """One row per task of the env's task set: ``prompt`` (system + user turns), ``info`` (the task id)."""
    episode = Episode(env_id, **env_kwargs)
    rows = [
        {"prompt": episode.start(task_index=index), "info": {"task_id": task.task_id}}
        for index, task in enumerate(episode.tasks)
    ]
    episode.close()
    return rows


class ErpMultiTurnEnv(vf.MultiTurnEnv):
    """Expense itemization in the simulated D365 ERP, one ``Episode`` per rollout."""

    def __init__(
        self,
        erp_env_id: str = DEFAULT_ENV_ID,
        env_kwargs: dict | None = None,
        max_turns: int | None = None,
        **kwargs: Any,
    ):
        self.erp_env_id, self.erp_env_kwargs = erp_env_id, dict(env_kwargs or {})
        rows = lambda: Dataset.from_list(dataset_rows(erp_env_id, **self.erp_env_kwargs))
        tools = [schema["function"] for schema in tool_schemas()]
        super().__init__(
            dataset=rows,
            eval_dataset=rows,
            tool_defs=tools,
            rubric=episode_rubric(),
            max_turns=max_turns or step_limit(erp_env_id, self.erp_env_kwargs),
            **kwargs,
        )

    async def setup_state(self, state: vf.State) -> vf.State:
        episode = Episode(self.erp_env_id, **self.erp_env_kwargs)
        try:
            episode.start(task_id=state["info"]["task_id"])
        except (KeyError, TypeError, ValueError) as exc:  # a row without a task of this env's set
            episode.close()
            raise vf.Error(f"The row names no task of {self.erp_env_id}: {exc}") from exc
        state["erp_episode"] = episode
        return state

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> vf.Messages:
        episode: Episode = state["erp_episode"]
        last = messages[-1]
        if last.tool_calls:
            replies = [
                vf.ToolMessage(tool_call_id=call.id, content=_play(episode, call.name, call.arguments))
                for call in last.tool_calls
            ]
        else:
            replies = [vf.UserMessage(content=_play(episode, None, _text(last.content)))]
        if episode.done:
            state["final_env_response"] = replies
        return replies

    @vf.cleanup
    async def close_episode(self, state: vf.State) -> None:
        """Keep the episode's figures for the rubric (which scores after cleanup), then free the ERP session."""
        episode: Episode | None = state.pop("erp_episode", None)
        if episode is not None:
            state["erp_return"], state["erp_metrics"] = episode.reward, episode.metrics()
            episode.close()


def step_limit(env_id: str, env_kwargs: dict) -> int:
    """The episode's env step limit (``max_episode_steps``, else the id's registered one): every turn is one
    step or more, so a rollout of this many turns always reaches the episode's own end."""
    limit = env_kwargs.get("max_episode_steps")
    return limit if isinstance(limit, int) and limit > 0 else registered_step_limit(env_id)


def _play(episode: Episode, tool: str | None, payload: str) -> str:
    """One env step (a tool call with JSON arguments, or a message): the text the model reads next."""
    try:
        turn = episode.call_tool(tool, payload) if tool is not None else episode.send_message(payload)
    except EpisodeError as exc:  # more calls in the turn that ended the episode
        return json.dumps(error_payload("EpisodeOver", str(exc)))
    return turn.observation


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "".join(
            getattr(part, "text", None) or (part.get("text", "") if isinstance(part, dict) else "") for part in content
        )
    return content or ""


async def episode_return(state: vf.State) -> float:
    """The episode's return: what training maximises."""
    return float(state.get("erp_return", 0.0))


def _logged(name: str):
    async def metric(state: vf.State) -> float:
        return float(state.get("erp_metrics", {}).get(name, 0.0))

    metric.__name__ = metric.__qualname__ = name
    return metric


def episode_rubric() -> vf.Rubric:
    """The episode's return with weight 1; strict success, itemized fraction, invalid actions, tool errors at 0."""
    rubric = vf.Rubric(funcs=[episode_return], weights=[1.0])
    for name in LOGGED_METRICS:
        rubric.add_metric(_logged(name))
    return rubric


def load_environment(
    env_id: str = DEFAULT_ENV_ID,
    verbosity: str = "default",
    erp_env_id: str | None = None,
    max_turns: int | None = None,
    **env_kwargs: Any,
) -> ErpMultiTurnEnv:
    """The verifiers environment for a gym id (``env_id``, or ``erp_env_id`` through ``vf.load_environment``,
    which takes ``env_id`` for itself) with env kwargs (``reward="strict"`` unless given; ``max_episode_steps``
    sets the step limit). ``max_turns``: the rollout's turn limit, by default the episode's step limit (so
    the episode's own end stops it: success, the user, its step limit)."""
    return ErpMultiTurnEnv(erp_env_id or env_id, {"verbosity": verbosity, **env_kwargs}, max_turns=max_turns)
