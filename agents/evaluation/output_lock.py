"""The lock that keeps two evals off one output directory: ``OUT/eval.lock``, held with ``flock``."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

LOCK_FILE = "eval.lock"


@contextlib.contextmanager
def eval_lock(out_dir: Path) -> Iterator[None]:
    """Hold OUT/eval.lock while running; a second eval on OUT (e.g. an early --resume) stops at once.

    ``flock`` is released by the kernel when the holder dies, so a killed run leaves no stale lock;
    a run that ends removes the file (while still holding it, so a waiting eval sees the removal).
    """
    path = out_dir / LOCK_FILE
    try:
        handle = hold_lock(path)
    except LockHeld as held:
        raise SystemExit(
            f"{out_dir} is in use by a running erp-sim eval (pid {held.holder}); wait for it or stop it"
        ) from None
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
        handle.close()


class LockHeld(Exception):
    """Another process holds the lock: ``holder`` is the pid it wrote (or "another process")."""

    def __init__(self, holder: str):
        super().__init__(holder)
        self.holder = holder


def hold_lock(path: Path) -> TextIO:
    """``flock`` ``path`` for this process and write its pid there; ``LockHeld`` while another process holds it.
    The lock lasts until the returned file is closed (or the process dies)."""
    while True:
        handle = path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise LockHeld(holder) from None
        if same_file(handle, path):
            break
        handle.close()  # locked the file of a holder that has just ended and removed it: lock the one now there
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


def same_file(handle: Any, path: Path) -> bool:
    """Whether the open ``handle`` is the file at ``path`` still (not one a stale lock's remover replaced)."""
    try:
        return os.path.samestat(os.fstat(handle.fileno()), os.stat(path))
    except FileNotFoundError:
        return False
