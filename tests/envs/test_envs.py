"""The Gymnasium envs, driven by the registry: API conformance, determinism, robustness to any action."""

from __future__ import annotations

import json
import re
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.registration import EnvSpec
from gymnasium.utils.env_checker import check_env, data_equivalence
from process_support import fresh_python

import erp_sim.envs
from erp_sim.envs.expense_env import TERMINATION_REASONS, ExpenseItemizationEnv

ENV_IDS = sorted(env_id for env_id in gym.registry if env_id.startswith("erp_sim/"))
FIND_MENU = json.dumps({"name": "form_find_menu_item", "arguments": {"menuItemFilter": "expense"}})
OPEN_REPORTS = {"name": "form_open_menu_item", "arguments": {"name": "TrvExpenses", "type": "Display"}}


def test_registry_has_one_id_per_fixture_set_and_expense_type():
    from erp_sim.workflows.itemization.catalog import EXPENSE_TYPES

    assert sorted(erp_sim.envs.ENV_IDS) == ENV_IDS
    task_sets = {gym.spec(env_id).kwargs["task_set"] for env_id in ENV_IDS}
    assert task_sets == {
        "hotel_50",
        "expense_types",
        "long_horizon",
        *EXPENSE_TYPES,
        "bank_recon_50",
        "bank_recon_long",
    }
    assert all(
        gym.spec(env_id).max_episode_steps == erp_sim.envs.STEP_LIMITS.get(env_id, erp_sim.envs.MAX_EPISODE_STEPS)
        for env_id in ENV_IDS
    )


def test_pprint_registry_lists_the_ids(capsys):
    gym.pprint_registry()
    printed = capsys.readouterr().out
    assert "===== erp_sim =====" in printed
    assert all(env_id in printed for env_id in ENV_IDS)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_passes(env_id):
    env = gym.make(env_id)
    check_env(env.unwrapped)
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_spec_survives_json_round_trip(env_id):
    spec = gym.spec(env_id)
    assert EnvSpec.from_json(spec.to_json()) == spec


def test_make_with_module_prefix_in_a_fresh_interpreter():
    code = (
        "import gymnasium as gym; env = gym.make('erp_sim.envs:erp_sim/MealsItemization-v0', max_episode_steps=7); "
        "obs, info = env.reset(seed=3); print(env.spec.max_episode_steps, info['task']['expense_type'])"
    )
    assert fresh_python(code, timeout=60).split() == ["7", "Meals"]


def test_import_envs_reads_only_the_registry_s_cheap_part():
    # registering the ids reads each workflow's TaskSets (its package's __init__), nothing of the simulator
    code = (
        "import sys, json, erp_sim.envs; print(json.dumps([sorted(m for m in sys.modules if m.startswith('erp_sim')), "
        "'gymnasium' in sys.modules, 'pydantic' in sys.modules]))"
    )
    loaded, gymnasium, pydantic = json.loads(fresh_python(code, timeout=60))
    assert set(loaded) == {
        "erp_sim",
        "erp_sim.envs",
        "erp_sim.outcomes",
        "erp_sim.workflows",
        "erp_sim.workflows.itemization",
        "erp_sim.workflows.bank_reconciliation",
    }
    assert gymnasium and not pydantic


def _rollout(env_id: str, seed: int, actions: list) -> list:
    env = gym.make(env_id)
    transitions: list[tuple[Any, ...]] = [env.reset(seed=seed)]
    for action in actions:
        transitions.append(env.step(action))
    env.close()
    return transitions


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_same_seed_and_actions_give_identical_transitions(env_id):
    actions = [
        FIND_MENU,
        OPEN_REPORTS,
        "not json",
        {"message": "Should I add the missing items?"},
        '{"name": "form_click_control", "arguments": {"controlName": "EditReport"}}',
        {"message": "I'm done."},
    ]
    first, second = _rollout(env_id, 11, actions), _rollout(env_id, 11, actions)
    for a, b in zip(first, second, strict=True):
        assert data_equivalence(a, b, exact=True)
        assert json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def test_reset_draws_tasks_with_np_random_and_accepts_task_options():
    env = gym.make("erp_sim/ExpenseItemization-v0")
    drawn = [env.reset(seed=seed)[1]["task"]["task_id"] for seed in range(6)]
    assert drawn == [env.reset(seed=seed)[1]["task"]["task_id"] for seed in range(6)]
    assert len(set(drawn)) > 1
    assert env.reset(options={"task_id": "hotel-007"})[1]["task"]["task_id"] == "hotel-007"
    assert env.reset(options={"task_index": 7})[1]["task"]["task_id"] == env.unwrapped.tasks[7].task_id
    with pytest.raises(ValueError, match="is not a task of"):
        env.reset(options={"task_id": "no-such-task"})


