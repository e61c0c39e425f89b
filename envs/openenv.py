"""The env as an OpenEnv environment (openenv-core 0.3): typed Action, Observation and State, a server, a client.

    erp-sim serve --openenv --port 8000          # reset/step/state over WebSocket (/ws) and HTTP

    from erp_sim.envs.openenv import ErpAction, ErpEnvClient
    with ErpEnvClient(base_url="http://127.0.0.1:8000").sync() as env:
        result = env.reset(task_id="hotel-012")       # observation.messages: system + user turns; .tools
        result = env.step(ErpAction(tool="form_find_menu_item", arguments={"menuItemFilter": "expense"}))
        result = env.step(ErpAction(message="Done."))  # a message to the simulated user

Everything a trainer needs is a typed field, because OpenEnv's wire format drops ``Observation.metadata``:
the observation text, the action's kind and error code, the live grade, the counts, the final grade on
the last step, truncation. Each WebSocket session has its own episode (``max_sessions`` at once). OpenEnv's
HTTP ``/reset`` and ``/step`` are stateless (a fresh environment per request): ``/reset`` shows a task's
first observation, and ``/step`` answers with an error observation (``error_code="ResetNeeded"``), as does
a WebSocket step before reset; episodes are played over the WebSocket client.

An action of any shape is a step: what is no tool call or message (``tool: 5``, ``message: 7``, an unknown
field, both or neither) is the env's invalid action, counted and paid 0, as a tool call the ERP refuses is;
``arguments`` may be an object, JSON text of one (as in OpenAI tool calls) or null. What is not done (a step
after the end, a refused reset) is an error observation carrying the episode's figures as they stand, never
a server error. The transport's limits (message sizes, idle sessions, capacity) are ``openenv_guard``'s.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import math
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any

import uvicorn
from openenv.core import EnvClient
from openenv.core.client_types import StepResult
from openenv.core.env_server import Action, Environment, Observation, State, create_app
from pydantic import ConfigDict, Field, WithJsonSchema

from erp_sim.envs import ENV_IDS
from erp_sim.envs.action_checks import InvalidAction
from erp_sim.envs.episode import DEFAULT_ENV_ID, NO_EPISODE, Episode, EpisodeError
from erp_sim.envs.openenv_guard import (
    DEFAULT_CONNECT_RATE,
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_READ_RATE,
    OpenEnvGuard,
)
from erp_sim.json_values import json_value_problem
from erp_sim.net import DEFAULT_BODY_TIMEOUT_S, DEFAULT_HEADER_TIMEOUT_S, guarded_h11, is_loopback, port_number
from erp_sim.response import error_envelope, render
from erp_sim.verbosity import VERBOSITIES

DEFAULT_MAX_SESSIONS = 64
MIN_MESSAGE_BYTES = 4096  # a reset and an ordinary tool call fit
MAX_EPISODE_ID_CHARS = 256
_TEXT_OR_NULL = WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "null"}]})
_SHAPES = 'An action is {"tool": "<tool name>", "arguments": {...}} or {"message": "<text for the user>"}.'


class ErpAction(Action):
    """A tool call (``tool`` and ``arguments``; ``send_message_to_user`` is a message) or a ``message`` to the user.

    Any fields and types are taken (the schema says what is meant): whatever is no tool call or message is
    judged by the environment, as a counted invalid action, so a wrongly shaped action never fails a rollout
    in OpenEnv's validation. ``metadata`` (OpenEnv's) is ignored."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"additionalProperties": False})

    tool: Annotated[Any, _TEXT_OR_NULL] = Field(None, description="An ERP tool's name (or send_message_to_user).")
    arguments: Annotated[Any, WithJsonSchema({"anyOf": [{"type": "object"}, {"type": "string"}, {"type": "null"}]})] = (
        Field(default_factory=dict, description="The tool's arguments: an object, JSON text of one, or null.")
    )
    message: Annotated[Any, _TEXT_OR_NULL] = Field(None, description="A message to the user, instead of a tool call.")
    metadata: Annotated[Any, WithJsonSchema({"type": "object"})] = Field(
        default_factory=dict, description="Ignored (OpenEnv's field for the client's own use)."
    )


