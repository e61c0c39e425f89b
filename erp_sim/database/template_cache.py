"""Task templates kept on disk, so that a task's first open in a process is a restore, not a build.

A template is a task's database before its first call (its workflow's schema and shared rows, the task's own
rows, the change log's triggers). Building one costs about 4-5 ms, most of it generating the task's rows and
inserting them; restoring its serialized bytes costs 0.04 ms. So the first build of a task writes the
template to this cache, and every later first open of the task, in any process, reads it back.

A file is found only under a key made of everything its bytes depend on, so a stale template is never read:

- the generator: every file of the task's workflow folder (its tables, world and task generator, task
  model; found through the workflow registry, so a new workflow is cached the same way) and of this database
  layer, with the SQLite library's and Python's versions (``generator_digest``);
- the task: its model's JSON (a fixture regenerated under the same id has another key).

Each file starts with a header naming its key and its payload's length and CRC-32; a file whose header does
not match (truncated, overwritten, another key) is refused and built again. Files are written whole under a
temporary name and renamed, so concurrent workers never read half a file. A restored template is
byte-identical to a built one (``tests/simulator/test_template_cache.py``).

Where: ``$ERP_SIM_TEMPLATE_CACHE`` (``off`` turns the cache off), else ``$XDG_CACHE_HOME/erp-sim/templates``
(``~/.cache`` by default). At most ``MAX_FILES`` templates are kept per generator (about 120 KB each); the
oldest go first. An unwritable folder only costs the builds.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import struct
import sys
import tempfile
import zlib
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING

from erp_sim import workflows

if TYPE_CHECKING:
    from erp_sim.workflow_task import WorkflowTask

ENV_VAR = "ERP_SIM_TEMPLATE_CACHE"
MAX_FILES = 4_096  # templates kept per generator digest (a trainer may generate tasks without end)
MAGIC = b"erp-sim template 1\n"
_HEADER = struct.Struct("<32sQI")  # task key (SHA-256), payload length, payload CRC-32


def cache_root() -> Path | None:
    """The cache folder, or None when ``$ERP_SIM_TEMPLATE_CACHE`` is ``off``."""
    configured = os.environ.get(ENV_VAR, "")
    if configured.lower() in ("off", "0", "false", "no"):
        return None
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "erp-sim" / "templates"


@cache
def generator_digest(workflow: str) -> str:
    """SHA-256 of what a template of ``workflow`` is built from: its folder's files and this package's, and the
    SQLite and Python versions (read once per process: about 20 small files)."""
    digest = hashlib.sha256(f"sqlite {sqlite3.sqlite_version}; python {sys.version_info[:2]}\n".encode())
    for folder in (_package_folder(workflows.PACKAGES[workflow]), Path(__file__).parent):
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            digest.update(f"{path.relative_to(folder).as_posix()}\n".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _package_folder(package: str) -> Path:
    spec = find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"workflow package {package!r} has no folder")
    return Path(next(iter(spec.submodule_search_locations)))


def task_key(task: WorkflowTask) -> bytes | None:
    """SHA-256 of the task's model JSON (None for a task that is no pydantic model: not cached)."""
    dump = getattr(task, "model_dump_json", None)
    if dump is None:
        return None
    return hashlib.sha256(f"{type(task).workflow}\n{task.task_set}\n".encode() + dump().encode()).digest()


def _path(task: WorkflowTask, key: bytes) -> Path | None:
    root = cache_root()
    if root is None:
        return None
    workflow = type(task).workflow
    return root / f"{workflow}-{generator_digest(workflow)[:20]}" / f"{key.hex()[:40]}.sqlite"


def load(task: WorkflowTask) -> bytes | None:
    """The task's template as ``sqlite3.Connection.serialize`` gave it, if the cache holds a sound one."""
    key = task_key(task)
    path = _path(task, key) if key is not None else None
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    start = len(MAGIC) + _HEADER.size
    if not data.startswith(MAGIC) or len(data) < start:
        return None
    stored_key, length, crc = _HEADER.unpack_from(data, len(MAGIC))
    payload = data[start:]
    if stored_key != key or length != len(payload) or zlib.crc32(payload) != crc:
        return None  # another task's, cut short or damaged: built again (and rewritten)
    return payload


def store(task: WorkflowTask, payload: bytes) -> None:
    """Keep a freshly built template (best effort: a folder that cannot be written only costs the builds)."""
    key = task_key(task)
    path = _path(task, key) if key is not None else None
    if path is None or key is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _bound(path.parent)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".writing-", delete=False) as handle:
            handle.write(MAGIC + _HEADER.pack(key, len(payload), zlib.crc32(payload)) + payload)
        os.replace(handle.name, path)  # whole or not at all, for every reader
    except OSError:
        return


def _bound(folder: Path) -> None:
    """Make room for one more file: the oldest templates go past ``MAX_FILES``."""
    files = list(folder.glob("*.sqlite"))
    if len(files) < MAX_FILES:
        return
    files.sort(key=lambda path: path.stat().st_mtime)
    for path in files[: len(files) - MAX_FILES + 1]:
        path.unlink(missing_ok=True)
