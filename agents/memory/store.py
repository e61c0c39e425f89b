"""A layered long-term memory on disk (GenericAgent, sections 3.2-3.3): L1 index, L2 facts, L3 SOPs, L4 archive.

- L1, the index: at most ``MAX_INDEX_LINES`` short lines, each naming an L2 fact or an L3 SOP
  by key. It is the only layer always shown to the model (with the meta rules, in the system
  prompt); everything else is read on demand with ``memory_read(key)``.
- L2, facts: short statements learned from verified runs (e.g. which menu item opens a form).
- L3, SOPs: procedures (goal, preconditions, parameters, steps, expected results, failure
  handling) distilled from graded successful episodes, with the runs that verified them.
- L4, the archive: every episode's raw trajectory, successful or not. Never shown to a model;
  it is the record consolidation (human or LLM) can go back to.

A store is a directory (one file per entry) or a SQLite file (one row per entry), chosen by the
path: ``*.sqlite``, ``*.sqlite3`` and ``*.db`` are SQLite. Both write the same bytes for the
same entries: JSON with sorted keys, entries listed in key order, no wall-clock time anywhere,
so two runs of a deterministic agent leave identical stores.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any, Literal, Protocol, cast

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_INDEX_LINES = 30
MAX_INDEX_LINE_CHARS = 200
KEY_PATTERN = re.compile(r"^(fact|sop)/[a-z0-9][a-z0-9_.-]{0,79}$")
ARCHIVE_KEY_PATTERN = re.compile(r"^\d{6}-[A-Za-z0-9_.-]{1,80}$")
SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
Layer = Literal["index", "fact", "sop", "archive"]

META_RULES = """\
Long-term memory (layered, as in GenericAgent). Rules:
- The index below names what earlier runs that the grader verified have taught. Read an entry with
  memory_read(key) before relying on it; nothing else of the memory is shown to you.
- An SOP (sop/...) is a verified procedure: follow its steps with its {parameters} taken from the current
  task. When a step's result differs from what the SOP expects, stop following it and work it out.
- Keep your own progress with update_working_checkpoint(text): the latest checkpoint is shown at every
  step of this episode (and forgotten after it).
- When the task is done, call start_long_term_update(): after the episode is graded, a successful run
  becomes or confirms an SOP; a failed run is only archived (no execution, no memory)."""


class MemoryStoreError(ValueError):
    """Bad key, bad entry or an index over its bound: the store is left unchanged."""


class Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str = Field(description="fact/NAME or sop/NAME, as the index names it.")
    summary: str = Field(description="The index line's text (one line).")
    verified_by: list[str] = Field(
        default_factory=list, description="Archive keys of the graded successful episodes behind it."
    )

    @field_validator("key")
    @classmethod
    def _key_of_its_layer(cls, key: str) -> str:
        kind = "sop" if cls.__name__ == "Sop" else "fact"
        if not KEY_PATTERN.fullmatch(key) or not key.startswith(f"{kind}/"):
            raise ValueError(f"bad key {key!r}: a {cls.__name__} key is {kind}/NAME (lower case, digits, _ . -)")
        return key


class Fact(Entry):
    text: str = Field(description="The fact, in a sentence or two.")


class SopStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str = Field(description="Tool name, or 'say' for a message to the user.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Arguments; {name} marks a task parameter.")
    repeat: str = Field("", description="Non-empty: the step is repeated, e.g. 'for each receipt charge'.")
    expect: str = Field("", description="What the step's result should show.")


class Sop(Entry):
    goal: str
    parameters: list[str] = Field(default_factory=list, description="Names used as {name} in the steps.")
    preconditions: list[str] = Field(default_factory=list)
    steps: list[SopStep] = Field(default_factory=list)
    expected_results: list[str] = Field(default_factory=list)
    failure_handling: list[str] = Field(default_factory=list)


class ArchivedEpisode(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str
    task_id: str
    success: bool
    termination: str
    consolidated: bool = Field(description="Whether it was promoted to L2/L3 (only graded successes are).")
    trajectory: dict[str, Any] = Field(description="The raw trajectory (Trajectory.deterministic_dump()).")


def dumps(model: BaseModel) -> str:
    return json.dumps(model.model_dump(mode="json"), sort_keys=True, ensure_ascii=False, indent=1) + "\n"


def check_key(key: str) -> str:
    if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
        raise MemoryStoreError(f"bad memory key {key!r}: expected fact/NAME or sop/NAME (lower case, digits, _ . -)")
    return key


def split_key(key: str) -> tuple[Literal["fact", "sop"], str]:
    """A checked key's kind and name (KEY_PATTERN admits only the fact/ and sop/ kinds)."""
    kind, _, name = check_key(key).partition("/")
    return cast(Literal["fact", "sop"], kind), name