def test_reset_info_carries_tools_prompt_task_and_grade():
    env = gym.make("erp_sim/AllExpenseTypes-v0")
    obs, info = env.reset(seed=0, options={"task_id": env.unwrapped.tasks[42].task_id})
    import erp_sim

    assert obs == env.unwrapped.task.instruction()
    assert info["tools"] == erp_sim.openai_tool_schemas() and len(info["tools"]) == 22
    assert info["system_prompt"] == erp_sim.envs.system_prompt(env.unwrapped.task)
    assert info["task"]["header_amount"] == info["grade"]["remaining_amount"]
    assert info["grade"]["itemized_fraction"] == 0.0 and info["termination_reason"] is None
    assert info["counts"] == {"steps": 0, "tool_calls": 0, "invalid_actions": 0, "tool_errors": 0, "user_turns": 0}


def test_receipt_in_instruction_lists_the_charges():
    env = gym.make("erp_sim/MealsItemization-v0", receipt_in_instruction=True)
    obs, _ = env.reset(seed=0)
    assert all(item.description in obs and item.amount in obs for item in env.unwrapped.task.receipt_items)


def test_docstring_and_info_agree():
    """Every info key returned is documented in the class docstring, and every documented key is returned."""
    import inspect

    doc = ExpenseItemizationEnv.__doc__
    section = doc.split("## Information")[1].split("## Arguments")[0]
    env = gym.make("erp_sim/ExpenseItemization-v0", user_model=None)
    _, reset_info = env.reset(seed=0)
    _, _, _, _, step_info = env.step({"message": "Hello?"})
    returned = set(reset_info) | set(step_info)
    nested = {k for key in ("task", "grade", "counts", "action") for k in step_info[key]}
    assert all(re.search(rf"\b{key}\b", section) for key in returned | nested), returned | nested
    documented = set(re.findall(r"``(\w+)``", section)) - {"reset", "step", "TERMINATION_REASONS"}
    assert documented == returned
    assert all(reason in doc for reason in TERMINATION_REASONS)
    arguments = set(re.findall(r"- ``(\w+)``", doc.split("## Arguments")[1]))
    assert arguments == set(inspect.signature(ExpenseItemizationEnv).parameters)


def test_infos_are_fresh_objects():
    env = gym.make("erp_sim/ExpenseItemization-v0")
    _, first = env.reset(seed=0)
    _, _, _, _, second = env.step(FIND_MENU)
    _, _, _, _, third = env.step(FIND_MENU)
    for key in ("task", "grade", "counts"):
        assert first[key] is not second[key] and second[key] is not third[key]
    first["grade"]["success"] = "mutated"
    assert env.step(FIND_MENU)[4]["grade"]["success"] is False


def test_max_episode_steps_truncates_and_is_overridable():
    env = gym.make("erp_sim/ExpenseItemization-v0", max_episode_steps=3)
    env.reset(seed=0)
    results = [env.step(FIND_MENU) for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True] and not any(r[2] for r in results)
    assert results[-1][4]["termination_reason"] is None


def test_render_ansi():
    env = gym.make("erp_sim/ExpenseItemization-v0", render_mode="ansi")
    obs, _ = env.reset(seed=0)
    assert env.render().startswith(obs) and "remaining" in env.render()
    response, *_ = env.step(FIND_MENU)
    frame = env.render()
    assert frame.startswith("Result: ") and response not in frame  # play's readable view, not the JSON
    assert "remaining" in frame.splitlines()[-1]
    plain = gym.make("erp_sim/ExpenseItemization-v0")
    plain.reset(seed=0)
    assert plain.render() is None


@pytest.mark.filterwarnings("ignore:.*render_mode:UserWarning")
@pytest.mark.parametrize(
    "kwargs",
    [
        {"verbosity": "loud"},
        {"reward_shaping": "dense"},
        {"user_model": "llm"},
        {"max_user_turns": 0},
        {"max_user_turns": 2.5},
        {"max_user_turns": True},
        {"max_user_turns": "3"},
        {"receipt_in_instruction": "no"},
        {"render_mode": "human"},
        {"user_model": object()},
        {"faults": "rate=7"},
        {"faults": "rate=nan"},
        {"faults": "kinds=Gremlin"},
        {"task_set": "Taxis"},
        {"task_set": None},
        {"task_set": 5},
        {"task_set": "hotel_50:dev"},
        {"task_set": "hotel_50:hotel-001"},
    ],
)
def test_bad_kwargs_fail_at_construction(kwargs):
    with pytest.raises((ValueError, TypeError)):
        gym.make("erp_sim/ExpenseItemization-v0", **kwargs)


