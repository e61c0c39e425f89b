"""The scripted agent's reading cache: a reading reused from the last call gives what a fresh one gives."""

from __future__ import annotations

import copy
import random

import gymnasium as gym
import pytest

import erp_sim.envs  # noqa: F401  (registers the ids)
from erp_sim.agents.policies import wrap
from erp_sim.agents.runner import run_episode
from erp_sim.agents.scripted import ScriptedAgent, View, decide

FIELDS = (
    "state",
    "last_tool",
    "last_arguments",
    "seen_tool_result",
    "sop_key",
    "sop",
    "sop_read",
    "long_term_update_requested",
)
# the itemization's view (the workflow's part: erp_sim.workflows.itemization.scripted.ItemizationView)
TASK_FIELDS = ("charges", "receipts", "receipt_ends", "paged_receipt", "by_document", "receipt_document", "confirmed")


def same_view(cached: View, fresh: View) -> bool:
    return all(getattr(cached, name) == getattr(fresh, name) for name in FIELDS) and all(
        getattr(cached.task, name) == getattr(fresh.task, name) for name in TASK_FIELDS
    )


@pytest.fixture(scope="module")
def shown_lists():
    """What the agent was shown at every call of a few episodes (full history and pruning policies)."""
    env = gym.make("erp_sim/ExpenseItemization-v0")
    lists = {}
    for policy in ("full", "head_tail:chars=800", "working_memory_anchor", "last_n:n=5"):
        trajectory = run_episode(env, wrap(ScriptedAgent(), policy), task_id="hotel-049")
        lists[policy] = [trajectory.context.shown(k) for k in range(len(trajectory.steps))]
    env.close()
    return lists


def test_a_reused_reading_gives_the_fresh_view_and_decision(shown_lists):
    reading = None
    for shown in (shown for lists in shown_lists.values() for shown in lists):
        cached = View(shown, reading=reading)
        reading = cached.reading
        assert same_view(cached, View(shown))
        assert decide(shown) == decide(list(shown))


PINNED = [  # user messages a policy pins after the instruction: charges to read, a confirmation, nothing
    "<WORKING_MEMORY>\nReceipt: document R-1, merchant M\nReceipt items (2):\n"
    "  1. 2024-03-01 | Room charge | 120.00\n  2. 2024-03-02 | Parking | 15.50\n</WORKING_MEMORY>",
    "<WORKING_MEMORY>\nReceipt items (1):\n  1. 2024-03-01 | Room charge | 99.00\n</WORKING_MEMORY>",
    "Yes, please add them all.",
    "<WORKING_MEMORY>\nNothing read yet.\n</WORKING_MEMORY>",
]


def random_lists(pool: list[dict], rng: random.Random, repeat_ids: bool):
    """Lists that extend, shrink, have the latest result's content replaced in the same dict (by another
    result's), a pinned user message after the instruction replaced (by one that reads alike or not), a
    unit's calls replaced in the same dict (by equal copies or by other tools' calls), a unit's call dropped (its result then reads without it), or (``repeat_ids``) the latest result's call
    id repeated for another tool."""
    contents = [m["content"] for m in pool if m.get("role") == "tool"]
    pool = [*pool[:2], {"role": "user", "content": PINNED[0]}, *pool[2:]]
    messages = list(pool[:3])
    for _ in range(30):
        move = rng.random()
        result = next((m for m in reversed(messages) if m.get("role") == "tool"), None)
        if (move < 0.5 or result is None) and len(messages) < len(pool):
            messages = messages + pool[len(messages) : len(messages) + rng.randint(1, 3)]
        elif move < 0.6 or result is None:
            messages = messages[: rng.randrange(3, len(messages) + 1)]
        elif move < 0.7:
            result["content"] = rng.choice(contents)
        elif move < 0.75:
            messages = [*messages[:2], {"role": "user", "content": rng.choice(PINNED)}, *messages[3:]]
        elif move < 0.8:  # the pinned message's content replaced in the same dict
            messages[2]["content"] = rng.choice(PINNED)
        elif move < 0.85:  # a unit's calls replaced in the same dict (another tool under the same id), or copied
            unit = rng.choice([m for m in messages if m.get("tool_calls")] or [messages[0]])
            calls = copy.deepcopy(unit.get("tool_calls") or [])
            for call in calls if rng.random() < 0.5 else []:
                call["function"] = {"name": rng.choice(["form_close_form", "form_save_form"]), "arguments": "{}"}
            unit["tool_calls"] = calls
        elif move < 0.92 or not repeat_ids:
            call_at = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=0)
            messages = messages[:call_at] + messages[call_at + 1 :] if call_at > 2 else messages
        else:
            call = {"id": result["tool_call_id"], "type": "function"}
            call["function"] = {"name": "form_close_form", "arguments": '{"x": 1}'}
            messages = [*messages, {"role": "assistant", "content": "", "tool_calls": [call]}]
        yield messages


