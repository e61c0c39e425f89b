"""ERP episodes behind the MCP server: one ``ErpSession`` per client session, never shared.

Transport-agnostic: ``erp_sim.mcp.routing`` turns an MCP request into a session key, and this
store maps keys to episodes. It also decides which task an episode works on (a pinned task,
the client's pick, or the next task of a fixed cycle), expires idle episodes (grading them
first and freeing their database), and keeps the grades an evaluator reads (the admin HTTP
routes, ``--grade-file``); nothing here is reachable by the agent.

Abuse limits: at most ``max_episodes`` open episodes in all and ``max_per_owner`` per MCP session;
an episode belongs to the owner (MCP session, or token principal for stateless requests) that
opened it, and admin routes name episodes by a handle the server draws, never by client data.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import secrets
import sys
import threading
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

import anyio
import anyio.to_thread

from erp_sim import workflows
from erp_sim.erp_session import ErpSession, ToolResponse
from erp_sim.faults import FaultProfile
from erp_sim.task_sets import get_task, load_task_set
from erp_sim.tool_registry import TOOLS
from erp_sim.verbosity import Verbosity, checked_verbosity
from erp_sim.workflow_task import WorkflowTask

logger = logging.getLogger("erp_sim.mcp")

# Where a call runs (``CallPlacement``): a worker thread keeps a slow call (a SQL statement may run up to its CPU
# limit) from stalling other sessions, but under load the hop costs more than most calls: with 64 HTTP sessions the
# worker waits for the GIL behind the event loop, 1.3 ms of server CPU per call against 1.1 inline
# (scripts/bench_mcp_http.py). And a call in Python that holds the GIL for less than the interpreter's switch
# interval (5 ms) holds the loop as long in a worker as inline. So a tool whose recent calls were that quick runs
# on the event loop.
INLINE_AFTER = 5  # quick calls in a row of a tool before its calls run on the event loop
NEVER_INLINE = frozenset({"data_find_entities_sql"})  # its cost is the client's query's, up to the SQL CPU limit

FINISHED_KEPT = 1024  # grades of closed episodes kept for evaluators (oldest dropped first)
DEFAULT_MAX_EPISODES = 512  # ~130 KB each when idle
DEFAULT_MAX_PER_OWNER = 8


IDLE, SESSION_ENDED, CLOSED_BY_EVALUATOR = (
    "it was idle for longer than {timeout:g} s, the server's idle timeout",
    "its MCP session ended",
    "an evaluator closed it",
)


def ended(episode_id: str, reason: str, client_key: str | None = None) -> str:
    """What every later call under an ended episode's key is told: which episode (and the client's key), why,
    that it counted."""
    told = (
        f"This session's ERP episode {episode_id} has ended: {reason}. It was graded as it stood then, and its "
        "state is gone; nothing is carried over to a new episode."
    )
    if client_key is None:
        return f"{told} Start a new MCP session (or use a new session key) to work on a task again."
    return f"{told} Its session key {client_key!r} stays ended: use a new session key to work on a task again."


class EpisodeError(Exception):
    """A request cannot be tied to a usable episode; the message tells the client what to do."""


class EpisodeSummary(TypedDict):
    """What evaluators see of an episode: the admin routes' JSON and a grade-file line (plus ``task_set``)."""

    handle: str
    session_id: str
    number: int
    key: str
    client_key: str | None
    state: str  # "active" or "closed"
    task_set: str
    task_id: str
    opened_at: str
    calls: int
    idle_s: float
    grade: dict[str, Any] | None


