"""Fuzz the ERP through all three faces: ``env.step``, ``ErpSession.call`` and the MCP server.

Each episode plays a random prefix of the oracle's solution (so forms are open, rows are
selected, lines are saved) and then random calls: every registered tool, arguments drawn from
plausible names and values, arbitrary JSON, and hostile values (NUL characters, lone
surrogates, integers of 5,000 digits, deep nesting, wrong types). After every call it checks:

- no exception escapes (counted apart from violations);
- the answer has the usual shape: JSON text with SessionId, Result, Messages; an error has
  Error.Code, and no answer is an InternalError (a simulator bug caught at the boundary);
- a failed call wrote nothing (the database's change log did not grow);
- remaining = the task's header amount - the saved itemized lines (from the env's info);
- env counters add up (steps = tool calls + invalid actions + user turns), rewards are 0 or 1
  and only on success;
- every 25th episode: the logged collateral diff equals the full diff of every table.

``--task-set`` picks the tasks (default hotel_50); the names and values come from the workflow folder's
``fuzzing`` module. On a bank reconciliation set (bank_recon_50, bank_recon_long) the faces are
``ErpSession.call`` and MCP (its env ids come with the workflow's env face), and after every session call
the books are audited from the raw tables
(``erp_sim.workflows.bank_reconciliation.audit``: every match group balances; difference = statement total -
matched - posted amounts).

MCP uses fastmcp's in-memory ``Client`` against ``erp_sim.mcp.server.build_server()``.

    .venv/bin/python scripts/fuzz_erp.py [--calls 100000] [--seed 0] [--task-set bank_recon_50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
import traceback
from decimal import Decimal
from importlib import import_module
from typing import Any

import gymnasium as gym

import erp_sim
import erp_sim.envs
import erp_sim.workflows
from erp_sim.database.schema import CHANGE_LOG
from erp_sim.oracle import oracle_trace
from erp_sim.workflow_task import WorkflowTask
from erp_sim.workflows.bank_reconciliation import grading as bank_grading
from erp_sim.workflows.bank_reconciliation.audit import books_problems
from erp_sim.workflows.itemization.grading import collateral_changes, full_collateral_changes, target_line_id

HOSTILE = [
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfff",
    10**5000,
    -(10**4400),
    "9" * 5000,
    "x" * 300_000,
    [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["deep"]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],
    {"\ud800": 1},
    float("inf"),
    float("nan"),
    1e308,
    [],
    {},
    {"a": None},
    ["\x00"],
]
ARGUMENTS = {name: list(tool.input_schema.get("properties", {})) for name, tool in erp_sim.TOOLS.items()}
TYPED_VALUES: list[Any] = [True, False, None, 0, 1, 7, -1, 2.5]  # every workflow's: values not of a field's type
VOCABULARY: dict[str, list[Any]] = {}  # names, values, properties, parameters: the workflow's (use_vocabulary)


def use_vocabulary(workflow: str) -> None:
    """The names and values random calls draw from: the workflow folder's ``fuzzing`` module's."""
    words = import_module(f"{erp_sim.workflows.PACKAGES[workflow]}.fuzzing")
    values = [*words.VALUES, *TYPED_VALUES]
    VOCABULARY.update(names=words.NAMES, values=values, properties=words.PROPERTIES, parameters=words.PARAMETERS)


def json_value(rng: random.Random, depth: int = 0) -> Any:
    """An arbitrary JSON value, small."""
    kind = rng.randrange(7 if depth < 3 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice([0, 1, -1, 2**31, 2**63, 2**64 + 1, rng.randint(-(10**6), 10**6)])
    if kind == 3:
        return rng.choice([0.5, -0.0, 1e-9, 123.456, rng.uniform(-1e6, 1e6)])
    if kind == 4:
        return "".join(
            chr(rng.choice([rng.randint(32, 126), rng.randint(0, 0x2FFFF)])) for _ in range(rng.randint(0, 12))
        )
    if kind == 5:
        return [json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {str(json_value(rng, depth + 1))[:10]: json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def argument_value(rng: random.Random, name: str) -> Any:
    draw = rng.random()
    if draw < 0.08:
        return rng.choice(HOSTILE)
    if draw < 0.25:
        return json_value(rng)
    names, values = VOCABULARY["names"], VOCABULARY["values"]
    if name == "controlValues":
        return [
            {"controlName": rng.choice(names), "value": argument_value(rng, "value")} for _ in range(rng.randint(1, 3))
        ]
    if name == "entities":
        properties = VOCABULARY["properties"]
        return [{rng.choice(properties): argument_value(rng, "value") for _ in range(rng.randint(1, 4))}]
    if name == "keys":
        return [rng.randint(-2, 300) for _ in range(rng.randint(1, 3))]
    if name == "parameters":
        return {rng.choice(VOCABULARY["parameters"]): argument_value(rng, "value")}
    if name in ("rowNumber", "filterValue", "value", "sqlQuery", "odataPath", "odataQueryOptions", "menuItemFilter"):
        return rng.choice(values)
    return rng.choice(names + values[:3])


def random_call(rng: random.Random) -> tuple[Any, Any]:
    """(name, arguments): mostly a registered tool with some of its arguments, sometimes junk."""
    draw = rng.random()
    if draw < 0.03:
        return rng.choice(["nope", "", "\ud800", None, 3]), {}
    name = rng.choice(list(ARGUMENTS))
    arguments = {arg: argument_value(rng, arg) for arg in ARGUMENTS[name] if rng.random() < 0.8}
    if rng.random() < 0.05:
        arguments[rng.choice(["extra", "\x00", "x" * 50])] = json_value(rng)
    if rng.random() < 0.03:
        return name, rng.choice(["not json", "[]", '{"a": 1', "{" * 5000, json_value(rng)])
    return name, arguments


class Tally:
    def __init__(self) -> None:
        self.calls = {"env": 0, "session": 0, "mcp": 0}
        self.exceptions: list[str] = []
        self.violations: list[str] = []
        self.other_mcp_texts: set[str] = set()  # non-JSON answers: the MCP layer's own errors (size limits)
        self.unsendable = 0  # MCP requests the client library refused to encode (never reached the server)

    def violation(self, where: str, text: str) -> None:
        self.violations.append(f"{where}: {text}"[:300])


def check_response_text(tally: Tally, where: str, text: str, is_error: bool) -> None:
    try:
        envelope = json.loads(text)
        text.encode("utf-8")
    except (ValueError, UnicodeEncodeError) as exc:
        tally.violation(where, f"response is not JSON/UTF-8: {exc}")
        return
    if not isinstance(envelope, dict) or not {"SessionId", "Result", "Messages"} <= set(envelope):
        tally.violation(where, f"response shape: {text[:120]}")
        return
    code = (envelope.get("Error") or {}).get("Code")
    if is_error and not code:
        tally.violation(where, f"error without Error.Code: {text[:120]}")
    if code == "InternalError":
        tally.violation(where, f"InternalError: {envelope['Result'][:160]}")


def log_size(session: erp_sim.ErpSession) -> int:
    return session.db.execute(f"SELECT count(*) FROM {CHANGE_LOG}").fetchone()[0]


def oracle_prefix(task: WorkflowTask, rng: random.Random) -> list[tuple[str, dict]]:
    trace = oracle_trace(task)
    return trace[: rng.randint(0, len(trace))]


def diffs(session: erp_sim.ErpSession) -> tuple[list[str], list[str]]:
    """The logged collateral diff of the session's task and the full one."""
    if session.workflow.name == "bank_reconciliation":
        rec_id = bank_grading.target_reconciliation(session)
        return bank_grading.collateral_changes(session, rec_id), bank_grading.full_collateral_changes(session, rec_id)
    line_id = target_line_id(session)
    return collateral_changes(session, line_id), full_collateral_changes(session, line_id)


