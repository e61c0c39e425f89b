"""Benchmark: the OpenEnv server under RL load and abuse (issue 38).

    .venv/bin/python scripts/bench_openenv_load.py [--steps 400] [--think-ms 5] [--seconds 8]

Starts ``erp-sim serve --openenv`` (its defaults, ``--max-sessions 300``) on a free loopback port. A
well-behaved client (one WebSocket session, raw frames, replaying the oracle on hotel tasks, ``--think-ms``
between steps as a trainer waits for its model) measures its step latency alone, then beside each abuser,
each in its own process:

- ``big_frames``: 15 MiB step frames, one per connection, back to back (each refused from its header, 1009);
- ``frames_at_cap``: step frames just under the frame limit (250 KiB of argument text) on one session,
  each answered as an invalid action;
- ``big_bodies``: POSTs declaring 300 MB, and chunked ones streaming 64 KiB pieces until refused (413);
- ``reset_flood``: HTTP ``/reset`` from 8 connections at once, back to back;
- ``sessions_63``: 63 more sessions replaying the oracle flat out (no think time): 64 in all.

Then the throughput (steps/s over all sessions, flat out, ``--seconds`` each) at 64 and 256 sessions.
Prints p50/p95 of the well-behaved client in each phase and its ratio to the alone baseline of the same
run, and what each abuser got done. The target: no single abuser moves the p95 by more than 2x (the 63
sessions are load, not one abuser: they share the CPU as they should).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
from websockets.asyncio.client import connect

import erp_sim

ROOT = Path(__file__).resolve().parent.parent
TASKS = ("hotel-003", "hotel-012", "hotel-024")
MAX_SESSIONS = 300


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(port: int) -> subprocess.Popen:
    command = [sys.executable, "-m", "erp_sim.agents.cli", "serve", "--openenv", "--port", str(port)]
    server = subprocess.Popen(
        [*command, "--max-sessions", str(MAX_SESSIONS)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    for _ in range(600):
        if server.poll() is not None:
            raise SystemExit(f"the server exited: {server.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit("the server did not come up")


async def send(ws, message: dict) -> dict:
    await ws.send(json.dumps(message))
    return json.loads(await ws.recv())


async def oracle_steps(url: str, think_s: float, deadline: float, steps: int | None, times: list[float]) -> None:
    """One session replaying the oracle (task after task) until ``deadline`` or ``steps`` steps; step latencies
    appended to ``times`` (which sessions of one process share, so ``report`` counts them all)."""
    async with connect(f"{url.replace('http', 'ws')}/ws", max_size=None) as ws:
        episode = 0
        while time.perf_counter() < deadline and (steps is None or len(times) < steps):
            task_id = TASKS[episode % len(TASKS)]
            episode += 1
            reply = await send(ws, {"type": "reset", "data": {"task_id": task_id}})
            calls = erp_sim.oracle_calls(erp_sim.get_task("hotel_50", task_id))
            name, arguments = next(calls)
            while time.perf_counter() < deadline and (steps is None or len(times) < steps):
                started = time.perf_counter()
                reply = await send(ws, {"type": "step", "data": {"tool": name, "arguments": arguments}})
                times.append(time.perf_counter() - started)
                report(len(times))
                assert reply["type"] == "observation", reply
                if reply["data"]["done"]:
                    break
                if think_s:
                    await asyncio.sleep(think_s)
                try:
                    name, arguments = calls.send(reply["data"]["observation"]["text"])
                except StopIteration:
                    break


def cpu_seconds(pid: int) -> float:
    """A process's CPU time so far (user + system; Linux's /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def figures(times: list[float]) -> dict:
    ordered = sorted(times)
    return {
        "steps": len(ordered),
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2),
    }