@dataclass(eq=False)
class Episode:
    """One client session's ERP episode."""

    key: str
    owner: str  # who opened it: "session:<MCP session id>", "principal:<client id>" or "process"
    client_key: str | None  # the X-ERP-Session / _meta key the client chose, if any
    handle: str  # the evaluator's name for it: drawn by the server, unique, never shown to the agent
    number: int  # opening order, from 1
    session: ErpSession
    opened_at: str
    last_used: float
    calls: int = 0
    grade: dict[str, Any] | None = None
    # one call at a time, in arrival order; an uncontended acquire does not yield to the event loop first (the
    # call's hop to a worker thread yields anyway): one loop pass less per call
    lock: anyio.Lock = field(default_factory=lambda: anyio.Lock(fast_acquire=True))
    principal: str = "process"  # who opened it across MCP sessions: "principal:<token's client>" or "process"

    @property
    def id(self) -> str:
        """The ``SessionId`` of every response the client sees, so evaluators can match transcripts."""
        return self.session.session_id

    def summary(self, state: str) -> EpisodeSummary:
        task = self.session.task
        return {
            "handle": self.handle,
            "session_id": self.id,
            "number": self.number,
            "key": self.key,
            "client_key": self.client_key,
            "state": state,
            "task_set": task.task_set,
            "task_id": task.task_id,
            "opened_at": self.opened_at,
            "calls": self.calls,
            "idle_s": round(time.monotonic() - self.last_used, 3),
            "grade": self.grade,
        }


class CallPlacement:
    """Which tools' calls run on the event loop rather than a worker thread: a registry tool whose last
    ``INLINE_AFTER`` calls each took less CPU than the switch interval. A slower call sends the tool back to
    worker threads until it has made that many quick calls again: whatever clients send, a slow call of a tool
    holds the loop at most once per ``INLINE_AFTER`` quick ones (and ``NEVER_INLINE``'s never do)."""

    def __init__(self) -> None:
        self.quick_in_a_row: Counter[str] = Counter()

    def inline(self, name: str) -> bool:
        return self.quick_in_a_row[name] >= INLINE_AFTER

    def note(self, name: str, cpu_seconds: float) -> None:
        if name not in TOOLS or name in NEVER_INLINE:  # unknown names: any client's strings, never counted
            return
        if cpu_seconds < sys.getswitchinterval():
            self.quick_in_a_row[name] += 1
        else:
            self.quick_in_a_row[name] = 0
            logger.debug("%s took %.1f ms of CPU: worker threads again", name, cpu_seconds * 1000)


def _timed_call(session: ErpSession, name: str, arguments: Any) -> tuple[ToolResponse, float]:
    """``session.call`` and the CPU time it took in this thread (on a worker: not its waits for the GIL)."""
    started = time.thread_time()
    response = session.call(name, arguments)
    return response, time.thread_time() - started


