"""``erp-sim serve --openenv`` started by a test, as a user starts it, with its log kept."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Served:
    url: str  # http://127.0.0.1:PORT
    log: Path  # the server's stderr

    @property
    def ws(self) -> str:
        return self.url.replace("http://", "ws://") + "/ws"


@contextmanager
def serve_openenv(log_dir: Path, *args: str) -> Iterator[Served]:
    """The server on a free loopback port with ``args``; yields where it serves and its log."""
    port, log = free_port(), log_dir / f"openenv-{time.monotonic_ns()}.log"
    command = [sys.executable, "-m", "erp_sim.agents.cli", "serve", "--openenv", "--port", str(port), *args]
    with log.open("wb") as err:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            if process.poll() is not None:
                raise AssertionError(f"the server exited: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield Served(url, log)
    finally:
        process.terminate()
        process.wait(timeout=30)


def frame(kind: str, data: object = None) -> str:
    """An OpenEnv WebSocket message."""
    return json.dumps({"type": kind} if data is None else {"type": kind, "data": data})
