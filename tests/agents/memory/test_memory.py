"""Long-term memory across episodes: the layered store, the memory tools, "no execution, no memory",
the ga_memory policy and the sequential evaluation's learning curve."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import erp_sim.envs  # noqa: F401
from erp_sim.agents.memory.consolidate import LLMConsolidator, consolidate_episode, deterministic_consolidator
from erp_sim.agents.memory.memory_tools import MEMORY_TOOLS, MemoryTools
from erp_sim.agents.memory.store import (
    MAX_INDEX_LINES,
    MEMORY_TAG,
    Fact,
    MemoryStore,
    MemoryStoreError,
    Sop,
    SopStep,
    parse_steps,
)
from erp_sim.agents.policies import wrap
from erp_sim.agents.runner import run_episode
from erp_sim.agents.scripted import ScriptedAgent
from erp_sim.agents.types import ChatResponse, HarnessTools, harness_tools

TASKS = ["hotel-000", "hotel-001", "hotel-002"]


def episode(policy: str, task_id: str, user: str = "rule"):
    env = gym.make("erp_sim/ExpenseItemization-v0", task_set="hotel_50", user_model=user, max_episode_steps=200)
    try:
        return run_episode(env, wrap(ScriptedAgent(), policy), task_id=task_id, seed=0)
    finally:
        env.close()


@pytest.fixture(scope="module")
def success():
    return episode("ga_memory", "hotel-000")


@pytest.fixture(scope="module")
def failure():
    return episode("ga_memory", "hotel-001", user="none")  # nobody answers the question: the episode fails


def sop(key: str = "sop/itemize_hotel_expense", runs: int = 1) -> Sop:
    return Sop(
        key=key,
        summary="itemize",
        goal="g",
        steps=[SopStep(tool="form_save_form")],
        verified_by=[f"{n:06d}-t" for n in range(runs)],
    )


# -- L1-L4 store ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["mem", "mem.sqlite"])
def test_store_layers_round_trip(tmp_path, name):
    store = MemoryStore.open(tmp_path / name)
    store.put(sop())
    store.put(Fact(key="fact/menu", summary="menu", text="TrvExpenses opens the list"))
    assert store.keys("sop") == ["sop/itemize_hotel_expense"] and store.keys("fact") == ["fact/menu"]
    assert store.sop("sop/itemize_hotel_expense") == sop()
    assert store.archive("hotel-000", False, "stalled", False, {"x": 1}) == "000001-hotel-000"
    assert store.archived("000001-hotel-000").trajectory == {"x": 1}
    lines = store.rebuild_index()
    assert lines == store.index_lines() and lines[0].startswith("- sop/itemize_hotel_expense:")
    reopened = MemoryStore.open(tmp_path / name)
    assert reopened.index_lines() == lines and reopened.read("fact/menu") == store.read("fact/menu")


def test_directory_store_is_byte_deterministic(tmp_path):
    for folder in ("a", "b"):
        store = MemoryStore.open(tmp_path / folder)
        for n in (3, 1, 2):
            store.put(Fact(key=f"fact/f{n}", summary=f"fact {n}", text="t", verified_by=["000001-t"]))
        store.rebuild_index()
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files and all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)


def test_index_is_bounded(tmp_path):
    store = MemoryStore.open(tmp_path / "m")
    for n in range(45):
        store.put(Fact(key=f"fact/f{n:02d}", summary="x", text="t", verified_by=["a"] * (n % 3)))
    store.put(sop(runs=1))
    lines = store.rebuild_index()
    assert len(lines) == MAX_INDEX_LINES and lines[0].startswith("- sop/")  # SOPs first, then the most verified
    with pytest.raises(MemoryStoreError, match="at most 30"):
        store.write_index(["- x"] * (MAX_INDEX_LINES + 1))
    assert store.index_lines() == lines  # a refused write changes nothing


@pytest.mark.parametrize("key", ["", "sop", "sop/", "SOP/x", "fact/../x", "archive/x", "sop/a b"])
def test_bad_keys_are_refused(tmp_path, key):
    with pytest.raises(MemoryStoreError):
        MemoryStore.open(tmp_path / "m").read(key)


def test_empty_memory_is_read_only():
    store = MemoryStore.empty()
    assert store.index_lines() == [] and store.read("sop/x") is None
    with pytest.raises(MemoryStoreError):
        store.put(sop())


# -- memory tools ---------------------------------------------------------------------------------
def test_memory_tools_are_described_like_erp_tools(tmp_path):
    tools = MemoryTools(MemoryStore.open(tmp_path / "m"))
    names = [s["function"]["name"] for s in tools.schemas]
    assert names == ["memory_read", "update_working_checkpoint", "start_long_term_update"]
    read = tools.schemas[0]["function"]
    assert read["parameters"]["required"] == ["key"] and read["parameters"]["additionalProperties"] is False
    assert all(s["function"]["description"] for s in tools.schemas)


def test_memory_tools_answer_and_refuse_bad_input(tmp_path):
    store = MemoryStore.open(tmp_path / "m")
    store.put(sop(runs=2))
    tools = MemoryTools(store)
    read = tools.call("memory_read", '{"key": "sop/itemize_hotel_expense"}')
    assert read.startswith("sop/itemize_hotel_expense (verified by 2 runs)\nGoal: g")
    assert parse_steps(read) == store.sop("sop/itemize_hotel_expense").steps  # what an agent reads back is the SOP
    store.put(Fact(key="fact/menu", summary="m", text="TrvExpenses opens the list"))
    assert (
        tools.call("memory_read", {"key": "fact/menu"}) == "fact/menu (verified by 0 runs)\nTrvExpenses opens the list"
    )
    assert tools.call("memory_read", '{"key": "sop/nothing"}').startswith("Error: no memory entry")
    assert tools.call("memory_read", '{"key": "../etc"}').startswith("Error: bad memory key")
    assert tools.call("memory_read", "{").startswith("Error: arguments are not JSON")
    assert tools.call("memory_read", '{"key": "sop/x", "extra": 1}').startswith("Error: bad arguments")
    assert tools.call("memory_write", "{}").startswith("Error: 'memory_write' is not a memory tool")
    assert tools.call("update_working_checkpoint", {"text": "line 2: 3 of 5 charges"}).startswith("Checkpoint saved")
    assert tools.checkpoint == "line 2: 3 of 5 charges" and not tools.long_term_update_requested
    tools.call("start_long_term_update", "{}")
    assert tools.long_term_update_requested


# -- "no execution, no memory" --------------------------------------------------------------------
def test_a_successful_episode_becomes_a_parameterized_sop(tmp_path, success):
    assert success.grade.success
    store = MemoryStore.open(tmp_path / "m")
    result = consolidate_episode(store, success)
    assert result.promoted == ["sop/itemize_hotel_expense", "fact/menu_item_trvexpenses"]
    learned = store.sop("sop/itemize_hotel_expense")
    text = store.read("sop/itemize_hotel_expense")
    instruction = success.messages[1]["content"]
    report = next(w for w in instruction.split() if w.startswith("EXP-")).rstrip(":,.")
    assert report not in text and "{report}" in text  # task values became parameters
    assert parse_steps(MemoryTools(store).call("memory_read", {"key": learned.key})) == learned.steps
    assert [s.tool for s in learned.steps][:2] == ["form_find_menu_item", "form_open_menu_item"]
    charge_steps = [s for s in learned.steps if s.repeat == "for each receipt charge"]
    assert len(charge_steps) == 2  # NewLine + set values, folded once however many charges
    assert learned.verified_by == [result.archive_key] and store.index_lines()[0].startswith("- sop/itemize_hotel")


def test_a_failed_episode_never_creates_an_sop(tmp_path, failure):
    assert not failure.grade.success
    store = MemoryStore.open(tmp_path / "m")

    def must_not_run(*_):
        raise AssertionError("a consolidator ran on a failed episode")

    result = consolidate_episode(store, failure, must_not_run)
    assert not result.success and result.promoted == []
    assert store.keys("sop") == store.keys("fact") == [] and store.index_lines() == []
    assert store.archive_keys() == [result.archive_key] and not store.archived(result.archive_key).consolidated


def test_a_failed_episode_does_not_change_an_existing_sop(tmp_path, success, failure):
    store = MemoryStore.open(tmp_path / "m")
    consolidate_episode(store, success)
    before = store.read("sop/itemize_hotel_expense")
    consolidate_episode(store, failure)
    assert store.read("sop/itemize_hotel_expense") == before and len(store.archive_keys()) == 2


def test_deterministic_consolidation_is_repeatable(success):
    first = deterministic_consolidator(success.deterministic_dump(), "000001-x")
    assert first == deterministic_consolidator(success.deterministic_dump(), "000001-x")


class FakeModel:
    def __init__(self, answer: str):
        self.answer = answer
        self.requests: list[list[dict]] = []

    def complete(self, messages, tools=None):
        self.requests.append(messages)
        return ChatResponse(message={"role": "assistant", "content": self.answer})


def test_llm_consolidator_writes_a_validated_sop(tmp_path, success):
    answer = json.dumps(
        {
            "key": "sop/itemize_hotel_expense",
            "summary": "itemize a hotel line",
            "goal": "itemize {line}",
            "steps": [{"tool": "form_open_menu_item", "arguments": {"name": "TrvExpenses"}}],
        }
    )
    model = FakeModel(f"Here it is:\n{answer}")
    store = MemoryStore.open(tmp_path / "m")
    result = consolidate_episode(store, success, LLMConsolidator(model))
    assert result.promoted == ["sop/itemize_hotel_expense"]
    prompt = model.requests[0][0]["content"]
    assert "form_open_menu_item" in prompt and "graded SUCCESSFUL" in prompt
    assert store.sop("sop/itemize_hotel_expense").goal == "itemize {line}"


@pytest.mark.parametrize(
    "answer", ["no json here", '{"key": "bad key", "summary": "s", "goal": "g"}', '{"summary": 1}']
)
def test_llm_consolidator_bad_answer_promotes_nothing(tmp_path, success, answer):
    store = MemoryStore.open(tmp_path / "m")
    result = consolidate_episode(store, success, LLMConsolidator(FakeModel(answer)))
    assert result.promoted == [] and "consolidator failed" in result.note
    assert store.keys("sop") == [] and len(store.archive_keys()) == 1


# -- the ga_memory policy and the harness ---------------------------------------------------------
class Recorder:
    def __init__(self):
        self.calls = []

    def reset(self):
        pass

    def act(self, transcript, tools):
        from erp_sim.agents.types import AgentStep

        self.calls.append((transcript, tools))
        return AgentStep(message={"role": "assistant", "content": "ok"}, shown=transcript)


def test_policy_shows_index_and_checkpoint_and_offers_tools(tmp_path, success):
    store = MemoryStore.open(tmp_path / "m")
    consolidate_episode(store, success)
    inner = Recorder()
    policy = wrap(inner, f'ga_memory:dir="{tmp_path / "m"}"+budget_eviction')
    system, instruction = (
        {"role": "system", "content": "S"},
        {"role": "user", "content": "Itemize line 2 on EXP-000001."},
    )
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "update_working_checkpoint", "arguments": '{"text": "3 of 5 done"}'},
    }
    transcript = [
        system,
        instruction,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {
            "role": "tool",
            "tool_call_id": "c1",
            "name": "update_working_checkpoint",
            "content": "Checkpoint saved (11 characters).",
        },
    ]
    policy.act(transcript, [{"type": "function", "function": {"name": "form_save_form"}}])
    shown, tools = inner.calls[-1]
    assert shown[0] == system and shown[1]["role"] == "system" and shown[1]["content"].startswith(MEMORY_TAG)
    assert "- sop/itemize_hotel_expense:" in shown[1]["content"] and shown[2] == instruction
    assert shown[3]["content"] == "<WORKING_CHECKPOINT>\n3 of 5 done\n</WORKING_CHECKPOINT>"
    assert [t["function"]["name"] for t in tools] == ["form_save_form", *MEMORY_TOOLS]
    assert harness_tools(policy) is policy.memory_tools and isinstance(policy.memory_tools, HarnessTools)
    assert harness_tools(inner) is None  # an agent without such a layer offers none


def test_memory_calls_are_answered_by_the_harness_not_the_erp(tmp_path, success):
    store = MemoryStore.open(tmp_path / "m")
    consolidate_episode(store, success)
    later = episode(f'ga_memory:dir="{tmp_path / "m"}"', "hotel-001")
    names = [c["function"]["name"] for m in later.messages for c in m.get("tool_calls") or []]
    assert names[:2] == ["memory_read", "form_open_menu_item"]  # the SOP replaces the menu search
    assert "start_long_term_update" in names and later.grade.success
    assert later.metrics.invalid_actions == 0 and later.metrics.tool_errors == 0
    assert {t["function"]["name"] for t in later.tools} >= set(MEMORY_TOOLS)


# -- sequential evaluation ------------------------------------------------------------------------
def test_sequential_eval_learning_curve(tmp_path):
    from erp_sim.agents.evaluation.eval_cli import main

    out, memory = tmp_path / "out", tmp_path / "memory.sqlite"
    assert (
        main(
            [
                *"--policy ga_memory --memory".split(),
                str(memory),
                *"--sequential --quiet --tasks".split(),
                "hotel_50:" + ",".join(TASKS),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    by_arm = {arm: [r for r in rows if r["config"] == arm] for arm in ("with_memory", "without_memory")}
    assert [r["episode"] for r in by_arm["with_memory"]] == [0, 1, 2]
    first_with, first_without = by_arm["with_memory"][0], by_arm["without_memory"][0]
    assert first_with["metrics"] == first_without["metrics"]  # nothing learned before the first episode
    for with_row, without_row in zip(by_arm["with_memory"][1:], by_arm["without_memory"][1:]):
        assert with_row["metrics"]["steps"] < without_row["metrics"]["steps"]
        assert with_row["grade"]["success"] and without_row["grade"]["success"]
    assert "## Learning curve" in (out / "report.md").read_text() and (out / "learning_curve.png").exists()
    store = MemoryStore.open(memory)
    assert store.keys("sop") == ["sop/itemize_hotel_expense"] and len(store.archive_keys()) == 3
    assert len(store.sop("sop/itemize_hotel_expense").verified_by) == 3


def test_sequential_needs_a_memory_layer(tmp_path):
    from erp_sim.agents.evaluation.eval_cli import main

    with pytest.raises(SystemExit):
        main(["--policy", "full", "--memory", str(tmp_path / "m"), "--sequential", "--out", str(tmp_path / "o")])


def test_memory_composes_with_budget_eviction(tmp_path, success):
    store = MemoryStore.open(tmp_path / "m")
    consolidate_episode(store, success)
    env = gym.make("erp_sim/ExpenseItemization-v0", task_set="hotel_50", user_model="rule", max_episode_steps=200)
    try:
        trajectory = run_episode(
            env,
            wrap(ScriptedAgent(), f'ga_memory:dir="{tmp_path / "m"}"+budget_eviction:budget=20000'),
            task_id="hotel-002",
            seed=0,
            keep_shown=True,
        )
    finally:
        env.close()
    assert trajectory.grade.success and trajectory.metrics.peak_tokens < 20_000 + 3_000  # + the tool schemas
    shown = [trajectory.context.shown(step) for step in range(len(trajectory.context.steps))]
    assert all(context[1]["content"].startswith(MEMORY_TAG) for context in shown)
    assert [m["content"] for m in shown[-1][:1]] == [trajectory.messages[0]["content"]]


def test_memory_flag_without_a_memory_layer_is_a_usage_error(tmp_path):
    from erp_sim.agents.evaluation.eval_cli import main

    with pytest.raises(SystemExit):
        main(["--policy", "last_n:n=5", "--memory", str(tmp_path / "m"), "--out", str(tmp_path / "o")])


def test_the_same_episodes_leave_byte_identical_stores(tmp_path, success, failure):
    for folder in ("a", "b"):
        store = MemoryStore.open(tmp_path / folder)
        for trajectory in (success, failure, success):
            consolidate_episode(store, trajectory)
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) == 6  # index, one SOP, one fact, three archived episodes
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    learned = json.loads((tmp_path / "a" / "sops" / "itemize_hotel_expense.json").read_text())
    assert learned["verified_by"] == ["000001-hotel-000", "000003-hotel-000"]  # the failure in between is not one