def fuzz_session(tally: Tally, rng: random.Random, task: WorkflowTask, calls: int, full_diff: bool) -> None:
    session = erp_sim.ErpSession(task)
    audited = session.workflow.name == "bank_reconciliation"
    plan = oracle_prefix(task, rng) + [random_call(rng) for _ in range(calls)]
    for name, arguments in plan:
        before = log_size(session)
        try:
            response = session.call(name, arguments)
        except Exception as exc:
            tally.exceptions.append(f"session {name!r}: {type(exc).__name__}: {exc}"[:300])
            continue
        finally:
            tally.calls["session"] += 1
        check_response_text(tally, "session", response.text, response.is_error)
        if response.is_error and log_size(session) != before:
            tally.violation("session", f"failed {name} wrote to the database: {response.result[:120]}")
        for problem in books_problems(session.db) if audited else []:
            tally.violation("session", f"after {name}: {problem}")
    if full_diff and diffs(session)[0] != diffs(session)[1]:
        tally.violation("session", "logged collateral differs from the full diff")
    session.close()


def as_itemization(task: WorkflowTask) -> erp_sim.Task:
    from erp_sim.workflows.itemization.task import as_task

    return as_task(task)


def fuzz_env(tally: Tally, rng: random.Random, env, task: erp_sim.Task, calls: int) -> None:
    env.reset(seed=rng.randrange(1000), options={"task_id": task.task_id})
    header = task.header_decimal
    plan: list[Any] = [{"name": n, "arguments": a} for n, a in oracle_prefix(task, rng)]  # and invalid actions
    for _ in range(calls):
        draw = rng.random()
        if draw < 0.05:
            plan.append(
                {"message": rng.choice(["Should I add them?", "done", "Please attach the receipt", "\ud800", "x\x00"])}
            )
        elif draw < 0.1:
            plan.append(rng.choice(["not json", "", "[]", '{"name": 3}', json_value(rng), None, 3.5]))
        else:
            name, arguments = random_call(rng)
            action: Any = {"name": name, "arguments": arguments}
            if rng.random() < 0.5:
                try:
                    action = json.dumps(action)
                except (TypeError, ValueError):
                    pass
            plan.append(action)
    for action in plan:
        try:
            observation, reward, terminated, truncated, info = env.step(action)
        except Exception as exc:
            tally.exceptions.append(f"env {str(action)[:80]!r}: {type(exc).__name__}: {exc}"[:300])
            continue
        finally:
            tally.calls["env"] += 1
        if not isinstance(observation, str) or observation not in env.observation_space:
            tally.violation("env", "observation outside the observation space")
        kind = info["action"]["kind"]
        if kind in ("tool", "invalid") and observation:
            check_response_text(tally, "env", observation, info["action"]["is_error"])
        counts = info["counts"]
        if counts["steps"] != counts["tool_calls"] + counts["invalid_actions"] + counts["user_turns"]:
            tally.violation("env", f"counts do not add up: {counts}")
        if kind == "invalid" and info["action"]["error_code"] != "InvalidAction":
            tally.violation("env", f"invalid action without InvalidAction: {info['action']}")
        session = env.unwrapped.session
        saved = sum(
            (
                Decimal(a)
                for (a,) in session.db.execute(
                    "SELECT amount FROM expense_line WHERE parent_line_id = ?", (env.unwrapped._line_id,)
                )
            ),
            Decimal(0),
        )
        if f"{header - saved:.2f}" != info["grade"]["remaining_amount"]:
            tally.violation("env", f"remaining {info['grade']['remaining_amount']} != {header} - {saved}")
        if reward not in (0.0, 1.0) or (reward == 1.0 and info["termination_reason"] != "success"):
            tally.violation("env", f"reward {reward} with {info['termination_reason']}")
        if terminated or truncated:
            env.reset(seed=rng.randrange(1000), options={"task_id": task.task_id})


