"""The env as a TRL ``environment_factory`` class: tools as typed methods, state for the reward.

TRL's ``GRPOTrainer(environment_factory=ErpToolEnv, reward_funcs=reward_func, ...)`` creates
one instance per rollout with no arguments, calls ``reset(**dataset_row)`` (the returned
instruction is appended to the prompt), exposes every public method but ``reset`` as a
function-calling tool (schema from the signature and the ``Args:`` docstring), and feeds
exceptions back to the model as tool results. Methods are generated from ``erp_sim.TOOLS``,
so they always match the registry the MCP server and the env use.

    trainer = GRPOTrainer(model=..., train_dataset=Dataset.from_list(training_rows()),
                          reward_funcs=reward_func, environment_factory=ErpToolEnv)

Another id or env kwargs: ``environment_factory=tool_env_class("erp_sim/MealsItemization-v0",
reward_shaping="potential")``. The reward is ``"strict"`` unless the kwargs say otherwise: this is
the training path, and ``"success"`` pays for one line holding the whole amount.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Optional, Union

import gymnasium as gym

import erp_sim
import erp_sim.envs  # noqa: F401  (registers the ids)
from erp_sim.envs.prompts import system_prompt

DEFAULT_ENV_ID = "erp_sim/ExpenseItemization-v0"
RETURNS = "The ERP's JSON response: SessionId, Result, Messages, FormState (the open form's state), ..."
_SCALARS = {"string": str, "integer": int, "number": float, "boolean": bool, "null": type(None), "object": dict}


class ErpToolEnv:
    """Expense itemization in the simulated D365 ERP; after the episode ``reward`` and ``done`` are final."""

    env_id: str = DEFAULT_ENV_ID
    env_kwargs: dict = {"reward": "strict"}

    def __init__(self):
        self._env = gym.make(self.env_id, **self.env_kwargs)
        self.reward = 0.0
        self.done = False
        self.info: dict = {}

    def reset(self, **kwargs) -> str:
        """Start an episode. Dataset columns ``task_id``, ``task_index`` and ``seed`` choose the task; others are ignored."""
        options = {key: kwargs[key] for key in ("task_id", "task_index") if kwargs.get(key) is not None}
        observation, self.info = self._env.reset(seed=kwargs.get("seed"), options=options)
        self.reward, self.done = 0.0, False
        return observation

    def send_message_to_user(self, message: str) -> str:
        """
        Send a message to the user (the employee who owns the expense report) and return their reply.

        Args:
            message: The message to the user, e.g. a question or a report that the itemization is done.

        Returns:
            The user's reply.
        """
        return self._step({"message": message})

    def _step(self, action: dict) -> str:
        if self.done:
            raise ValueError("The episode is over: no more tool calls or messages.")
        observation, reward, terminated, truncated, self.info = self._env.step(action)
        self.reward += float(reward)
        self.done = bool(terminated or truncated)
        return observation


def reward_func(environments, **kwargs) -> list[float]:
    """TRL reward function: each rollout's return (1.0 for the receipt's charges itemized, by default)."""
    return [environment.reward for environment in environments]


def tool_env_class(env_id: str = DEFAULT_ENV_ID, **env_kwargs) -> type[ErpToolEnv]:
    """A zero-argument ``ErpToolEnv`` subclass bound to another env id or kwargs (``reward="strict"`` unless given)."""
    name = "ErpToolEnv_" + "".join(c if c.isalnum() else "_" for c in env_id)
    return type(name, (ErpToolEnv,), {"env_id": env_id, "env_kwargs": {**ErpToolEnv.env_kwargs, **env_kwargs}})


def training_rows(env_id: str = DEFAULT_ENV_ID) -> list[dict]:
    """One dataset row per task of the env's task set: the system prompt as ``prompt``, and ``task_id`` for reset."""
    task_set = gym.spec(env_id).kwargs["task_set"]
    return [{"prompt": [{"role": "system", "content": system_prompt(task)}], "task_id": task.task_id}
            for task in erp_sim.load_task_set(task_set)]


# --- tool methods, generated from the registry ---------------------------------------------------
def _annotation(schema: dict) -> Any:
    """A Python type for a JSON schema, in the forms transformers' ``get_json_schema`` understands.

    Enums become ``str`` plus a ``(choices: [...])`` note in the description (older transformers
    reject ``Literal``); nested objects become ``dict``, their fields described in the docstring.
    """
    if "anyOf" in schema:
        members = tuple(dict.fromkeys(_annotation(s) for s in schema["anyOf"]))
        return Union[members] if len(members) > 1 else members[0]
    if "$ref" in schema:
        return dict
    if "enum" in schema:
        return str
    kind = schema.get("type")
    if kind == "array":
        return list[_annotation(schema.get("items", {}))]
    return _SCALARS.get(kind, str)


def _describe(schema: dict, defs: dict) -> str:
    """One line: the description, plus the fields of nested objects (TRL only sees ``dict`` for those)."""
    text = schema.get("description", "").strip()
    ref = schema.get("$ref") or schema.get("items", {}).get("$ref")
    if ref:
        nested = defs[ref.rsplit("/", 1)[-1]]
        fields = "; ".join(f"{key}: {value.get('description', '').rstrip('.')}"
                           for key, value in nested.get("properties", {}).items())
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
            annotation = Optional[annotation]
        annotations[name] = annotation
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation,
                                            default=inspect.Parameter.empty if name in required else None))
    annotations["return"] = str

    def method(self, **arguments) -> str:
        return self._step({"name": tool.name, "arguments": {k: v for k, v in arguments.items() if v is not None}})

    args_doc = "".join(f"\n    {name}: {_describe(prop, defs)}" for name, prop in properties.items())
    method.__name__ = method.__qualname__ = tool.name
    method.__doc__ = f"{tool.description}\n\nArgs:{args_doc or chr(10) + '    (none)'}\n\nReturns:\n    {RETURNS}"
    method.__signature__ = inspect.Signature(parameters, return_annotation=str)
    method.__annotations__ = annotations
    return method


for _tool in erp_sim.TOOLS.values():
    setattr(ErpToolEnv, _tool.name, _tool_method(_tool))