# -- backends: text by (layer, name) ------------------------------------------------------------
class Backend(Protocol):
    def get(self, layer: Layer, name: str) -> str | None: ...
    def put(self, layer: Layer, name: str, text: str) -> None: ...
    def names(self, layer: Layer) -> list[str]: ...


class DirectoryBackend:
    """index.md, facts/NAME.json, sops/NAME.json, archive/NNNNNN-TASK.json under one directory."""

    FOLDERS = {"fact": "facts", "sop": "sops", "archive": "archive"}

    def __init__(self, root: Path):
        self.root = root

    def _path(self, layer: Layer, name: str) -> Path:
        if layer == "index":
            return self.root / "index.md"
        return self.root / self.FOLDERS[layer] / f"{name}.json"

    def get(self, layer: Layer, name: str) -> str | None:
        path = self._path(layer, name)
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def put(self, layer: Layer, name: str, text: str) -> None:
        path = self._path(layer, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)  # atomic: a killed run never leaves half an entry

    def names(self, layer: Layer) -> list[str]:
        folder = self.root / self.FOLDERS[layer]
        return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []


class SqliteBackend:
    """One table ``memory(layer, name, text)`` in a SQLite file."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        with self._connect() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS memory (layer TEXT NOT NULL, name TEXT NOT NULL, text TEXT NOT NULL, "
                "PRIMARY KEY (layer, name))"
            )

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path)

    def get(self, layer: Layer, name: str) -> str | None:
        with self._connect() as db:
            row = db.execute("SELECT text FROM memory WHERE layer = ? AND name = ?", (layer, name)).fetchone()
        return row[0] if row else None

    def put(self, layer: Layer, name: str, text: str) -> None:
        with self._connect() as db:
            db.execute("INSERT OR REPLACE INTO memory (layer, name, text) VALUES (?, ?, ?)", (layer, name, text))

    def names(self, layer: Layer) -> list[str]:
        with self._connect() as db:
            return [row[0] for row in db.execute("SELECT name FROM memory WHERE layer = ? ORDER BY name", (layer,))]


# -- the store --------------------------------------------------------------------------------
class MemoryStore:
    """The four layers over one backend. ``MemoryStore.open(path)``; ``MemoryStore.empty()`` keeps nothing."""

    def __init__(self, backend: Backend | None):
        self.backend = backend  # None: an empty, read-only memory (a policy run without --memory)

    @classmethod
    def open(cls, path: str | Path) -> MemoryStore:
        path = Path(path)
        if path.suffix.lower() in SQLITE_SUFFIXES:
            return cls(SqliteBackend(path))
        if path.exists() and not path.is_dir():
            raise MemoryStoreError(f"memory path {path} is a file; use a directory or a *.sqlite file")
        return cls(DirectoryBackend(path))

    @classmethod
    def empty(cls) -> MemoryStore:
        return cls(None)

    def _backend(self) -> Backend:
        if self.backend is None:
            raise MemoryStoreError("this memory is empty and read-only (no --memory given)")
        return self.backend

    # L1
    def index_lines(self) -> list[str]:
        text = self.backend.get("index", "index") if self.backend else None
        return text.splitlines() if text else []

    def write_index(self, lines: list[str]) -> None:
        if len(lines) > MAX_INDEX_LINES:
            raise MemoryStoreError(f"the L1 index holds at most {MAX_INDEX_LINES} lines, got {len(lines)}")
        for line in lines:
            if "\n" in line or len(line) > MAX_INDEX_LINE_CHARS:
                raise MemoryStoreError(
                    f"index lines are single lines of at most {MAX_INDEX_LINE_CHARS} characters: {line[:60]!r}"
                )
        self._backend().put("index", "index", "".join(f"{line}\n" for line in lines))

    def rebuild_index(self) -> list[str]:
        """Write L1 from L2 and L3: SOPs first, then facts; most-verified first; at most 30 lines."""
        entries: list[Entry] = [*map(self.sop, self.keys("sop")), *map(self.fact, self.keys("fact"))]
        ranked = sorted(entries, key=lambda e: (not e.key.startswith("sop/"), -len(e.verified_by), e.key))
        lines = [index_line(e) for e in ranked[:MAX_INDEX_LINES]]
        self.write_index(lines)
        return lines

    # L2 / L3
    def keys(self, kind: Literal["fact", "sop"]) -> list[str]:
        return [f"{kind}/{name}" for name in self.backend.names(kind)] if self.backend else []

    def read(self, key: str) -> str | None:
        """The stored text of a fact or SOP (what memory_read returns), or None."""
        kind, name = split_key(key)
        return self.backend.get(kind, name) if self.backend else None

    def fact(self, key: str) -> Fact:
        return Fact.model_validate_json(self._required(key))

    def sop(self, key: str) -> Sop:
        return Sop.model_validate_json(self._required(key))

    def _required(self, key: str) -> str:
        text = self.read(key)
        if text is None:
            raise MemoryStoreError(f"no memory entry {key!r}")
        return text

    def put(self, entry: Fact | Sop) -> None:
        kind, name = split_key(entry.key)
        if kind != ("sop" if isinstance(entry, Sop) else "fact"):
            raise MemoryStoreError(f"key {entry.key!r} does not match a {type(entry).__name__}")
        self._backend().put(kind, name, dumps(entry))

    # L4
    def archive_keys(self) -> list[str]:
        return self.backend.names("archive") if self.backend else []

    def archive(self, task_id: str, success: bool, termination: str, consolidated: bool, trajectory: dict) -> str:
        """Append an episode to L4 under the next number; returns its key (e.g. 000003-hotel-042)."""
        safe_task = re.sub(r"[^A-Za-z0-9_.-]", "_", task_id)[:80] or "task"
        key = f"{len(self.archive_keys()) + 1:06d}-{safe_task}"
        episode = ArchivedEpisode(
            key=key,
            task_id=task_id,
            success=success,
            termination=termination,
            consolidated=consolidated,
            trajectory=trajectory,
        )
        self._backend().put("archive", key, dumps(episode))
        return key

    def archived(self, key: str) -> ArchivedEpisode:
        if not ARCHIVE_KEY_PATTERN.fullmatch(key):
            raise MemoryStoreError(f"bad archive key {key!r}")
        text = self.backend.get("archive", key) if self.backend else None
        if text is None:
            raise MemoryStoreError(f"no archived episode {key!r}")
        return ArchivedEpisode.model_validate_json(text)


def index_line(entry: Entry) -> str:
    runs = len(entry.verified_by)
    verified = f" (verified by {runs} run{'s' if runs != 1 else ''})" if runs else ""
    line = f"- {entry.key}: {' '.join(entry.summary.split())}{verified}"
    return line if len(line) <= MAX_INDEX_LINE_CHARS else line[: MAX_INDEX_LINE_CHARS - 3] + "..."


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def render_entry(entry: Fact | Sop) -> str:
    """An entry as memory_read shows it: short labelled lines, one per SOP step (tool, JSON arguments, expected result)."""
    runs = len(entry.verified_by)
    lines = [f"{entry.key} (verified by {runs} run{'s' if runs != 1 else ''})"]
    if isinstance(entry, Fact):
        return "\n".join([*lines, entry.text])
    lines += [f"Goal: {entry.goal}", f"Parameters: {', '.join(entry.parameters)}"]
    lines += [f"Precondition: {p}" for p in entry.preconditions]
    lines.append("Steps:")
    for number, step in enumerate(entry.steps, start=1):
        repeat = f"[{step.repeat}] " if step.repeat else ""
        expect = f" -> {step.expect}" if step.expect else ""
        lines.append(f"{number}. {repeat}{step.tool} {_compact(step.arguments)}{expect}")
    lines += [f"Expected: {e}" for e in entry.expected_results]
    lines += [f"If it goes wrong: {f}" for f in entry.failure_handling]
    return "\n".join(lines)


STEP_LINE = re.compile(r"^\d+\. (?:\[([^\]]+)\] )?(\w+) ")


def parse_steps(text: str) -> list[SopStep]:
    """The steps of an SOP as ``render_entry`` wrote them (what an agent reading it can recover)."""
    steps, decoder = [], json.JSONDecoder()
    for line in text.splitlines():
        match = STEP_LINE.match(line)
        if not match:
            continue
        try:
            arguments, end = decoder.raw_decode(line, match.end())
        except json.JSONDecodeError:
            continue
        rest = line[end:]
        steps.append(
            SopStep(
                tool=match.group(2),
                arguments=arguments if isinstance(arguments, dict) else {},
                repeat=match.group(1) or "",
                expect=rest[4:] if rest.startswith(" -> ") else "",
            )
        )
    return steps


def render_memory_block(lines: list[str]) -> str:
    """The system-prompt block: meta rules and the L1 index (the only layer always shown)."""
    index = "\n".join(lines) if lines else "(empty: nothing verified yet)"
    return f"{MEMORY_TAG}\n{META_RULES}\n\nIndex (L1):\n{index}\n{MEMORY_END_TAG}"


MEMORY_TAG = "<LONG_TERM_MEMORY>"
MEMORY_END_TAG = "</LONG_TERM_MEMORY>"
