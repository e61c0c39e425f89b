"""ERP episodes behind the MCP server: one ``ErpSession`` per client session, never shared.

Transport-agnostic: ``erp_sim.mcp.tools`` turns an MCP request into a session key, and this
store maps keys to episodes. It also decides which task an episode works on (a pinned task,
the client's pick, or the next task of a fixed cycle), expires idle episodes (grading them
first and freeing their database), and keeps the grades an evaluator reads (the admin HTTP
routes, ``--grade-file``); nothing here is reachable by the agent.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from erp_sim.faults import FaultInjector, FaultProfile
from erp_sim.session import VERBOSITIES, ErpSession, ToolResponse
from erp_sim.tasks import Task, get_task, load_task_set

logger = logging.getLogger("erp_sim.mcp")

FINISHED_KEPT = 1024  # grades of closed episodes kept for evaluators (oldest dropped first)


ENDED = ("This session's ERP episode has ended (it was idle too long, its MCP session ended, or an evaluator closed "
         "it) and its state is gone. Start a new MCP session (or use a new session key).")


class EpisodeError(Exception):
    """A request cannot be tied to a usable episode; the message tells the client what to do."""


@dataclass(eq=False)
class Episode:
    """One client session's ERP episode."""

    key: str
    number: int  # opening order, from 1
    session: ErpSession
    opened_at: str
    last_used: float
    calls: int = 0
    grade: dict | None = None
    lock: anyio.Lock = field(default_factory=anyio.Lock)  # one call at a time, in arrival order

    @property
    def id(self) -> str:
        """The ``SessionId`` of every response the client sees, so evaluators can match transcripts."""
        return self.session.session_id

    def summary(self, state: str) -> dict[str, Any]:
        task = self.session.task
        return {"session_id": self.id, "number": self.number, "key": self.key, "state": state, "task_set": task.task_set,
                "task_id": task.task_id, "opened_at": self.opened_at, "calls": self.calls,
                "idle_s": round(time.monotonic() - self.last_used, 3), "grade": self.grade}


