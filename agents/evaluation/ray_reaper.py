"""The Ray processes an eval started die with it, even when it is killed outright (SIGKILL).

Ray's raylet and GCS share the driver's fate, but its dashboard and runtime-env agents outlive it (seen
with Ray 2.60: both still ran a minute after the eval was killed). ``start_reaper`` runs this module as
a small watchdog process: when the eval's process is gone, it stops every process that holds a file of
the eval's own Ray session directory (``/tmp/ray/session_...``), and nothing else; after a normal end
(``ray.shutdown()``), ``stop_reaper`` ends the watchdog. Linux (``/proc``); elsewhere it does nothing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time


def session_holders(session_dir: str) -> set[int]:
    """Processes (but this one) holding a file under ``session_dir``."""
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if any(os.readlink(f"/proc/{pid}/fd/{fd}").startswith(session_dir) for fd in fds):
                found.add(int(pid))
        except OSError:  # gone meanwhile, or not ours to read
            pass
    found.discard(os.getpid())
    return found


def start_reaper(session_dir: str) -> subprocess.Popen | None:
    """Watch this process; when it dies, stop the processes of the Ray session at ``session_dir``."""
    if not sys.platform.startswith("linux") or not session_dir:
        return None
    return subprocess.Popen(
        [sys.executable, "-m", "erp_sim.agents.evaluation.ray_reaper", str(os.getpid()), os.path.realpath(session_dir)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def stop_reaper(reaper: subprocess.Popen | None) -> None:
    """After ``ray.shutdown()``: the session's processes are gone, and so should the watchdog be."""
    if reaper is not None:
        reaper.kill()
        reaper.wait()


def _watch(driver: int, session_dir: str) -> None:
    while os.getppid() == driver:  # reparented once the eval is gone
        time.sleep(0.5)
    for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 0.0)):
        for pid in session_holders(session_dir):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + grace
        while session_holders(session_dir) and time.monotonic() < deadline:
            time.sleep(0.2)


if __name__ == "__main__":
    _watch(int(sys.argv[1]), sys.argv[2])