# --- abusers (each runs in its own process: python bench_openenv_load.py --abuser KIND --url URL) ---
async def big_frames(url: str) -> int:
    """15 MiB step frames, one per connection, written raw (the frame built once, a zero mask: the abuser's own
    CPU stays out of the way, and the wire carries what a client without compression sends)."""
    payload = json.dumps({"type": "step", "data": {"tool": "x", "arguments": {"a": "x" * (15 << 20)}}}).encode()
    frame = b"\x81\xff" + len(payload).to_bytes(8, "big") + b"\x00\x00\x00\x00" + payload
    host, port = url.removeprefix("http://").split(":")
    handshake = (
        f"GET /ws HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    ).encode()
    done = 0
    while True:
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(handshake)
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += sock.recv(4096)
            assert answer.startswith(b"HTTP/1.1 101"), answer[:40]
            try:
                sock.sendall(frame)
                sock.recv(4096)  # the 1009 close
            except OSError:  # cut while the frame was still going out
                pass
        done += 1
        report(done)


async def frames_at_cap(url: str) -> int:
    frame = json.dumps({"type": "step", "data": {"tool": "form_find_menu_item", "arguments": {"a": "x" * 250_000}}})
    done = 0
    async with connect(f"{url.replace('http', 'ws')}/ws", max_size=None) as ws:
        while True:
            await send(ws, {"type": "reset", "data": {"task_id": "hotel-003"}})
            for _ in range(150):  # within the env's 200-step limit
                await ws.send(frame)
                reply = json.loads(await ws.recv())
                assert reply["data"]["observation"]["error_code"] == "InvalidAction", reply
                done += 1
                report(done)


async def big_bodies(url: str) -> int:
    piece = b"x" * (64 << 10)

    async def body(size: int):
        for _ in range(size // len(piece)):
            yield piece

    done = 0
    async with httpx.AsyncClient(timeout=30) as http:
        while True:  # 300 MB declared, then the same streamed without a Content-Length
            for headers in ({"content-length": str(300 << 20)}, {}):
                try:
                    reply = await http.post(f"{url}/step", content=body(300 << 20), headers=headers)
                    assert reply.status_code == 413, reply.status_code
                except httpx.HTTPError:  # cut while the body was still going out
                    pass
                done += 1
                report(done)


async def reset_flood(url: str) -> int:
    done = 0

    async def one_connection(index: int) -> None:
        nonlocal done
        async with httpx.AsyncClient(timeout=30) as http:
            while True:
                reply = await http.post(f"{url}/reset", json={"task_id": TASKS[index % len(TASKS)]})
                assert reply.status_code == 200, reply.status_code
                done += 1
                report(done)

    await asyncio.gather(*(one_connection(i) for i in range(8)))
    return done


async def sessions(url: str, count: int, seconds: float = 3600.0) -> int:
    times: list[float] = []
    deadline = time.perf_counter() + seconds
    await asyncio.gather(*(oracle_steps(url, 0.0, deadline, None, times) for _ in range(count)))
    return len(times)


ABUSERS = {
    "big_frames": big_frames,
    "frames_at_cap": frames_at_cap,
    "big_bodies": big_bodies,
    "reset_flood": reset_flood,
    "sessions_63": lambda url: sessions(url, 63),
}
UNITS = {
    "big_frames": "frames refused",
    "frames_at_cap": "invalid steps",
    "big_bodies": "bodies refused",
    "reset_flood": "resets",
    "sessions_63": "steps",
}
_last_report = [0.0]


def report(done: int) -> None:
    """The abuser's count, on stdout at most every 0.2 s (the parent reads the last line)."""
    now = time.perf_counter()
    if now - _last_report[0] > 0.2:
        _last_report[0] = now
        print(done, flush=True)


def start_abuser(kind: str, url: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, __file__, "--abuser", kind, "--url", url], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )


def stop_abuser(process: subprocess.Popen, started: float) -> tuple[str, float]:
    """The abuser's last count, and its own CPU (cores) since ``started``, as it stops."""
    cpu = cpu_seconds(process.pid) / (time.perf_counter() - started)
    process.terminate()
    out, _ = process.communicate(timeout=30)
    lines = out.split()
    return (lines[-1] if lines else "0"), cpu


# --- throughput: all sessions flat out, over two client processes ---
def throughput(url: str, count: int, seconds: float) -> float:
    halves = (count // 2, count - count // 2)
    workers = [
        subprocess.Popen(
            [sys.executable, __file__, "--sessions", str(n), "--seconds", str(seconds), "--url", url],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for n in halves
    ]
    steps = sum(int(worker.communicate(timeout=seconds + 120)[0].split()[-1]) for worker in workers)
    return steps / seconds


def good_client(url: str, steps: int, think_s: float, server_pid: int) -> dict:
    """The well-behaved client's figures, with the server's CPU share (cores) over its phase."""
    times: list[float] = []
    cpu, started = cpu_seconds(server_pid), time.perf_counter()
    asyncio.run(oracle_steps(url, think_s, time.perf_counter() + 3600, steps, times))
    return {**figures(times), "server_cpu": (cpu_seconds(server_pid) - cpu) / (time.perf_counter() - started)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=400, help="well-behaved steps per phase")
    parser.add_argument("--think-ms", type=float, default=5.0, help="the well-behaved client's pause between steps")
    parser.add_argument("--seconds", type=float, default=8.0, help="length of each throughput run")
    parser.add_argument("--rounds", type=int, default=1, help="times each abuser's pair of phases is run")
    parser.add_argument("--abuser", choices=sorted(ABUSERS), help=argparse.SUPPRESS)
    parser.add_argument("--sessions", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.abuser:  # a child: abuse until terminated
        asyncio.run(ABUSERS[args.abuser](args.url))
        return
    if args.sessions:  # a child: count steps of N sessions flat out
        print(asyncio.run(sessions(args.url, args.sessions, args.seconds)), flush=True)
        return

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_server(port)
    think_s = args.think_ms / 1000
    rows = []
    try:
        good_client(url, 60, think_s, server.pid)  # warm: tasks, templates, caches
        for _ in range(args.rounds):
            for kind in ABUSERS:  # each abuser against an alone run just before it: the machine's load drifts
                alone = good_client(url, args.steps, think_s, server.pid)
                abuser, started = start_abuser(kind, url), time.perf_counter()
                try:
                    time.sleep(1.5)  # let it get going
                    beside = good_client(url, args.steps, think_s, server.pid)
                finally:
                    stopped = stop_abuser(abuser, started)
                rows.append((kind, alone, beside, *stopped))
                time.sleep(0.5)
        rates = {count: throughput(url, count, args.seconds) for count in (64, 256)}
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"well-behaved client: {args.steps} oracle steps per phase, {args.think_ms:g} ms between steps;")
    print("each abuser's phase against an alone phase run just before it (x: beside / alone)")
    print("the server's CPU (cores) alone and beside, and the abuser process's own")
    header = f"{'abuser':<14} {'alone p50':>9} {'p95':>7} {'beside p50':>10} {'p95':>7} {'p50 x':>6} {'p95 x':>6}"
    print(f"{header} {'server cpu':>10} {'beside':>6} {'abuser':>6}  what the abuser got done")
    for kind, alone, beside, count, abuser_cpu in rows:
        p50x, p95x = beside["p50_ms"] / alone["p50_ms"], beside["p95_ms"] / alone["p95_ms"]
        print(
            f"{kind:<14} {alone['p50_ms']:>9.2f} {alone['p95_ms']:>7.2f} {beside['p50_ms']:>10.2f} "
            f"{beside['p95_ms']:>7.2f} {p50x:>6.2f} {p95x:>6.2f} {alone['server_cpu']:>10.2f} "
            f"{beside['server_cpu']:>6.2f} {abuser_cpu:>6.2f}  {count} {UNITS[kind]}"
        )
    alone_p95 = statistics.median(alone["p95_ms"] for _, alone, *_ in rows)
    print(f"alone, median over the phases: p95 {alone_p95:.2f} ms")
    if args.rounds > 1:
        for kind in ABUSERS:
            ratios = [beside["p95_ms"] / alone["p95_ms"] for name, alone, beside, *_ in rows if name == kind]
            print(f"{kind}: p95 x{statistics.median(ratios):.2f} (median of {len(ratios)} rounds)")
    for sessions_count, rate in rates.items():
        print(f"throughput, {sessions_count} sessions flat out: {rate:,.0f} steps/s")
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
