"""The env as a TRL ``environment_factory``: tools as typed methods, the reward from ``get_reward()``.

TRL's ``GRPOTrainer`` (1.16) makes one instance per rollout with no arguments, calls
``reset(**dataset_row)``, exposes every public method of the class but ``reset`` and ``get_reward`` as
a function-calling tool (schema from the signature and the ``Args:`` docstring), turns a raised
exception into a tool result ``{"error": ...}`` that counts in its ``tools/failure_frequency``, and
adds ``get_reward()`` as a reward source of weight 1. Methods are generated from ``erp_sim.TOOLS``, so
they always match the registry the MCP server and the env use; the episode is ``erp_sim.envs.episode``.

    trainer = GRPOTrainer(model=..., train_dataset=Dataset.from_list(training_rows(verbosity="compact")),
                          reward_funcs=METRIC_FUNCS, args=GRPOConfig(reward_weights=[0.0] * len(METRIC_FUNCS),
                          max_completion_length=COMPACT_COMPLETION_TOKENS, ...),
                          environment_factory=tool_env_factory(verbosity="compact"))

- Prompts are a system and a user turn (``training_rows``): ``reset`` returns None, so TRL appends
  nothing, and chat templates that need a user query (Qwen3, Llama 3.1) render.
- ``tool_env_factory(env_id, **env_kwargs)`` is a ``functools.partial`` of the module-level class:
  it pickles, as TRL's async trainer needs. ``reward="strict"`` unless the kwargs say otherwise.
- ``METRIC_FUNCS`` log strict success, the itemized fraction, invalid actions and tool errors
  (``metric_funcs(env_id)``: another workflow's fraction); give them weight 0 so only ``get_reward`` trains.
- ``raise_on_invalid=True`` raises on an action the env refused (after the env counted it), so TRL's
  failure metric sees it; the model reads the same reason either way.
- Budget: an oracle episode's observations are long: 35.6k o200k tokens at the median of hotel_50 at
  ``verbosity="compact"`` (59.2k at default), 64.6k at most; train with ``verbosity="compact"`` and
  ``max_completion_length=COMPACT_COMPLETION_TOKENS`` (65,536), or shorter episodes get cut. TRL drops the last tool
  results that would overflow ``max_completion_length`` and ends the rollout, but those calls have
  already run: ``get_reward`` pays for the ERP's state, which includes them. The calls themselves
  stay in the completion that is trained on; only their results are missing. Raise
  ``max_completion_length`` (or pass ``mask_truncated_completions=True``) rather than train on such ends.
"""

from __future__ import annotations

import functools
import inspect
import json
from types import GenericAlias
from typing import Any, Optional, Union

import erp_sim
from erp_sim.envs.episode import DEFAULT_ENV_ID, Episode, logged_metrics

RETURNS = "The ERP's JSON response: SessionId, Result, Messages, FormState (the open form's state), ..."
_SCALARS = {"string": str, "integer": int, "number": float, "boolean": bool, "null": type(None), "object": dict}
# o200k tokens of the oracle's calls and observations over hotel_50 at compact verbosity: median 35.6k,
# longest 64.6k (default verbosity: 59.2k and 100.6k). A completion budget that fits the longest oracle
# episode; tests/envs/test_env_trl.py checks it still does.
COMPACT_COMPLETION_TOKENS = 65_536


class ErpToolEnv:
    """An episode of an env id (expense itemization by default) in the simulated D365 ERP; ``get_reward()`` is
    the episode's return so far."""

    def __init__(self, env_id: str = DEFAULT_ENV_ID, raise_on_invalid: bool = False, **env_kwargs: Any):
        self._episode = Episode(env_id, **env_kwargs)
        self._raise_on_invalid = raise_on_invalid

    def reset(self, **row) -> None:
        """Start an episode: ``task_id``, ``task_index`` and ``seed`` choose the task; other columns are ignored.
        Returns None: the prompt already holds the system and user turns (``training_rows``)."""
        self._episode.start(**{key: row[key] for key in ("task_id", "task_index", "seed") if row.get(key) is not None})

    def get_reward(self) -> float:
        """The episode's return so far (TRL calls it once per finished rollout)."""
        return self._episode.reward

    # Read-only state for reward and metric functions (properties: TRL lists functions only as tools).
    reward = property(lambda self: self._episode.reward)
    done = property(lambda self: self._episode.done)
    info = property(lambda self: self._episode.info)
    metrics = property(lambda self: self._episode.metrics())

    def send_message_to_user(self, message: str) -> str:
        """
        Send a message to the user (the employee who owns the expense report) and return their reply.

        Args:
            message: The message to the user, e.g. a question or a report that the itemization is done.

        Returns:
            The user's reply.
        """
        return self._act({"message": message})

    def _act(self, action: dict) -> str:
        turn = self._episode.act(action)  # EpisodeError (a ValueError) after the end: TRL counts it as a failure
        if turn.invalid and self._raise_on_invalid:
            raise ValueError(json.loads(turn.observation)["Error"]["Message"])
        return turn.observation


