"""Seeded fuzz through env.step: calls generated from the ``info["tools"]`` JSON schemas (right and
wrong types, boundary lengths, NaN/inf/huge numbers, any Unicode), names taken from the last
observation, messages and garbage, mixed with plausible steps so episodes reach the itemization form
and succeed. Every step keeps the documented contract, and a replay is byte-identical."""

from __future__ import annotations

import json
import math
import random
from decimal import Decimal

import gymnasium as gym
import pytest

import erp_sim.envs  # noqa: F401  (registers the ids)
from erp_sim.formstate import control_value, find_control, find_grid, form_state, parse_response

HOSTILE = [
    "",
    "é",
    "😀",
    "\u202eRTL",
    "e\u0301",
    "\x7f",
    "\x00",
    "\ud800",
    "１２",
    "NaN",
    "-1",
    "0.00",
    "9" * 40,
    "1,234.50",
    "-0.01",
    "2026-02-30",
    "05/17/2026",
    None,
    True,
    2**63,
    -1,
    1e308,
    float("nan"),
    float("inf"),
    [1, "a"],
    {"k": "v"},
]
GARBAGE = [
    "",
    "{",
    "[]",
    "null",
    '{"name": 5}',
    '{"message": 5}',
    '{"name": "x", "arguments": []}',
    '{"name": "form_save_form", "arguments": "{not json"}',
    '{"message": "a", "name": "form_save_form"}',
    5,
    None,
]
INFO_KEYS = {"task", "grade", "counts", "termination_reason", "reward", "action"}


def value(schema, rng, names):
    """A value for ``schema``: often valid (a name seen in the last observation), often hostile."""
    if "anyOf" in schema:
        return value(rng.choice(schema["anyOf"]), rng, names)
    kind = schema.get("type")
    if rng.random() < 0.25 or kind not in ("string", "integer", "boolean", "array", "object"):
        return rng.choice(HOSTILE)
    if kind == "string":
        low, high = schema.get("minLength", 0), schema.get("maxLength", 50)
        return rng.choice(
            [rng.choice(names), rng.choice(names), "x" * rng.choice([low, high, high + 1]), rng.choice(HOSTILE)]
        )
    if kind == "integer":
        low, high = schema.get("minimum", -5), schema.get("maximum", 100)
        return rng.choice([low, high, low - 1, high + 1])
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        return [value(schema.get("items", {}), rng, names) for _ in range(rng.randint(0, 3))]
    properties = schema.get("properties", {})
    return {
        key: value(sub, rng, names)
        for key, sub in properties.items()
        if key in schema.get("required", []) or rng.random() < 0.5
    }


def walk(node):
    if isinstance(node, dict):
        yield node
        for child in node.values():
            yield from walk(child)
    elif isinstance(node, list):
        for child in node:
            yield from walk(child)


def call(tool, **arguments):
    return json.dumps({"name": tool, "arguments": arguments})


def plausible(rng, task, form):
    """A step the procedure would take on the form last seen (so the fuzz gets deep)."""
    if form is None or form["Name"] not in ("TrvExpenses", "TrvExpenseReport", "TrvItemization"):
        return call("form_close_form") if form else call("form_open_menu_item", name="TrvExpenses")
    if form["Name"] == "TrvExpenses":
        return rng.choice(
            [
                call(
                    "form_filter_grid",
                    gridName="ExpenseReportsGrid",
                    gridColumnName="TrvExpTable_ExpNumber",
                    filterValue=task["report_number"],
                ),
                call("form_select_grid_row", gridName="ExpenseReportsGrid", rowNumber="1"),
                call("form_click_control", controlName="EditReport"),
            ]
        )
    if form["Name"] == "TrvExpenseReport":
        return rng.choice(
            [
                call("form_select_grid_row", gridName="ExpenseLinesGrid", rowNumber=str(task["line_number"])),
                call("form_click_control", controlName="Itemize"),
            ]
        )
    remaining = control_value(form, "ItemizationRemaining").replace(",", "")
    rows = find_grid(form["Form"], "ItemizationGrid")["Rows"]
    blank = [
        r for r in rows if not (r["Values"]["TrvExpTrans_AmountCurr"] and r["Values"]["TrvExpTrans_ExpSubCategory"])
    ]
    if blank and not any(r.get("IsSelected") for r in blank):
        return call("form_select_grid_row", gridName="ItemizationGrid", rowNumber=blank[0]["RowNumber"])
    if blank:
        options = find_control(form["Form"], "TrvExpTrans_ExpSubCategory")["Options"]
        amount = rng.choice([remaining, remaining, "0.01", f"{rng.uniform(0.01, 300):.2f}", "999999.99"])
        return call(
            "form_set_control_values",
            controlValues=[
                {"controlName": "TrvExpTrans_ExpSubCategory", "value": rng.choice(options)},
                {"controlName": "TrvExpTrans_AmountCurr", "value": amount},
            ],
        )
    if any(r["Values"]["TrvExpTrans_LineStatus"] != "Saved" for r in rows):
        return rng.choice([call("form_save_form")] * 3 + [call("form_close_form")])
    return (
        call("form_click_control", controlName="NewLine")
        if remaining != "0.00" and rng.random() < 0.8
        else rng.choice([call("form_close_form"), call("form_click_control", controlName="DeleteLine")])
    )