def _unsendable(exc: Exception) -> bool:
    """A lone surrogate in a tool name or an argument key fails in the MCP client's own encoding."""
    frames = traceback.extract_tb(exc.__traceback__)
    return isinstance(exc, UnicodeEncodeError) and not any("/erp_sim/" in f.filename for f in frames)


async def fuzz_mcp(tally: Tally, rng: random.Random, task_set: str, task_index: int, calls: int) -> None:
    from fastmcp import Client

    from erp_sim.mcp.server import build_server

    async with Client(build_server(task_set=task_set, task_id=task_index)) as client:
        plan = oracle_prefix(erp_sim.get_task(task_set, task_index), rng) + [random_call(rng) for _ in range(calls)]
        for name, arguments in plan:
            if not isinstance(name, str) or not isinstance(arguments, dict):
                name, arguments = "form_find_controls", {"controlSearchTerm": str(name)[:20]}
            try:
                result = await client.call_tool_mcp(name, arguments)
            except Exception as exc:
                if _unsendable(exc):  # the MCP client library cannot encode it, so no server ever sees it
                    tally.unsendable += 1
                    continue
                tally.exceptions.append(f"mcp {name!r}: {type(exc).__name__}: {exc}"[:300])
                continue
            finally:
                tally.calls["mcp"] += 1
            texts = [c.text for c in result.content if getattr(c, "text", None)]
            if not texts:
                tally.violation("mcp", f"{name}: no text content")
            elif texts[0].startswith("{"):
                check_response_text(tally, "mcp", texts[0], bool(result.is_error))
            elif (
                texts[0].startswith("Error calling tool") or "InternalError" in texts[0]
            ):  # an exception the server masked
                tally.violation("mcp", f"{name}: {texts[0][:160]}")
            else:
                tally.other_mcp_texts.add(texts[0][:60])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--calls", type=int, default=100_000, help="total calls over the three faces (about 40/40/20%%)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--episode", type=int, default=60, help="random calls per episode after the oracle prefix")
    parser.add_argument("--task-set", default="hotel_50", help="the tasks fuzzed (default hotel_50)")
    args = parser.parse_args(argv)
    rng, tally = random.Random(args.seed), Tally()
    tasks = erp_sim.load_task_set(args.task_set)
    workflow = type(tasks[0]).workflow
    use_vocabulary(workflow)
    itemization = workflow == "itemization"  # the env face is itemization's Gymnasium env
    env = gym.make("erp_sim/ExpenseItemization-v0", task_set=args.task_set) if itemization else None
    faces = ("session", "env", "session", "env", "mcp") if itemization else ("session", "session", "mcp")
    start = time.perf_counter()
    episode = 0
    while sum(tally.calls.values()) < args.calls:
        task_index = rng.randrange(len(tasks))
        face = faces[episode % len(faces)]
        if face == "session":
            fuzz_session(tally, rng, tasks[task_index], args.episode, full_diff=episode % 25 == 0)
        elif face == "env":
            fuzz_env(tally, rng, env, as_itemization(tasks[task_index]), args.episode)
        else:
            asyncio.run(fuzz_mcp(tally, rng, args.task_set, task_index, args.episode))
        episode += 1
    elapsed = time.perf_counter() - start
    total = sum(tally.calls.values())
    print(
        f"fuzzed {total:,} calls on {args.task_set} in {elapsed:.0f} s over {episode} episodes (seed {args.seed}): "
        + ", ".join(f"{face} {n:,}" for face, n in tally.calls.items())
    )
    print(f"MCP requests the client library could not encode (lone surrogates in a name or key): {tally.unsendable}")
    if tally.other_mcp_texts:
        print("MCP answers not from the ERP (the MCP layer's own errors):", sorted(tally.other_mcp_texts)[:5])
    print(f"exceptions: {len(tally.exceptions)}")
    for line in tally.exceptions[:10]:
        print("  ", line)
    print(f"invariant violations: {len(tally.violations)}")
    for line in tally.violations[:10]:
        print("  ", line)
    return 1 if tally.exceptions or tally.violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
