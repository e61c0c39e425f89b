"""The oracle as a chat model: a role handler for the fake OpenAI server (``answer_with``) that answers each
request with the oracle's next tool call for the task the request's user turn names."""

from __future__ import annotations

import json

import erp_sim
from erp_sim.workflows.bank_reconciliation.task import as_task as as_bank_task
from erp_sim.workflows.itemization.task import as_task


def oracle_reply(body: dict):
    """The oracle's next call, replayed over the tool results the request holds; (message, prompt, completion tokens)."""
    messages = body["messages"]
    task = next(t for t in map(as_task, erp_sim.load_task_set("hotel_50")) if t.report_number in messages[1]["content"])
    return _next_call(task, messages)


def bank_oracle_reply(body: dict):
    """``oracle_reply`` for bank_recon_50's tasks (named by their statement)."""
    messages = body["messages"]
    tasks = map(as_bank_task, erp_sim.load_task_set("bank_recon_50"))
    task = next(t for t in tasks if f"bank statement {t.statement_id} " in messages[1]["content"])
    return _next_call(task, messages)


def _next_call(task, messages: list[dict]):
    calls = erp_sim.oracle_calls(task)
    name, arguments = next(calls)
    for message in messages[2:]:
        if message["role"] == "tool":
            name, arguments = calls.send(message["content"])
    number = sum(m["role"] == "tool" for m in messages) + 1
    call = {"id": f"call_{number}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}, 10, 5