def action_problem(action: ErpAction) -> str | None:
    """Why ``action`` is no tool call and no message (None: it is one of them)."""
    unknown = sorted(repr(key)[:40] for key in action.model_extra or {})
    if unknown:
        return f"Unknown action field(s) {', '.join(unknown[:10])}. {_SHAPES}"
    tool, arguments, message = action.tool, action.arguments, action.message
    if tool is not None and not isinstance(tool, str):
        return f"tool must be a tool's name (a string), got {type(tool).__name__}. {_SHAPES}"
    if message is not None and not isinstance(message, str):
        return f"message must be text (a string), got {type(message).__name__}. {_SHAPES}"
    if (tool is None) == (message is None):
        return f"Give a tool or a message, {'not both' if tool is not None else 'neither was given'}. {_SHAPES}"
    if message is not None and not (arguments is None or (isinstance(arguments, (dict, str)) and not arguments)):
        return f"arguments go with a tool, not with a message. {_SHAPES}"
    return None


class ErpObservation(Observation):
    """What the agent reads (``text``) and what a trainer logs; ``reward`` and ``done`` as OpenEnv defines them."""

    text: str = Field(default="", description="The tool's response, the user's reply, or the error.")
    messages: list[dict[str, str]] = Field(default_factory=list, description="On reset: the system and user turns.")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="On reset: the tools in OpenAI form.")
    action_kind: str | None = Field(default=None, description="tool, message or invalid (None on reset).")
    is_error: bool = Field(default=False, description="The action failed: refused, or the ERP answered with an error.")
    error_code: str | None = Field(default=None, description="InvalidAction, ResetNeeded, the ERP's code, ...")
    success: bool = Field(default=False, description="The live grade: the task is done by its workflow's rule.")
    progress: dict[str, Any] = Field(
        default_factory=dict, description="The live grade as info['grade'] holds it: the workflow's progress fields."
    )
    itemized_fraction: float = Field(default=0.0, description="Itemization: saved itemized amount / the task's amount.")
    remaining_amount: str = Field(default="", description="Itemization: the task's amount minus saved itemized lines.")
    counts: dict[str, int] = Field(
        default_factory=dict, description="steps, tool_calls, invalid_actions, tool_errors, user_turns."
    )
    episode_return: float = Field(default=0.0, description="The sum of the episode's rewards so far.")
    termination_reason: str | None = Field(default=None, description="Set when the episode ended.")
    truncated: bool = Field(default=False, description="Ended by the step limit.")
    final_grade: dict[str, Any] | None = Field(
        default=None, description="The full grade (the workflow's model) when the episode ended."
    )


class ErpState(State):
    """The session's episode: the task and its counts."""

    env_id: str = DEFAULT_ENV_ID
    task_id: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    episode_return: float = 0.0
    done: bool = False