def tool_env_factory(env_id: str = DEFAULT_ENV_ID, **kwargs: Any) -> functools.partial:
    """A picklable zero-argument factory of ``ErpToolEnv`` for another env id, env kwargs or ``raise_on_invalid``."""
    return functools.partial(ErpToolEnv, env_id, **kwargs)


def reward_func(environments, **kwargs) -> list[float]:
    """TRL reward function: each rollout's return (for trainers that do not read ``get_reward``)."""
    return [environment.get_reward() for environment in environments]


def _metric_func(name: str):
    def metric(environments, **kwargs) -> list[float]:
        return [environment.metrics[name] for environment in environments]

    metric.__name__ = metric.__qualname__ = name  # TRL logs rewards/<name>
    metric.__doc__ = f"The episode's {name.replace('_', ' ')}: log it with reward weight 0."
    return metric


def metric_funcs(env_id: str = DEFAULT_ENV_ID) -> list:
    """TRL metric functions for an env id's episodes: strict success, its workflow's fraction of the task done
    (itemized_fraction for itemization), invalid actions and tool errors; give them reward weight 0."""
    return [_metric_func(name) for name in logged_metrics(env_id)]


METRIC_FUNCS = metric_funcs()  # the default env id's


def training_rows(env_id: str = DEFAULT_ENV_ID, **env_kwargs: Any) -> list[dict]:
    """One dataset row per task of the env's task set: ``prompt`` (system + user turns) and ``task_id`` for reset."""
    episode = Episode(env_id, **env_kwargs)
    rows = [
        {"prompt": episode.start(task_index=index), "task_id": task.task_id} for index, task in enumerate(episode.tasks)
    ]
    episode.close()
    return rows


# --- tool methods, generated from the registry ---------------------------------------------------
def _annotation(schema: dict) -> Any:
    """A Python type for a JSON schema, in the forms transformers' ``get_json_schema`` understands.

    Enums become ``str`` plus a ``(choices: [...])`` note in the description (older transformers
    reject ``Literal``); nested objects become ``dict``, their fields described in the docstring.
    """
    if "anyOf" in schema:
        members = tuple(dict.fromkeys(_annotation(s) for s in schema["anyOf"]))
        return Union[members] if len(members) > 1 else members[0]  # noqa: UP007 (built at run time from a tuple)
    if "$ref" in schema:
        return dict
    if "enum" in schema:
        return str
    kind = schema.get("type", "")
    if kind == "array":  # list[X] with X built at run time
        return GenericAlias(list, (_annotation(schema.get("items", {})),))
    return _SCALARS.get(kind, str)


def _describe(schema: dict, defs: dict) -> str:
    """One line: the description, plus the fields of nested objects (TRL only sees ``dict`` for those)."""
    text = schema.get("description", "").strip()
    ref = schema.get("$ref") or schema.get("items", {}).get("$ref")
    if ref:
        nested = defs[ref.rsplit("/", 1)[-1]]
        fields = "; ".join(
            f"{key}: {value.get('description', '').rstrip('.')}" for key, value in nested.get("properties", {}).items()
        )
        text += f" Each item is an object with {fields}."
    if "default" in schema and schema["default"] not in (None, "", [], {}):
        text += f" Default: {json.dumps(schema['default'])}."
    choices = next((s["enum"] for s in [schema, *schema.get("anyOf", [])] if "enum" in s), None)
    if choices:
        text += f" (choices: {json.dumps(choices)})"
    return " ".join(text.split())


def _tool_method(tool: erp_sim.Tool):
    schema = tool.input_schema
    properties, required, defs = schema.get("properties", {}), set(schema.get("required", [])), schema.get("$defs", {})
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    for name, prop in properties.items():
        annotation = _annotation(prop)
        if name not in required:
            annotation = Optional[annotation]  # noqa: UP045 (transformers reads Optional to mark a parameter optional)
        annotations[name] = annotation
        parameters.append(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=annotation,
                default=inspect.Parameter.empty if name in required else None,
            )
        )
    annotations["return"] = str

    def method(self, **arguments) -> str:
        return self._act({"name": tool.name, "arguments": {k: v for k, v in arguments.items() if v is not None}})

    args_doc = "".join(f"\n    {name}: {_describe(prop, defs)}" for name, prop in properties.items())
    method.__name__ = method.__qualname__ = tool.name
    method.__doc__ = f"{tool.description}\n\nArgs:{args_doc or chr(10) + '    (none)'}\n\nReturns:\n    {RETURNS}"
    method.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]  # inspect reads it; typeshed's functions lack it
    method.__annotations__ = annotations
    return method


for _tool in erp_sim.TOOLS.values():
    setattr(ErpToolEnv, _tool.name, _tool_method(_tool))
