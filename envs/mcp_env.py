"""A Gymnasium env whose tools come from an MCP server: the same agents and policies, a remote ERP.

    env = McpEnv("http://127.0.0.1:8000/mcp", task=get_task("hotel_50", "hotel-007"),
                 user_model=RuleBasedUser(), grade=admin_grade("http://127.0.0.1:8000", admin_token))
    trajectory = run_episode(env, wrap(ScriptedAgent(), "last_n:n=5"))

``server`` is anything fastmcp's ``Client`` accepts: an in-process ``FastMCP`` server, an HTTP
URL, a stdio command config. Each ``reset`` opens a new episode under a fresh session key,
sent as erp-sim's ``X-ERP-Session`` header (HTTP) and ``_meta["erp-sim/session"]`` (every
transport), with the task as ``X-ERP-Task`` / ``_meta["erp-sim/task"]``; other servers
ignore both. Tool calls pass through verbatim; an MCP tool error comes back
as its text, as from the in-process env. Messages to the user go to an optional user model
(the env's protocol); without one, a message ends the episode (``stalled``), as in C1.
``grade`` is the evaluator's side channel (admin route, grade file, or the in-process store);
the agent never sees it.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import gymnasium as gym
import httpx
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from gymnasium.error import ResetNeeded

from erp_sim import response_keys as K
from erp_sim.envs import system_prompt as default_system_prompt
from erp_sim.envs.spaces import MAX_ACTION_CHARS, MAX_OBSERVATION_CHARS, AnyText
from erp_sim.envs.user_models import UserView
from erp_sim.outcomes import EnvTermination

if TYPE_CHECKING:
    from fastmcp import Client

    from erp_sim import Grade

GradeSource = Callable[[str], "dict | None"]  # session key -> grade dict (or None)


class _LoopThread:
    """One asyncio loop in a daemon thread, so the synchronous Gymnasium API can await the client."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="mcp-env-loop")
        self.thread.start()

    def run(self, coroutine, timeout: float | None = 120.0):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


