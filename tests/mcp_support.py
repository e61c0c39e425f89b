"""Shared helpers for the MCP server tests that run the server as a separate process."""

from __future__ import annotations

import json
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parent.parent
SERVE = [sys.executable, "-m", "erp_sim.mcp.server"]
TOKEN, ADMIN = "client-token-123", "admin-token-456"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(args: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        SERVE + args, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log.open("w")
    )


def wait_for_port(proc: subprocess.Popen, port: int, log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(log.read_text())


def http_client(base: str, *, mode: str = "legacy", headers: dict | None = None, token: str = TOKEN):
    """An ``mcp`` SDK client over streamable HTTP (the caller closes ``http``)."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}", **(headers or {})}, timeout=30)
    return http, Client(streamable_http_client(f"{base}/mcp", http_client=http), mode=mode)


async def admin(base: str, path: str, method: str = "GET") -> httpx.Response:
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {ADMIN}"}, timeout=10) as http:
        return await http.request(method, f"{base}{path}")


@contextmanager
def http_server(log_dir: Path, *extra_args: str) -> Iterator[str]:
    """``erp-sim serve --http`` with the test tokens (and ``extra_args``) on a free port; yields its base URL."""
    port, log = free_port(), log_dir / "server.log"
    proc = start_server(
        ["--http", "--port", str(port), "--auth-token", TOKEN, "--admin-token", ADMIN, *extra_args], log
    )
    try:
        wait_for_port(proc, port, log)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


INIT: dict[str, Any] = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "raw", "version": "0"},
}


class RawStdio:
    """The server as a child process, spoken to line by line."""

    def __init__(self, *args: str):
        self.proc = subprocess.Popen(
            SERVE + list(args), cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None  # both pipes
        self.stdin, stdout = self.proc.stdin, self.proc.stdout
        self.lines: queue.Queue = queue.Queue()

        def read_lines() -> None:
            for line in stdout:
                self.lines.put(line)

        threading.Thread(target=read_lines, daemon=True).start()

    def send(self, raw: bytes | str) -> None:
        self.stdin.write(raw.encode() if isinstance(raw, str) else raw)
        self.stdin.write(b"\n")
        self.stdin.flush()

    def receive(self) -> tuple[dict, int]:
        line = self.lines.get(timeout=30)
        return json.loads(line), len(line)

    def initialize(self) -> None:
        self.send(json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": INIT}))
        assert self.receive()[0]["id"] == "init"
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def peak_rss_kb(self) -> int:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])

    def close(self) -> None:
        self.stdin.close()
        self.proc.wait(20)

    def __enter__(self) -> RawStdio:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