def fuzz(env_id, seed, steps, actions=None):
    """Plays ``steps`` steps (or replays ``actions``); returns the actions, the transcript and the step counts."""
    rng, replay = random.Random(seed), actions is not None
    actions = list(actions or [])
    env = gym.make(env_id, max_episode_steps=10_000)
    obs, info = env.reset(seed=seed)
    tools, form, seen = info["tools"], None, {}
    transcript = [json.dumps([obs, info], sort_keys=True)]
    for i in range(steps):
        if not replay:
            names = [
                n
                for node in walk(parse_response(obs))
                for k in ("Name", "RowNumber", "Value")
                if isinstance(n := node.get(k), str)
            ]
            roll = rng.random()
            if roll < 0.5:
                action = plausible(rng, info["task"], form)
            elif roll < 0.85:
                tool = rng.choice(tools)["function"]
                action = {"name": tool["name"], "arguments": value(tool["parameters"], rng, names or ["x"])}
                action = json.dumps(action) if rng.random() < 0.9 else action
            elif roll < 0.93:
                action = json.dumps({"message": rng.choice(["Should I add all charges?", "I'm done.", "é😀\x00"])})
            else:
                action = rng.choice(GARBAGE)
            actions.append(action)
        previous = info
        obs, reward, terminated, truncated, info = env.step(actions[i])
        transcript.append(json.dumps([obs, reward, terminated, truncated, info], sort_keys=True))
        assert obs in env.observation_space and isinstance(reward, float) and math.isfinite(reward)
        obs.encode("utf-8")  # lone surrogates from actions come back escaped, so logs can write any observation
        strictly_done = info["termination_reason"] == "success" and info["final_grade"]["strict_success"]
        assert reward == (1.0 if strictly_done else 0.0)  # the default reward: strict success
        assert info.keys() >= INFO_KEYS and ("final_grade" in info) == terminated
        assert all(info[key] is not previous[key] for key in ("task", "grade", "counts"))
        header, remaining = Decimal(info["task"]["header_amount"]), Decimal(info["grade"]["remaining_amount"])
        state = form_state(obs)
        form = state or form
        if isinstance(state, dict) and state["Name"] == "TrvItemization":
            total, itemized, left = (
                Decimal(control_value(state, f"Itemization{n}").replace(",", ""))
                for n in ("Total", "Itemized", "Remaining")
            )
            assert total - itemized == left
            target = f"Itemize expense - line {info['task']['line_number']} {info['task']['expense_type']} "
            if state["Caption"].startswith(target) and total == header:  # the target line's form agrees with info
                assert left == remaining
        assert math.isclose(
            info["grade"]["itemized_fraction"], max(0.0, float((header - remaining) / header)), abs_tol=1e-9
        )
        seen[info["termination_reason"] or "running"] = seen.get(info["termination_reason"] or "running", 0) + 1
        seen["saved"] = seen.get("saved", 0) + (info["grade"]["saved_lines"] > 0)
        if terminated or truncated:
            obs, info = env.reset(seed=seed + i + 1)
            form = None
            transcript.append(json.dumps([obs, info], sort_keys=True))
    env.close()
    return actions, transcript, seen


@pytest.mark.parametrize("env_id", ["erp_sim/ExpenseItemization-v0", "erp_sim/AllExpenseTypes-v0"])
def test_fuzzed_steps_keep_the_contract_and_replay_byte_for_byte(env_id):
    actions, transcript, seen = fuzz(env_id, 0, 600)
    assert seen["success"] and seen["saved"] and seen["running"]  # the fuzz reached the whole episode
    assert fuzz(env_id, 0, 600, actions)[1] == transcript