class ErpEnvironment(Environment[ErpAction, ErpObservation, ErpState]):
    """One ``erp_sim.envs.episode.Episode`` per session; ``reset(task_id=..., task_index=..., seed=...)``."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # every session gets its own Episode (ERP session, user, counters)

    def __init__(self, env_id: str = DEFAULT_ENV_ID, **env_kwargs: Any):
        super().__init__()
        self._env_id, self._env_kwargs = env_id, env_kwargs
        self._episode_id: str | None = None
        self._thread: ThreadPoolExecutor | None = None  # reset_async and step_async run here

    @functools.cached_property
    def _episode(self) -> Episode:
        """Made at first use: a connection that never resets or steps (refused, idle, abusive) costs no gym env."""
        return Episode(self._env_id, **self._env_kwargs)

    # openenv-core awaits these when defined, and else hands reset and step to a helper of its own whose
    # parameters (func, session_id) a client's option of the same name collided with: a TypeError, a 500
    async def reset_async(self, /, **options: Any) -> ErpObservation:  # reset validates the options
        return await self._on_own_thread(self.reset, **options)

    async def step_async(self, action: ErpAction, /, **options: Any) -> ErpObservation:
        if not self._started:  # ResetNeeded, at once (every stateless HTTP /step)
            return self.step(action, **options)
        return await self._on_own_thread(self.step, action, **options)

    @property
    def _started(self) -> bool:
        return "_episode" in self.__dict__ and self._episode.started

    async def _on_own_thread(self, work: Callable[..., ErpObservation], /, *args: Any, **kwargs: Any) -> ErpObservation:
        """``work`` on this environment's own thread, as openenv-core runs a session's (a slow call delays only
        its own session)."""
        if self._thread is None:
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="erp-session")
        return await asyncio.get_running_loop().run_in_executor(self._thread, functools.partial(work, *args, **kwargs))

    # ``self`` is positional-only, so a client's option named "self" is an unknown option, not a TypeError
    def reset(
        self,
        /,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | None = None,
        task_index: int | None = None,
        **kwargs: Any,
    ) -> ErpObservation:
        if kwargs:
            shown = ", ".join(sorted(repr(key)[:40] for key in kwargs)[:10])
            return self._refusal("ResetRefused", f"Unknown reset option(s) {shown}: give task_id, task_index or seed.")
        if episode_id is not None and not (
            isinstance(episode_id, str)
            and len(episode_id) <= MAX_EPISODE_ID_CHARS
            and not json_value_problem(episode_id, "episode_id")
        ):
            return self._refusal(
                "ResetRefused",
                f"episode_id must be text of up to {MAX_EPISODE_ID_CHARS} characters (or left out), got "
                f"{type(episode_id).__name__ if not isinstance(episode_id, str) else f'{len(episode_id):,} characters'}.",
            )
        try:
            messages = self._episode.start(task_id=task_id, task_index=task_index, seed=seed)
        except ValueError as exc:  # the env's one-line reason; a running episode goes on
            return self._refusal("ResetRefused", str(exc))
        self._episode_id = episode_id
        return self._observation(messages[-1]["content"], 0.0, messages=messages, tools=self._episode.tools)

    def step(self, action: ErpAction, /, timeout_s: float | None = None, **kwargs: Any) -> ErpObservation:
        if not self._started:
            return self._refusal("ResetNeeded", NO_EPISODE)
        problem = action_problem(action)
        if problem is not None:
            return self._play(lambda: self._episode.act(InvalidAction(problem)))
        if action.message is not None:
            return self._play(lambda: self._episode.send_message(action.message))
        return self._play(lambda: self._episode.call_tool(action.tool, action.arguments))

    def _play(self, act) -> ErpObservation:
        try:
            turn = act()
        except EpisodeError as exc:  # nothing was done, nothing counted
            return self._refusal("EpisodeOver" if self._started else "ResetNeeded", str(exc))
        return self._observation(turn.observation, turn.reward)

    def _refusal(self, code: str, message: str) -> ErpObservation:
        """An error observation for what was not done: the episode's figures as they stand (done if it ended),
        or, before any episode, none (done: nothing runs)."""
        text = render(error_envelope(None, code, message))
        if not self._started:
            return ErpObservation(text=text, is_error=True, error_code=code, done=True, reward=0.0)
        return self._observation(text, 0.0, action={"kind": None, "is_error": True, "error_code": code})

    @property
    def state(self) -> ErpState:
        episode = self._episode
        info = episode.info if episode.started else {}
        return ErpState(
            episode_id=self._episode_id,
            step_count=info.get("counts", {}).get("steps", 0),
            env_id=episode.env_id,
            task_id=info.get("task", {}).get("task_id"),
            counts=info.get("counts", {}),
            episode_return=episode.reward,
            done=episode.done,
        )

    def close(self) -> None:
        if "_episode" in self.__dict__:
            self._episode.close()
        if self._thread is not None:
            self._thread.shutdown(wait=False)

    def _observation(self, text: str, reward: float, action: dict | None = None, **extra: Any) -> ErpObservation:
        """The episode as it stands, after ``text``; ``action`` (kind, is_error, error_code) is the last step's
        unless given."""
        episode, info = self._episode, self._episode.info
        action, grade = action or info.get("action") or {}, info["grade"]
        return ErpObservation(
            text=text,
            reward=reward,
            done=episode.done,
            action_kind=action.get("kind"),
            is_error=bool(action.get("is_error")),
            error_code=action.get("error_code"),
            success=grade["success"],
            progress=dict(grade),
            # itemization's figures by their names since before a workflow was a folder (defaults elsewhere)
            itemized_fraction=grade.get("itemized_fraction", 0.0),
            remaining_amount=grade.get("remaining_amount", ""),
            counts=info["counts"],
            episode_return=episode.reward,
            termination_reason=info["termination_reason"],
            truncated=episode.truncated,
            final_grade=episode.grade() if episode.done else None,
            **extra,
        )


class ErpEnvClient(EnvClient[ErpAction, ErpObservation, ErpState]):
    """OpenEnv's WebSocket client, typed for this environment."""

    def _step_payload(self, action: ErpAction) -> dict[str, Any]:
        return action.model_dump(exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[ErpObservation]:
        observation = ErpObservation(
            **payload.get("observation", {}), reward=payload.get("reward"), done=payload.get("done", False)
        )
        return StepResult(observation=observation, reward=payload.get("reward"), done=payload.get("done", False))

    def _parse_state(self, payload: dict[str, Any]) -> ErpState:
        return ErpState(**payload)


def build_app(
    env_id: str = DEFAULT_ENV_ID,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    *,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    idle_timeout_s: float | None = DEFAULT_IDLE_TIMEOUT_S,
    connect_rate: float = DEFAULT_CONNECT_RATE,
    read_rate: float = DEFAULT_READ_RATE,
    **env_kwargs: Any,
) -> OpenEnvGuard:
    """The ASGI app: OpenEnv's routes (/ws, /reset, /step, /state, /schema, /health) over ``ErpEnvironment``,
    behind ``OpenEnvGuard`` (message sizes, idle sessions, capacity; see ``erp_sim.envs.openenv_guard``)."""
    factory = functools.partial(ErpEnvironment, env_id, **env_kwargs)
    factory()._episode.close()  # bad env kwargs fail here, not at the first session
    app = create_app(factory, ErpAction, ErpObservation, env_name="erp_sim", max_concurrent_envs=max_sessions)
    return OpenEnvGuard(
        app,
        max_sessions=max_sessions,
        max_message_bytes=max_message_bytes,
        idle_timeout_s=idle_timeout_s,
        connect_rate=connect_rate,
        read_rate=read_rate,
    )


def main(argv: list[str] | None = None) -> int:
    """``erp-sim serve --openenv [--host H] [--port P] [--env ID] [--verbosity V] [--max-sessions N]
    [--max-message-bytes B] [--idle-timeout S] [--connect-rate R] [--read-rate B]``."""
    parser = argparse.ArgumentParser(prog="erp-sim serve --openenv", description="Serve the env over OpenEnv.")
    parser.add_argument(
        "--host", default="127.0.0.1", help="Bind address (default 127.0.0.1; others need --allow-remote)."
    )
    parser.add_argument("--allow-remote", action="store_true", help="Allow binding a non-loopback address.")
    parser.add_argument("--port", type=port_number, default=8000, help="Port (default 8000; 0: any free port).")
    parser.add_argument("--env", default=DEFAULT_ENV_ID, choices=ENV_IDS, help="Env id (default %(default)s).")
    parser.add_argument("--verbosity", choices=VERBOSITIES, default="default", help="Response verbosity.")
    parser.add_argument("--reward", choices=("strict", "success"), default="strict", help="Reward (default strict).")
    parser.add_argument("--max-sessions", type=int, default=DEFAULT_MAX_SESSIONS, help="Concurrent WebSocket sessions.")
    for flag, kind, default, explained in (
        ("--max-message-bytes", int, DEFAULT_MAX_MESSAGE_BYTES, "Largest WebSocket message or HTTP body"),
        ("--idle-timeout", float, DEFAULT_IDLE_TIMEOUT_S, "Seconds a WebSocket session may send nothing (0: never)"),
        (
            "--connect-rate",
            float,
            DEFAULT_CONNECT_RATE,
            "New WebSocket connections a second beyond a burst of --max-sessions; more wait (0: no limit)",
        ),
        (
            "--read-rate",
            float,
            DEFAULT_READ_RATE,
            "Bytes a second a session's messages are read at beyond a burst of four at --max-message-bytes; "
            "more wait (0: no limit)",
        ),
        ("--http-header-timeout", float, DEFAULT_HEADER_TIMEOUT_S, "Seconds a client has to send its request headers"),
        ("--http-body-timeout", float, DEFAULT_BODY_TIMEOUT_S, "Seconds a client has to send its request body"),
    ):
        parser.add_argument(flag, type=kind, default=default, help=f"{explained} (default {default:,}).")
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)

    if not is_loopback(args.host) and not args.allow_remote:  # the MCP server's rule: no LAN server by accident
        print(
            f"erp-sim serve --openenv: {args.host} is not a loopback address; pass --allow-remote to serve other "
            "machines (OpenEnv has no authentication: put it behind a proxy that has).",
            file=sys.stderr,
        )
        return 2
    problem = None
    if args.max_sessions < 1:
        problem = "--max-sessions must be at least 1"
    elif args.max_message_bytes < MIN_MESSAGE_BYTES:
        problem = f"--max-message-bytes must be at least {MIN_MESSAGE_BYTES:,}"
    elif not 0 <= args.idle_timeout < math.inf:  # NaN too
        problem = "--idle-timeout must be 0 (never) or a number of seconds"
    elif not 0 <= args.connect_rate < math.inf:
        problem = "--connect-rate must be 0 (no limit) or a number of connections a second"
    elif not 0 <= args.read_rate < math.inf:
        problem = "--read-rate must be 0 (no limit) or a number of bytes a second"
    elif not (0 < args.http_header_timeout < math.inf and 0 < args.http_body_timeout < math.inf):
        problem = "--http-header-timeout and --http-body-timeout must be numbers of seconds above 0"
    if problem:
        print(f"erp-sim serve --openenv: {problem}.", file=sys.stderr)
        return 2
    app = build_app(
        args.env,
        args.max_sessions,
        max_message_bytes=args.max_message_bytes,
        idle_timeout_s=args.idle_timeout,
        connect_rate=args.connect_rate,
        read_rate=args.read_rate,
        verbosity=args.verbosity,
        reward=args.reward,
    )
    logging.basicConfig(stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    for name in ("erp_sim.openenv", "erp_sim.net"):  # the guard's and the HTTP deadlines' lines
        logging.getLogger(name).setLevel(args.log_level.upper())
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        ws_max_size=args.max_message_bytes,  # refused from the frame's header, before its payload is read
        # no permessage-deflate: deflating each answer (2-12 KB of JSON) cost 0.35 ms of the event loop's
        # 0.9 ms per step at 64 sessions, its largest cost; on loopback or a LAN the bytes cost less
        ws_per_message_deflate=False,
        # request headers and bodies must arrive in time; stalled connections are shed
        http=guarded_h11(args.http_header_timeout, args.http_body_timeout),
        loop="asyncio",  # the deadlines above hold under asyncio's loop (not under uvloop: see guarded_h11)
    )
    return 0
