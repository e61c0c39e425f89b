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
a WebSocket step before reset or after the end; episodes are played over the WebSocket client.
A refused reset (unknown task id, bad index) is an error observation too, never a server error.
"""

from __future__ import annotations

import argparse
import functools
import sys
from typing import Any

from openenv.core import EnvClient
from openenv.core.client_types import StepResult
from openenv.core.env_server import Action, Environment, Observation, State, create_app
from pydantic import Field

from erp_sim.envs.episode import DEFAULT_ENV_ID, Episode, EpisodeError
from erp_sim.net import is_loopback, port_number  # the MCP server's rules: no LAN server by accident
from erp_sim.response import error_envelope, render
from erp_sim.verbosity import VERBOSITIES

DEFAULT_MAX_SESSIONS = 64


class ErpAction(Action):
    """A tool call (``tool`` and ``arguments``; ``send_message_to_user`` is a message) or a ``message`` to the user."""

    tool: str | None = Field(default=None, description="An ERP tool's name (or send_message_to_user).")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The tool's arguments.")
    message: str | None = Field(default=None, description="A message to the user, instead of a tool call.")


class ErpObservation(Observation):
    """What the agent reads (``text``) and what a trainer logs; ``reward`` and ``done`` as OpenEnv defines them."""

    text: str = Field(default="", description="The tool's response, the user's reply, or the error.")
    messages: list[dict[str, str]] = Field(default_factory=list, description="On reset: the system and user turns.")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="On reset: the tools in OpenAI form.")
    action_kind: str | None = Field(default=None, description="tool, message or invalid (None on reset).")
    is_error: bool = Field(default=False, description="The action failed: refused, or the ERP answered with an error.")
    error_code: str | None = Field(default=None, description="InvalidAction, ResetNeeded, the ERP's code, ...")
    success: bool = Field(default=False, description="The live grade: the itemization is complete.")
    itemized_fraction: float = Field(default=0.0, description="Saved itemized amount / the task's amount.")
    remaining_amount: str = Field(default="", description="The task's amount minus saved itemized lines.")
    counts: dict[str, int] = Field(
        default_factory=dict, description="steps, tool_calls, invalid_actions, tool_errors, user_turns."
    )
    episode_return: float = Field(default=0.0, description="The sum of the episode's rewards so far.")
    termination_reason: str | None = Field(default=None, description="Set when the episode ended.")
    truncated: bool = Field(default=False, description="Ended by the step limit.")
    final_grade: dict[str, Any] | None = Field(default=None, description="erp_sim.Grade when the episode ended.")


class ErpState(State):
    """The session's episode: the task and its counts."""

    env_id: str = DEFAULT_ENV_ID
    task_id: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    episode_return: float = 0.0
    done: bool = False


def _error_observation(code: str, message: str, done: bool) -> ErpObservation:
    text = render(error_envelope(None, code, message))
    return ErpObservation(text=text, is_error=True, error_code=code, done=done, reward=0.0)