@pytest.mark.parametrize("repeat_ids", [False, True])
def test_random_growth_pruning_rewrites_and_repeated_call_ids_read_as_fresh(shown_lists, repeat_ids):
    """A replaced content is read again; a repeated call id (which changes how the earlier result reads)
    makes the whole list read again."""
    rng = random.Random(3)
    longest = shown_lists["full"][-1]  # every tool result whole
    for _ in range(60):
        reading = None
        for messages in random_lists(copy.deepcopy(longest), rng, repeat_ids):  # contents are replaced in place
            cached = View(messages, reading=reading)
            reading = cached.reading
            assert same_view(cached, View(messages)), len(messages)


def test_the_very_message_objects_are_compared_not_equal_copies():
    """The instruction object shown again later is not read as a user's answer; an equal copy there is (the
    shortcut for an unchanged list compares the messages by identity, their contents by value)."""
    instruction = {"role": "user", "content": "Itemize line 1 of EXP-000001. Yes, add them all."}
    call = {"id": "c1", "type": "function", "function": {"name": "form_find_menu_item", "arguments": "{}"}}
    unit = [
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"},
    ]
    again = [instruction, *unit, instruction]
    copied = [instruction, *unit, dict(instruction)]
    assert View(again).task.confirmed is False and View(copied).task.confirmed is True
    for first, then in ((again, copied), (copied, again)):
        cached = View(then, reading=View(first).reading)
        assert same_view(cached, View(then)) and cached.task.confirmed is View(then).task.confirmed


def test_value_key_is_equal_exactly_when_the_canonical_json_is():
    """The recorder's message key (erp_sim.agents.trajectory.value_key) on values that Python calls equal
    but JSON writes apart (1, 1.0, True), lists and tuples, nested dicts in any key order."""
    from erp_sim.agents.trajectory import _canonical, value_key

    rng = random.Random(5)
    atoms = [1, 1.0, True, 0, False, None, "1", "", "a", 2.5, -0.0, 0.0]

    def value(depth: int = 0):
        kind = rng.random()
        if depth > 2 or kind < 0.5:
            return rng.choice(atoms)
        if kind < 0.75:
            items = [value(depth + 1) for _ in range(rng.randrange(3))]
            return items if rng.random() < 0.5 else tuple(items)
        keys = rng.sample(["role", "content", "name", "x"], rng.randrange(4))
        return {key: value(depth + 1) for key in keys}

    values = [value() for _ in range(150)]
    equal = 0
    for a in values:
        for b in values:
            assert (value_key(a) == value_key(b)) == (_canonical(a) == _canonical(b)), (a, b)
            equal += a is not b and _canonical(a) == _canonical(b)
    assert equal > 100  # distinct objects with equal JSON were compared too
    assert value_key({"a": 1, "b": [1.0]}) == value_key({"b": (1.0,), "a": 1})


def test_a_paged_receipt_assembled_once_reads_as_fresh_at_every_call():
    """A receipt longer than a page (long_horizon): its charges are assembled once per rows read and kept on the
    reading (``Reading.derived``); every call's view, cached or fresh, has the same charges and decision, and an
    earlier list read after a later one (rows of fewer pages) does not keep the later charges."""
    env = gym.make("erp_sim/LongHorizon-v0")
    trajectory = run_episode(env, wrap(ScriptedAgent(), "full"), task_id="long-050-00")
    env.close()
    shown = [trajectory.context.shown(k) for k in range(len(trajectory.steps))]
    reading = None
    for messages in [*shown, *reversed(shown)]:
        cached = View(messages, reading=reading)
        reading = cached.reading
        assert same_view(cached, View(messages)) and decide(messages) == decide(list(messages))
    assert any(View(messages).task.by_document for messages in shown)


def test_any_value_changed_in_the_same_dict_is_read_again(shown_lists):
    """Not only a replaced content or calls: a result turned into a user message in the same dict (its role and
    call id changed, its content kept) is read again, so the latest form is the one before it."""
    messages = copy.deepcopy(shown_lists["full"][-1])
    before = View(messages)
    result = next(m for m in reversed(messages) if m.get("role") == "tool")
    result["role"] = "user"
    del result["tool_call_id"]
    cached, fresh = View(messages, reading=before.reading), View(messages)
    assert same_view(cached, fresh) and cached.state != before.state