def test_numpy_scalars_are_taken_as_settings():
    env = gym.make("erp_sim/ExpenseItemization-v0", max_user_turns=np.int64(3), receipt_in_instruction=np.bool_(True))
    assert env.unwrapped.max_user_turns == 3 and type(env.unwrapped.max_user_turns) is int
    assert env.unwrapped.receipt_in_instruction is True


def test_compact_verbosity_gives_smaller_observations():
    sizes = {}
    for verbosity in ("default", "compact"):
        env = gym.make("erp_sim/ExpenseItemization-v0", verbosity=verbosity)
        env.reset(seed=0)
        sizes[verbosity] = len(env.step(OPEN_REPORTS)[0])
    assert sizes["compact"] < sizes["default"]


def test_faults_are_injected_deterministically():
    def run():
        env = gym.make("erp_sim/ExpenseItemization-v0", faults="rate=0.5,seed=3")
        env.reset(seed=0)
        return [env.step(FIND_MENU)[4]["action"]["error_code"] for _ in range(12)]

    codes = run()
    assert codes == run()
    assert any(code for code in codes) and not all(codes)


# --- malformed actions -----------------------------------------------------------------------------
MALFORMED = [
    "",
    "   ",
    "not json",
    "{",
    "[]",
    "null",
    "42",
    '"a string"',
    "{}",
    '{"name": 3}',
    '{"name": "form_save_form", "x": 1}',
    '{"message": 5}',
    '{"message": "hi", "name": "form_save_form"}',
    '{"name": "no_such_tool", "arguments": {}}',
    '{"name": "form_find_menu_item"}',
    '{"name": "form_find_menu_item", "arguments": {"menuItemFilter": 7}}',
    '{"name": "form_find_menu_item", "arguments": {"menuItemFilter": "x", "bogus": 1}}',
    '{"name": "form_find_menu_item", "arguments": "{not json"}',
    '{"name": "form_find_menu_item", "arguments": [1]}',
    '{"name": "form_select_grid_row", "arguments": {"gridName": "G", "rowNumber": 1}}',
    "[" * 50_000,
    "x" * 300_000,
    json.dumps({"name": "form_find_menu_item", "arguments": {"menuItemFilter": "é" * 10_000}}),
    "\x00\ud800",
    {"name": "form_find_menu_item"},
    {"arguments": {}},
    {1: 2},
    3.5,
    None,
    b"{}",
    ["name"],
    {"name": "form_find_menu_item", "arguments": {"menuItemFilter": float("nan")}},
    "1" * 5000,
    '{"name": "form_find_menu_item", "arguments": {"menuItemFilter": "x", "topHitCount": ' + "9" * 5000 + "}}",
    {"name": "form_find_menu_item", "arguments": {"menuItemFilter": 10**5000}},
    {"message": {1, 2}},
    {"name": "form_find_menu_item", "arguments": '{"menuItemFilter": "x", "topHitCount": 1' + "0" * 5000 + "}"},
]


def test_malformed_actions_never_raise_and_count_as_invalid():
    env = gym.make("erp_sim/ExpenseItemization-v0")
    env.reset(seed=0)
    for count, action in enumerate(MALFORMED, start=1):
        obs, reward, terminated, truncated, info = env.step(action)
        assert obs in env.observation_space and reward == 0.0 and not terminated and not truncated, repr(action)[:80]
        assert json.loads(obs)["Result"].startswith("Error"), repr(action)[:80]
        assert info["counts"]["invalid_actions"] == count, repr(action)[:80]
        assert info["action"]["kind"] == "invalid" and info["action"]["error_code"] == "InvalidAction"
        assert json.loads(obs)["Error"]["Code"] == "InvalidAction" and info["counts"]["tool_calls"] == 0
    assert env.step(FIND_MENU)[4]["counts"]["invalid_actions"] == len(MALFORMED)


def test_an_oversized_dict_action_is_refused_before_its_json_is_written(monkeypatch):
    """Its JSON would pass the action limit: refused on a lower bound of that length, so a 50 MB string
    argument is never copied into 50 MB more of JSON text (nor, nested, into a list that holds it)."""
    import erp_sim.envs.expense_env as expense_env

    env = gym.make("erp_sim/ExpenseItemization-v0")
    env.reset(seed=0)
    written, dumps = [], json.dumps
    monkeypatch.setattr(expense_env.json, "dumps", lambda *a, **k: written.append(a) or dumps(*a, **k))
    huge = "x" * 50_000_000
    for action in (
        {"name": "form_find_menu_item", "arguments": {"menuItemFilter": huge}},
        {"name": "form_find_menu_item", "arguments": {"a": [[{"b": huge}]]}},
        {"name": "form_find_menu_item", "arguments": {str(i): i for i in range(150_000)}},
        {"message": huge},
    ):
        observation, reward, _, _, info = env.step(action)
        assert "over 200,000 characters long as JSON" in json.loads(observation)["Error"]["Message"]
        assert info["action"]["kind"] == "invalid" and reward == 0.0
    assert written == [] and info["counts"]["invalid_actions"] == 4
    cyclic: dict = {"name": "form_find_menu_item"}
    cyclic["arguments"] = cyclic  # its JSON would be endless
    assert env.step(cyclic)[4]["counts"]["invalid_actions"] == 5