class GradeView(dict):
    """A grade dict with the attribute access the user models and runner use."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def model_dump(self, mode: str = "json") -> dict:
        return dict(self)


class McpEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(
        self,
        server: Any,
        *,
        task=None,
        instruction: str | None = None,
        system_prompt: str | None = None,
        user_model=None,
        grade: GradeSource | None = None,
        auth_token: str | None = None,
        call_timeout_s: float = 120.0,
    ):
        if task is None and instruction is None:
            raise ValueError("McpEnv needs a task (from erp_sim fixtures) or an instruction text")
        self.server, self.task, self.user_model, self.grade_source = server, task, user_model, grade
        self.instruction = instruction or task.instruction()
        self.system_prompt = system_prompt or (
            default_system_prompt(task) if task else "You operate an ERP through its tools."
        )
        self.call_timeout_s, self.auth_token = call_timeout_s, auth_token
        self._episodes = 0
        self.session_key = ""
        self.observation_space = AnyText(MAX_OBSERVATION_CHARS)
        self.action_space = AnyText(MAX_ACTION_CHARS)
        self._loop = _LoopThread()
        self._client: Client[Any] | None = None
        self._counts: dict[str, int] = {}
        self._termination: EnvTermination | None = None

    # --- Gymnasium API ---
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._disconnect()
        self._episodes += 1
        self.session_key = f"mcp-env-{self.task.task_id if self.task else 'remote'}-{self._episodes}"
        self._meta = {"erp-sim/session": self.session_key, **({"erp-sim/task": self.task.task_id} if self.task else {})}
        client = self._client = Client(
            self._transport(), auth=None if isinstance(self.server, str) else self.auth_token
        )
        self._loop.run(client.__aenter__(), self.call_timeout_s)
        tools = self._loop.run(client.list_tools(), self.call_timeout_s)
        self._tools = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description or "", "parameters": t.input_schema},
            }
            for t in tools
        ]
        self._counts = {"steps": 0, "tool_calls": 0, "invalid_actions": 0, "tool_errors": 0, "user_turns": 0}
        self._termination = None
        if self.user_model is not None and self.task is not None:
            self.user_model.reset(self.task)
        info = self._info()
        info.update(tools=[json.loads(json.dumps(t)) for t in self._tools], system_prompt=self.system_prompt)
        return self.instruction, info

    def step(self, action):
        self._counts["steps"] += 1
        try:
            parsed = json.loads(action) if isinstance(action, str) else dict(action)
        except (json.JSONDecodeError, TypeError, ValueError):
            parsed = None
        if isinstance(parsed, dict) and "message" in parsed:
            return self._message(str(parsed["message"]))
        if not isinstance(parsed, dict) or not isinstance(parsed.get("name"), str):
            self._counts["invalid_actions"] += 1
            return (
                json.dumps({K.RESULT: 'Error: the action must be {"name", "arguments"} or {"message"}.'}),
                0.0,
                False,
                False,
                self._info(),
            )
        arguments = parsed.get("arguments") or {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments or "{}")
            except json.JSONDecodeError:
                arguments = {"__invalid_json__": arguments}
        self._counts["tool_calls"] += 1
        try:
            if self._client is None:  # closed: reported like a failed call, as before
                raise ResetNeeded("Call reset() before step().")
            call = self._client.call_tool(parsed["name"], arguments, raise_on_error=False, meta=self._meta)
            result = self._loop.run(call, self.call_timeout_s)
            text = "".join(getattr(block, "text", "") for block in result.content)
            self._counts["tool_errors"] += bool(result.is_error)
        except Exception as exc:  # the transport failed: report it to the agent like a tool error
            text = json.dumps({K.RESULT: f"Error: the MCP call failed: {type(exc).__name__}: {exc}"})
            self._counts["tool_errors"] += 1
        grade = self.grade()
        terminated = bool(grade and grade.get("success"))
        if terminated:
            self._termination = "success"
        return text, float(terminated), terminated, False, self._info()

    def _message(self, text: str):
        self._counts["user_turns"] += 1
        if self.user_model is None:
            self._termination = "stalled"
            return "", 0.0, True, False, self._info()
        grade = self.grade() or GradeView()
        # a GradeView answers the attribute reads the user models make of a Grade
        reply = self.user_model.reply(
            text, UserView(self.task, self._counts["user_turns"], lambda: cast("Grade", grade))
        )
        if reply.ends_conversation:
            self._termination = "success" if grade.get("success") else "user_ended"
        return (
            reply.text,
            float(bool(grade.get("success")) and reply.ends_conversation),
            reply.ends_conversation,
            False,
            self._info(),
        )

    def grade(self) -> GradeView | None:
        """The evaluator's view of the episode's state, or None without a grade source."""
        if self.grade_source is None:
            return None
        value = self.grade_source(self.session_key)
        return GradeView(value) if value else None

    def _transport(self):
        if isinstance(self.server, str) and self.server.startswith(("http://", "https://")):
            headers = {"X-ERP-Session": self.session_key, **({"X-ERP-Task": self.task.task_id} if self.task else {})}
            return StreamableHttpTransport(self.server, headers=headers, auth=self.auth_token)
        return self.server

    def _info(self) -> dict:
        task = self.task
        return {
            "task": {"task_id": task.task_id if task else "remote", "task_set": task.task_set if task else "remote"},
            "counts": dict(self._counts),
            "termination_reason": self._termination,
        }

    def _disconnect(self) -> None:
        if self._client is not None:
            try:
                self._loop.run(self._client.__aexit__(None, None, None), 30)
            except Exception:  # the server may already be gone; the session is over either way
                pass
            self._client = None

    def close(self) -> None:
        self._disconnect()
        self._loop.close()


def store_grade(server) -> GradeSource:
    """Grade source for an in-process ``erp_sim.mcp.server.build_server`` server."""

    def read(session_key: str) -> dict | None:
        try:
            return server.episodes.grade(session_key)["grade"]
        except KeyError:  # no call has reached the server yet
            return None

    return read


def admin_grade(base_url: str, admin_token: str, timeout_s: float = 30.0) -> GradeSource:
    """Grade source for ``erp-sim serve --http --admin-token``: the admin route, never the MCP endpoint."""

    def read(session_key: str) -> dict | None:
        response = httpx.get(
            f"{base_url.rstrip('/')}/admin/sessions/{session_key}/grade",
            timeout=timeout_s,
            headers={"Authorization": f"Bearer {admin_token}"},
        )
        if response.status_code == 404:
            return None
        response.raise_for_status()
        return response.json()["grade"]

    return read