class EpisodeStore:
    """All episodes of one server.

    Bookkeeping runs on the server's event loop; the ERP work of a call runs on a worker thread,
    under the episode's lock, so a slow call delays only later calls of its own episode.
    """

    def __init__(self, task_set: str = "hotel_50", task_id: str | int | None = None, *, verbosity: str = "default",
                 faults: FaultProfile | str | float | None = None, seed: int | None = None,
                 idle_timeout_s: float | None = 1800.0, grade_file: str | Path | None = None):
        if verbosity not in VERBOSITIES:
            raise ValueError(f"verbosity must be one of {VERBOSITIES}, got {verbosity!r}")
        self.task_set = task_set
        self.tasks = load_task_set(task_set)
        self.pinned: Task | None = get_task(task_set, task_id) if task_id is not None else None
        self.order = list(range(len(self.tasks)))
        if seed is not None:
            random.Random(seed).shuffle(self.order)
        self.verbosity = verbosity
        self.faults = FaultProfile.parse(faults)
        if self.faults is not None:
            FaultInjector(self.faults, 0)  # rejects unknown fault kinds now rather than in every session
        self.idle_timeout_s = idle_timeout_s if idle_timeout_s and idle_timeout_s > 0 else None
        self.grade_file = Path(grade_file) if grade_file else None
        self.active: dict[str, Episode] = {}
        self.finished: OrderedDict[str, dict] = OrderedDict()  # episode id -> final summary
        self.expired_keys: OrderedDict[str, str] = OrderedDict()  # key -> episode id
        self.opened = 0
        self._cycled = 0  # sessions that got the next task of the cycle
        self._per_task: Counter[str] = Counter()

    # --- episodes ---
    def episode(self, key: str, requested_task: str | int | None = None) -> Episode:
        """The key's episode, opened on first use (with the requested task, if the server allows a pick)."""
        episode = self.active.get(key)
        if episode is not None:
            if requested_task is not None and self._find_task(requested_task) != episode.session.task:
                raise EpisodeError(f"This session already works on task {episode.session.task.task_id}; "
                                   f"open a new session for another task.")
            return episode
        if key in self.expired_keys:
            raise EpisodeError(ENDED)
        task = self._choose_task(requested_task)
        instance = self._per_task[task.task_id]  # a lone client on a task sees the env's SessionId
        self._per_task[task.task_id] += 1
        self.opened += 1
        session = ErpSession(task, verbosity=self.verbosity, faults=self.faults, instance=instance)
        episode = Episode(key, self.opened, session, datetime.now(UTC).isoformat(timespec="seconds"), time.monotonic())
        self.active[key] = episode
        logger.info("episode %s opened on %s/%s", episode.id, task.task_set, task.task_id)
        if self.grade_file:
            self._regrade(episode)
        return episode

    async def call(self, episode: Episode, name: str, arguments: Any) -> ToolResponse:
        """``ErpSession.call`` off the event loop, in order per episode, plus bookkeeping: idle clock,
        call count, and the grade file after each change."""
        async with episode.lock:
            if self.active.get(episode.key) is not episode:
                raise EpisodeError(ENDED)
            episode.last_used = time.monotonic()
            episode.calls += 1
            response = await anyio.to_thread.run_sync(episode.session.call, name, arguments)
            if self.grade_file and not response.is_error and not response.read_only:
                await anyio.to_thread.run_sync(self._regrade, episode)
            episode.last_used = time.monotonic()
        return response

    def _choose_task(self, requested: str | int | None) -> Task:
        if requested is not None:
            task = self._find_task(requested)
            if self.pinned is not None and task != self.pinned:
                raise EpisodeError(f"This server serves only task {self.pinned.task_id}.")
            return task
        if self.pinned is not None:
            return self.pinned
        self._cycled += 1
        return self.tasks[self.order[(self._cycled - 1) % len(self.order)]]

    def _find_task(self, requested: str | int) -> Task:
        try:
            return get_task(self.task_set, requested)
        except KeyError as exc:
            raise EpisodeError(str(exc.args[0])) from None

    # --- expiry and shutdown ---
    def close(self, key: str, *, expire_key: bool = True) -> dict:
        """Grade the episode, free its database, keep its summary; ``expire_key`` refuses the key from now on."""
        episode = self.active.pop(key)
        self._grade(episode)
        episode.session.close()
        summary = episode.summary("closed")
        self.finished[episode.id] = summary
        if expire_key:
            self.expired_keys[key] = episode.id
        for kept in (self.finished, self.expired_keys):
            while len(kept) > FINISHED_KEPT:
                kept.popitem(last=False)
        logger.info("episode %s closed after %d call(s)", episode.id, episode.calls)
        return summary

    async def close_when_free(self, key: str) -> dict | None:
        """Close an episode once its running call (if any) is done; None if it had ended meanwhile."""
        episode = self.active.get(key)
        if episode is None:
            return None
        async with episode.lock:
            return self.close(key) if self.active.get(key) is episode else None

    def reap(self, now: float | None = None) -> list[str]:
        """Close every episode idle for longer than the timeout; returns their ids."""
        if self.idle_timeout_s is None:
            return []
        now = time.monotonic() if now is None else now
        idle = [key for key, e in self.active.items() if now - e.last_used > self.idle_timeout_s and not e.lock.locked()]
        closed = [self.close(key)["session_id"] for key in idle]
        if closed:
            self.write_grade_file()
        return closed

    async def reap_forever(self) -> None:
        """Background expiry, so an idle server frees memory too."""
        if self.idle_timeout_s is None:
            return
        while True:
            await asyncio.sleep(max(0.05, min(self.idle_timeout_s / 4, 30.0)))
            self.reap()

    def close_all(self) -> None:
        """At shutdown: grade and close everything, then write the grade file once more."""
        for key in list(self.active):
            self.close(key, expire_key=False)
        self.write_grade_file()

    # --- for evaluators ---
    def summaries(self) -> list[dict]:
        """Every episode, active or closed (the last ``FINISHED_KEPT``), in opening order."""
        summaries = [e.summary("active") for e in self.active.values()] + list(self.finished.values())
        return sorted(summaries, key=lambda s: s["number"])

    def key_of(self, ident: str) -> str | None:
        """The key of the active episode named by its SessionId, its key, or the key without its prefix."""
        return next((key for key, e in self.active.items() if ident in (e.id, key, key.partition(":")[2])), None)

    def grade(self, ident: str) -> dict:
        """A fresh grade of an active episode, or the final one of a closed episode (KeyError if unknown)."""
        key = self.key_of(ident)
        if key is not None:
            return self._grade(self.active[key])
        closed = next((i for k, i in self.expired_keys.items() if ident in (k, k.partition(":")[2])), ident)
        return self.finished[closed]

    async def grade_when_free(self, ident: str) -> dict:
        """``grade``, waiting for the episode's running call so the grade never sees half a call."""
        key = self.key_of(ident)
        if key is None:
            return self.grade(ident)
        async with self.active[key].lock:
            return self.grade(ident)

    def _grade(self, episode: Episode) -> dict:
        episode.grade = episode.session.grade().model_dump(mode="json")
        return episode.summary("active")

    def _regrade(self, episode: Episode) -> None:
        self._grade(episode)
        self.write_grade_file()

    def write_grade_file(self) -> None:
        """Atomically replace ``grade_file`` with every episode's latest grade (no-op without one)."""
        if not self.grade_file:
            return
        payload = {"task_set": self.task_set, "sessions": self.summaries()}
        tmp = self.grade_file.with_name(self.grade_file.name + ".tmp")
        try:
            tmp.write_text(json.dumps(payload, indent=1), encoding="utf-8")
            os.replace(tmp, self.grade_file)
        except OSError as exc:  # the evaluator's file must never fail the agent's call
            logger.error("cannot write the grade file %s: %s", self.grade_file, exc)