class EpisodeStore:
    """All episodes of one server.

    Bookkeeping runs on the server's event loop; the ERP work of a call runs under the episode's lock, on a
    worker thread unless its tool has proven quick (``CallPlacement``), so a slow call delays only later calls
    of its own episode.
    """

    def __init__(
        self,
        task_set: str = workflows.DEFAULT_TASK_SET,
        task_id: str | int | None = None,
        *,
        verbosity: Verbosity = "default",
        faults: FaultProfile | str | float | None = None,
        seed: int | None = None,
        idle_timeout_s: float | None = 1800.0,
        grade_file: str | Path | None = None,
        max_episodes: int = DEFAULT_MAX_EPISODES,
        max_per_owner: int = DEFAULT_MAX_PER_OWNER,
        shared_keys: bool = False,
    ):
        verbosity = checked_verbosity(verbosity)
        self.task_set = task_set
        self.tasks = load_task_set(task_set)
        self.pinned: WorkflowTask | None = get_task(task_set, task_id) if task_id is not None else None
        self.order = list(range(len(self.tasks)))
        if seed is not None:
            random.Random(seed).shuffle(self.order)
        self.verbosity = verbosity
        self.faults = FaultProfile.parse(faults)
        if idle_timeout_s is not None and not idle_timeout_s >= 0:  # NaN too
            raise ValueError(f"--idle-timeout must be 0 (never) or a number of seconds, got {idle_timeout_s}")
        self.idle_timeout_s = idle_timeout_s if idle_timeout_s and idle_timeout_s > 0 else None
        if max_episodes < 1 or max_per_owner < 1:
            raise ValueError("--max-episodes and --max-episodes-per-session must be at least 1")
        self.max_episodes, self.max_per_owner, self.shared_keys = max_episodes, max_per_owner, shared_keys
        self.grade_file = Path(grade_file) if grade_file else None
        if self.grade_file is not None:  # refused now, not found out after a whole evaluation's grades are lost
            problem = _grade_file_problem(self.grade_file)
            if problem:
                raise ValueError(f"--grade-file {self.grade_file}: {problem}")
        self._grade_lock = threading.Lock()  # grade lines come from worker threads
        self.active: dict[str, Episode] = {}
        self.finished: OrderedDict[str, EpisodeSummary] = OrderedDict()  # episode id -> final summary
        self.expired_keys: OrderedDict[str, str] = OrderedDict()  # key -> what calls under it are told
        # (principal, client key) of episodes that idled out -> what they are told: an idle timeout also ends
        # the MCP session, and the client comes back under its key in a new one
        self.idled_client_keys: OrderedDict[tuple[str, str], str] = OrderedDict()
        self.opened = 0
        self._cycled = 0  # sessions that got the next task of the cycle
        self._per_task: Counter[str] = Counter()
        self.placement = CallPlacement()

    # --- episodes ---
    def episode(
        self,
        key: str,
        requested_task: str | int | None = None,
        owner: str = "process",
        client_key: str | None = None,
        principal: str = "process",
    ) -> Episode:
        """The key's episode, opened on first use (with the requested task, if the server allows a pick).

        ``key`` already carries its owner's namespace (see ``erp_sim.mcp.routing``); ``owner`` is
        counted against the per-session cap when it is an MCP session. A client key whose episode idled
        out stays refused to its ``principal`` in any later MCP session too.
        """
        episode = self.active.get(key)
        if episode is not None:
            if requested_task is not None and self._find_task(requested_task) != episode.session.task:
                raise EpisodeError(
                    f"This session already works on task {episode.session.task.task_id}; "
                    f"open a new session for another task."
                )
            return episode
        if key in self.expired_keys:
            raise EpisodeError(self.expired_keys[key])
        if client_key is not None:
            self.reap()  # the key's last episode may be idle past the timeout, its MCP session expired, not yet reaped
            if (principal, client_key) in self.idled_client_keys:
                raise EpisodeError(self.idled_client_keys[principal, client_key])
        if len(self.active) >= self.max_episodes:
            raise EpisodeError(
                f"The server already runs {self.max_episodes} episodes, its limit; end a session "
                f"(or wait for idle ones to expire) and try again."
            )
        if owner.startswith("session:") and sum(e.owner == owner for e in self.active.values()) >= self.max_per_owner:
            raise EpisodeError(
                f"This MCP session already has {self.max_per_owner} open episodes, the limit per "
                f"session; reuse one of its session keys or start a new MCP session."
            )
        task = self._choose_task(requested_task)
        instance = self._per_task[task.task_id]  # a lone client on a task sees the env's SessionId
        self._per_task[task.task_id] += 1
        self.opened += 1
        session = ErpSession(task, verbosity=self.verbosity, faults=self.faults, instance=instance)
        episode = Episode(
            key,
            owner,
            client_key,
            self._new_handle(),
            self.opened,
            session,
            datetime.now(UTC).isoformat(timespec="seconds"),
            time.monotonic(),
            principal=principal,
        )
        self.active[key] = episode
        logger.info("episode %s (%s) opened on %s/%s", episode.handle, episode.id, task.task_set, task.task_id)
        return episode

    def _new_handle(self) -> str:
        while True:
            handle = "ep-" + secrets.token_hex(8)
            if handle not in self.finished and all(e.handle != handle for e in self.active.values()):
                return handle

    async def call(self, episode: Episode, name: str, arguments: Any) -> ToolResponse:
        """``ErpSession.call`` in order per episode (off the event loop unless its tool is quick), plus
        bookkeeping: idle clock, call count, and the grade file after each change."""
        async with episode.lock:
            if self.active.get(episode.key) is not episode:
                raise EpisodeError(self.expired_keys.get(episode.key) or ended(episode.id, CLOSED_BY_EVALUATOR))
            episode.last_used = time.monotonic()
            episode.calls += 1
            if self.placement.inline(name):
                response, cpu_seconds = _timed_call(episode.session, name, arguments)
            else:
                response, cpu_seconds = await anyio.to_thread.run_sync(_timed_call, episode.session, name, arguments)
            self.placement.note(name, cpu_seconds)
            if self.grade_file and not response.is_error and not response.read_only:
                await anyio.to_thread.run_sync(self._regrade, episode)
            episode.last_used = time.monotonic()
        return response

    def _choose_task(self, requested: str | int | None) -> WorkflowTask:
        if requested is not None:
            task = self._find_task(requested)
            if self.pinned is not None and task != self.pinned:
                raise EpisodeError(f"This server serves only task {self.pinned.task_id}.")
            return task
        if self.pinned is not None:
            return self.pinned
        self._cycled += 1
        return self.tasks[self.order[(self._cycled - 1) % len(self.order)]]

    def _find_task(self, requested: str | int) -> WorkflowTask:
        try:
            return get_task(self.task_set, requested)
        except KeyError as exc:
            raise EpisodeError(str(exc.args[0])) from None

    # --- expiry and shutdown ---
    def close(
        self, key: str, *, expire_key: bool = True, reason: str = CLOSED_BY_EVALUATOR, idled: bool = False
    ) -> EpisodeSummary:
        """Grade the episode, free its database, keep its summary; ``expire_key`` refuses the key from now on,
        telling its calls which episode ended, for what ``reason``, and that it was graded; ``idled`` (the idle
        timeout) refuses the client's key to its principal in later MCP sessions too."""
        episode = self.active.pop(key)
        self._grade(episode)
        episode.session.close()
        summary = episode.summary("closed")
        self.finished[episode.handle] = summary
        self._append_grade(summary)
        if expire_key:
            self.expired_keys[key] = ended(episode.id, reason, episode.client_key)
        if idled and episode.client_key is not None:
            self.idled_client_keys[episode.principal, episode.client_key] = self.expired_keys[key]
        for kept in (self.finished, self.expired_keys, self.idled_client_keys):
            while len(kept) > FINISHED_KEPT:
                kept.popitem(last=False)
        logger.info("episode %s closed after %d call(s)", episode.id, episode.calls)
        return summary

    async def close_when_free(self, key: str, reason: str = CLOSED_BY_EVALUATOR) -> EpisodeSummary | None:
        """Close an episode once its running call (if any) is done; None if it had ended meanwhile."""
        episode = self.active.get(key)
        if episode is None:
            return None
        async with episode.lock:
            return self.close(key, reason=reason) if self.active.get(key) is episode else None

    def reap(self, now: float | None = None) -> list[str]:
        """Close every episode idle for longer than the timeout; returns their ids."""
        if self.idle_timeout_s is None:
            return []
        now = time.monotonic() if now is None else now
        idle = [
            key for key, e in self.active.items() if now - e.last_used > self.idle_timeout_s and not e.lock.locked()
        ]
        reason = IDLE.format(timeout=self.idle_timeout_s)
        return [self.close(key, reason=reason, idled=True)["session_id"] for key in idle]

    async def reap_forever(self) -> None:
        """Background expiry, so an idle server frees memory too."""
        if self.idle_timeout_s is None:
            return
        while True:
            await asyncio.sleep(max(0.05, min(self.idle_timeout_s / 4, 30.0)))
            self.reap()

    def close_all(self) -> None:
        """At shutdown: grade and close everything (each closed episode's grade goes to the grade file)."""
        for key in list(self.active):
            self.close(key, expire_key=False)

    async def close_owned_by(self, owner: str) -> list[EpisodeSummary]:
        """Grade and free every episode of an owner that went away (an MCP session ended with DELETE)."""
        owned = [key for key, e in list(self.active.items()) if e.owner == owner]
        closed = [await self.close_when_free(key, SESSION_ENDED) for key in owned]
        return [summary for summary in closed if summary is not None]

    # --- for evaluators ---
    def summaries(self) -> list[EpisodeSummary]:
        """Every episode, active or closed (the last ``FINISHED_KEPT``), in opening order."""
        summaries = [e.summary("active") for e in self.active.values()] + list(self.finished.values())
        return sorted(summaries, key=lambda s: s["number"])

    def key_of(self, ident: str) -> str | None:
        """The key of the active episode named by ``ident`` (see ``find``), or None if it is closed."""
        found = self.find(ident)
        return found if found in self.active else None

    def find(self, ident: str) -> str:
        """What ``ident`` names: an active episode's key or a closed episode's handle.

        ``ident`` is a handle, or a SessionId or client session key that exactly one episode has;
        ``LookupError`` when several do (name one by its handle), ``KeyError`` when none does."""
        for key, e in self.active.items():
            if e.handle == ident:
                return key
        if ident in self.finished:
            return ident
        matches = [key for key, e in self.active.items() if ident in (e.id, e.client_key)]
        matches += [
            h for h, summary in self.finished.items() if ident in (summary["session_id"], summary["client_key"])
        ]
        if len(matches) > 1:
            raise LookupError(f"{len(matches)} episodes answer to {ident!r}; name one by its handle.")
        if not matches:
            raise KeyError(ident)
        return matches[0]

    def grade(self, ident: str) -> EpisodeSummary:
        """A fresh grade of an active episode, or the final one of a closed episode (KeyError if unknown)."""
        found = self.find(ident)
        return self._grade(self.active[found]) if found in self.active else self.finished[found]

    async def grade_when_free(self, ident: str) -> EpisodeSummary:
        """``grade``, waiting for the episode's running call so the grade never sees half a call."""
        found = self.find(ident)
        if found not in self.active:
            return self.finished[found]
        async with self.active[found].lock:
            return self.grade(ident)

    def _grade(self, episode: Episode) -> EpisodeSummary:
        episode.grade = episode.session.grade().model_dump(mode="json")
        return episode.summary("active")

    def _regrade(self, episode: Episode) -> None:
        self._append_grade(self._grade(episode))

    def _append_grade(self, summary: EpisodeSummary) -> None:
        """Append one JSON line to ``grade_file`` and flush it (no-op without one).

        Append-only: a restart with the same file keeps the grades written before; the last line
        of a handle is its latest grade (state "closed" once it ended)."""
        if not self.grade_file:
            return
        line = json.dumps({"task_set": self.task_set, **summary}, ensure_ascii=False) + "\n"
        try:
            with self._grade_lock, self.grade_file.open("a", encoding="utf-8") as out:
                out.write(line)
                out.flush()
                if summary["state"] == "closed":
                    os.fsync(out.fileno())
        except OSError as exc:  # the evaluator's file must never fail the agent's call
            logger.error("cannot append to the grade file %s: %s", self.grade_file, exc)


def _grade_file_problem(path: Path) -> str | None:
    """Why grades could not be appended to ``path`` (None: they can). A FIFO (opening it waits for a reader, and
    the check's close would end that reader's input) or a device (/dev/full) is no file to keep grades in."""
    if path.exists() and not path.is_file():
        return "not a regular file (grades are appended to a file)"
    try:
        path.open("a", encoding="utf-8").close()
    except OSError as exc:
        return f"cannot append to it ({exc.strerror})"
    return None