def test_an_adapters_invalid_action_is_counted_with_its_reason():
    from erp_sim.envs.action_checks import InvalidAction

    env = gym.make("erp_sim/ExpenseItemization-v0")
    env.reset(seed=0)
    observation, reward, terminated, _, info = env.step(InvalidAction("tool must be a tool's name, got int."))
    assert json.loads(observation)["Error"] == {
        "Code": "InvalidAction",
        "Message": "tool must be a tool's name, got int.",
    }
    assert reward == 0.0 and not terminated and info["counts"]["invalid_actions"] == 1 and info["counts"]["steps"] == 1


def test_invalid_action_observation_has_the_simulator_error_shape():
    env = gym.make("erp_sim/ExpenseItemization-v0")
    env.reset(seed=0)
    envelope = json.loads(env.step("oops")[0])
    assert envelope["Error"]["Code"] == "InvalidAction"
    assert set(envelope) == {"SessionId", "Result", "Messages", "Error"}
    for action in (
        '{"name": "nope"}',
        '{"name": "form_find_menu_item", "arguments": {"menuItemFilter": 3}}',
        '{"name": "form_find_menu_item", "arguments": {"menuItemFilter": "\\u0000"}}',
    ):
        observation, _, _, _, info = env.step(action)
        envelope = json.loads(observation)
        assert envelope["Error"]["Code"] == "InvalidAction" and set(envelope) == {
            "SessionId",
            "Result",
            "Messages",
            "Error",
        }
        assert info["action"] == {
            "kind": "invalid",
            "tool": json.loads(action)["name"],
            "is_error": True,
            "error_code": "InvalidAction",
        }
    assert info["counts"]["invalid_actions"] == 4 and info["counts"]["tool_calls"] == info["counts"]["tool_errors"] == 0


def test_business_errors_are_not_invalid_actions():
    env = gym.make("erp_sim/ExpenseItemization-v0")
    env.reset(seed=0)
    info = env.step('{"name": "form_save_form", "arguments": {}}')[4]  # no form open: a valid call that fails
    assert info["action"]["is_error"] and info["counts"]["tool_errors"] == 1 and info["counts"]["invalid_actions"] == 0


def test_random_text_actions_never_raise():
    env = gym.make("erp_sim/ExpenseItemization-v0").unwrapped
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(20):
        obs, reward, terminated, _truncated, _info = env.step(env.action_space.sample())
        assert obs in env.observation_space and reward == 0.0 and not terminated


def test_step_after_the_end_and_before_reset():
    env = gym.make("erp_sim/ExpenseItemization-v0", user_model=None).unwrapped
    with pytest.raises(gym.error.ResetNeeded):
        env.step(FIND_MENU)
    env.reset(seed=0)
    assert env.step({"message": "?"})[2] is True
    obs, reward, terminated, _truncated, _info = env.step(FIND_MENU)
    assert terminated and reward == 0.0 and json.loads(obs)["Error"]["Code"] == "InvalidAction"


def test_bench_script_runs(capsys):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / "bench_env.py"
    spec = importlib.util.spec_from_file_location("bench_env", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--tasks", "1", "--rounds", "1"]) == 0
    assert "env.step overhead" in capsys.readouterr().out


def test_the_system_prompt_names_as_many_lines_as_the_instruction():
    """A multi-line task's prompt asks for each of its lines, not "one expense line" (success needs all of them)."""
    env = gym.make("erp_sim/LongHorizon-v0")
    counts = set()
    for task in env.unwrapped.tasks:
        _, info = env.reset(options={"task_id": task.task_id})
        lines = 1 + len(task.extra_lines)
        counts.add(lines)
        if lines == 1:
            assert "itemize one expense line" in info["system_prompt"]
        else:
            assert (
                f"itemize {lines} expense lines" in info["system_prompt"]
                and "one expense line" not in (info["system_prompt"])
            )
            assert all(f"line {line.line_number}" in env.unwrapped.task.instruction() for line in task.extra_lines)
    assert 1 in counts and len(counts) > 2
