"""The lock that keeps two evals off one output directory: ``OUT/eval.lock``, held with ``flock``."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

LOCK_FILE = "eval.lock"


@contextlib.contextmanager
def eval_lock(out_dir: Path) -> Iterator[None]:
    """Hold OUT/eval.lock while running; a second eval on OUT (e.g. an early --resume) stops at once.

    ``flock`` is released by the kernel when the holder dies, so a killed run leaves no stale lock;
    a run that ends removes the file (while still holding it, so a waiting eval sees the removal).
    """
    import fcntl

    path = out_dir / LOCK_FILE
    while True:
        handle = path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise SystemExit(
                f"{out_dir} is in use by a running erp-sim eval (pid {holder}); wait for it or stop it"
            ) from None
        if _same_file(handle, path):
            break
        handle.close()  # locked the file of a run that has just ended and removed it: lock the one now there
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        yield
    finally:
        path.unlink(missing_ok=True)
        handle.close()


def _same_file(handle: Any, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(handle.fileno()), os.stat(path))
    except FileNotFoundError:
        return False