class ErpEnvironment(Environment[ErpAction, ErpObservation, ErpState]):
    """One ``erp_sim.envs.episode.Episode`` per session; ``reset(task_id=..., task_index=..., seed=...)``."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # every session gets its own Episode (ERP session, user, counters)

    def __init__(self, env_id: str = DEFAULT_ENV_ID, **env_kwargs: Any):
        super().__init__()
        self._episode = Episode(env_id, **env_kwargs)
        self._episode_id: str | None = None

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | None = None,
        task_index: int | None = None,
        **kwargs: Any,
    ) -> ErpObservation:
        if kwargs:
            return _error_observation(
                "ResetRefused",
                f"Unknown reset option(s) {', '.join(sorted(kwargs))}: give task_id, task_index or seed.",
                done=True,
            )
        try:
            messages = self._episode.start(task_id=task_id, task_index=task_index, seed=seed)
        except ValueError as exc:  # the env's one-line reason; a running episode goes on
            return _error_observation("ResetRefused", str(exc), done=not self._episode.started)
        self._episode_id = episode_id
        return self._observation(messages[-1]["content"], 0.0, messages=messages, tools=self._episode.tools)

    def step(self, action: ErpAction, timeout_s: float | None = None, **kwargs: Any) -> ErpObservation:
        if action.tool is None and action.message is not None and not action.arguments:
            return self._play(lambda: self._episode.send_message(action.message))
        if action.tool is not None and action.message is None:
            return self._play(lambda: self._episode.call_tool(action.tool, action.arguments))
        payload = {"name": action.tool, "arguments": action.arguments, "message": action.message}
        return self._play(lambda: self._episode.act(payload))  # neither or both: the env's invalid action

    def _play(self, act) -> ErpObservation:
        try:
            turn = act()
        except EpisodeError as exc:
            code = "ResetNeeded" if not self._episode.started else "EpisodeOver"
            return _error_observation(code, str(exc), done=True)
        return self._observation(turn.observation, turn.reward)

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
        self._episode.close()

    def _observation(self, text: str, reward: float, **extra: Any) -> ErpObservation:
        episode, info = self._episode, self._episode.info
        action, grade = info.get("action") or {}, info["grade"]
        return ErpObservation(
            text=text,
            reward=reward,
            done=episode.done,
            action_kind=action.get("kind"),
            is_error=bool(action.get("is_error")),
            error_code=action.get("error_code"),
            success=grade["success"],
            itemized_fraction=grade["itemized_fraction"],
            remaining_amount=grade["remaining_amount"],
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


def build_app(env_id: str = DEFAULT_ENV_ID, max_sessions: int = DEFAULT_MAX_SESSIONS, **env_kwargs: Any):
    """The ASGI app: OpenEnv's routes (/ws, /reset, /step, /state, /schema, /health) over ``ErpEnvironment``,
    behind ``OpenEnvGuard``."""
    factory = functools.partial(ErpEnvironment, env_id, **env_kwargs)
    app = create_app(factory, ErpAction, ErpObservation, env_name="erp_sim", max_concurrent_envs=max_sessions)
    return OpenEnvGuard(app)


class OpenEnvGuard:
    """What openenv-core 0.3's app does not guard, for untrusted clients:

    - its ``/mcp`` routes (POST and WebSocket) open sessions of an environment that has no MCP tools: each
      took one of ``max_sessions`` for good, without auth, locking WebSocket clients out. Here they answer 404;
    - a ``/ws`` frame that is JSON but not an object (``[1, 2]``), or a binary frame, ended the session and
      lost its episode: here it gets OpenEnv's own INVALID_JSON error frame and the session goes on;
    - every client that closed normally logged a traceback (the app closes a socket the client closed).
    """

    def __init__(self, app: Any):
        self.app = app

    def __getattr__(self, name: str) -> Any:  # the FastAPI app's attributes (routes, state) for callers
        return getattr(self.app, name)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        path = scope.get("path", "").rstrip("/")
        if scope["type"] in ("http", "websocket") and path == "/mcp":
            return await self._no_mcp(scope, receive, send)
        if scope["type"] != "websocket":
            return await self.app(scope, receive, send)
        from starlette.websockets import WebSocketDisconnect

        async def objects_only() -> dict:
            while True:
                message = await receive()
                problem = _frame_problem(message)
                if problem is None:
                    return message
                await send({"type": "websocket.send", "text": problem})

        try:
            await self.app(scope, objects_only, send)
        except WebSocketDisconnect:  # closing a socket the client had closed: nothing is lost
            pass

    async def _no_mcp(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "no MCP here"})
            return
        from starlette.responses import JSONResponse

        error = {"code": -32601, "message": "This OpenEnv server offers no MCP: play episodes over /ws."}
        await JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=404)(scope, receive, send)


def _frame_problem(message: dict) -> str | None:
    """OpenEnv's error frame for a text frame that is JSON but not an object (None: pass the frame on)."""
    import json

    from openenv.core.env_server.types import WSErrorCode

    if message.get("type") != "websocket.receive":
        return None
    text = message.get("text")
    if text is None:  # a binary frame: OpenEnv reads text only, and its KeyError ended the session
        return _error_frame("Invalid message: send JSON text frames, not binary ones", WSErrorCode.INVALID_JSON)
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None  # OpenEnv answers that itself
    except (ValueError, RecursionError) as exc:  # which it does not catch: an integer of 5,000 digits, deep nesting
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
        return _error_frame(f"Invalid JSON: {reason}", WSErrorCode.INVALID_JSON)
    if isinstance(value, dict):
        return None
    return _error_frame(
        f"Invalid message: a JSON object with a 'type' is expected, got a JSON {type(value).__name__}",
        WSErrorCode.INVALID_JSON,
    )


def _error_frame(message: str, code: Any) -> str:
    from openenv.core.env_server.types import WSErrorResponse

    return WSErrorResponse(data={"message": message, "code": code}).model_dump_json()


def main(argv: list[str] | None = None) -> int:
    """``erp-sim serve --openenv [--host H] [--port P] [--env ID] [--verbosity V] [--max-sessions N]``."""
    import uvicorn

    from erp_sim.envs import ENV_IDS

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
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)

    if not is_loopback(args.host) and not args.allow_remote:
        print(
            f"erp-sim serve --openenv: {args.host} is not a loopback address; pass --allow-remote to serve other "
            "machines (OpenEnv has no authentication: put it behind a proxy that has).",
            file=sys.stderr,
        )
        return 2
    if args.max_sessions < 1:
        print("erp-sim serve --openenv: --max-sessions must be at least 1.", file=sys.stderr)
        return 2
    app = build_app(args.env, args.max_sessions, verbosity=args.verbosity, reward=args.reward)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0
