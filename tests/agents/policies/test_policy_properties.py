"""Property tests: every policy and random stacks of them, on random transcripts.

Transcripts mix parallel tool calls, user messages, assistant text, error results, D365
form states and very long outputs. At every unit boundary the context shown to the inner
agent must be a valid OpenAI message list (results follow their calls, every call has its
result), keep the system prompt and the first user instruction verbatim (acon_history may
only append to a copy of it), and keep every budget the policy promises.
"""

from __future__ import annotations

import copy
import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from policy_support import INSTRUCTION, SYSTEM, RecordingAgent, flatten, units
from strict_chat_request import rejection

from erp_sim.agents.models.openai_chat import wire_messages
from erp_sim.agents.policies import parse_policy, split_transcript, validate_messages, wrap
from erp_sim.agents.policies.generic_agent import MARKER
from erp_sim.agents.policies.units import IncrementalSplit
from erp_sim.agents.tokens import count_messages, count_text, message_text


def _memory_dir() -> str:
    """A store with an SOP and a fact, so ga_memory shows a non-empty index."""
    from erp_sim.agents.memory.store import Fact, MemoryStore, Sop, SopStep

    path = tempfile.mkdtemp(prefix="erp-sim-memory-")
    store = MemoryStore.open(path)
    store.put(
        Sop(
            key="sop/itemize_hotel_expense",
            summary="itemize",
            goal="g",
            steps=[SopStep(tool="form_save_form")],
            verified_by=["000001-t"],
        )
    )
    store.put(Fact(key="fact/menu_item_trvexpenses", summary="menu", text="t", verified_by=["000001-t"]))
    store.rebuild_index()
    return path


MEMORY_DIR = _memory_dir()

# POLICY_EXAMPLES=1000 for a deeper search than the default quick run.
SETTINGS = settings(
    max_examples=int(os.environ.get("POLICY_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

LAYERS = {
    "full": st.just("full"),
    "last_n": st.builds("last_n:n={}".format, st.integers(0, 6)),
    "last_n_summary": st.builds("last_n_summary:n={},w={}".format, st.integers(0, 6), st.sampled_from([-1, 1, 2, 3])),
    "fifo": st.builds("fifo:k={}".format, st.integers(0, 6)),
    "acon_history": st.builds(
        "acon_history:t={},k={},mode={}".format,
        st.sampled_from([0, 50, 500, 4096]),
        st.integers(0, 3),
        st.sampled_from(["accumulate", "reset"]),
    ),
    "acon_observation": st.builds(
        "acon_observation:t={},recent={}".format, st.sampled_from([0, 20, 200, 1024]), st.integers(0, 3)
    ),
    "head_tail": st.builds(
        "head_tail:chars={},tokens={},keep_recent={},tool_chars={}".format,
        st.sampled_from([0, 20, 400, 800]),
        st.sampled_from([0, 10, 100]),
        st.integers(0, 2),
        st.sampled_from(["", "form_find_controls:30", "data_find_entities:0;form_click_control:100"]),
    ),
    "budget_eviction": st.builds(
        "budget_eviction:budget={},target={},min_units={}".format,
        st.sampled_from([1, 200, 1000, 5000]),
        st.sampled_from([0.1, 0.6, 1.0]),
        st.integers(0, 3),
    ),
    "working_memory_anchor": st.builds("working_memory_anchor:at={}".format, st.sampled_from(["start", "end"])),
    "retrieval": st.builds("retrieval:k={},keep={},backend=bm25".format, st.integers(0, 4), st.integers(0, 4)),
    "ga_memory": st.sampled_from(["ga_memory", f'ga_memory:dir="{MEMORY_DIR}"']),
    "clear_tool_uses": st.builds(
        "clear_tool_uses:trigger={},keep={},clear_at_least={},exclude_tools={},clear_tool_inputs={}".format,
        st.sampled_from([0, 100, 5000]),
        st.integers(0, 3),
        st.sampled_from([0, 50, 100_000]),
        st.sampled_from(["", "form_find_controls", "form_click_control;data_find_entities"]),
        st.booleans(),
    ),
}
any_layer = st.one_of(*LAYERS.values())
stacks = st.lists(any_layer, min_size=1, max_size=3).map("+".join)


def contexts(spec: str, unit_list: list) -> list[tuple[list, list]]:
    """Run ``spec`` at every unit boundary; return (transcript so far, context shown) per step."""
    messages = [SYSTEM, INSTRUCTION, *flatten(unit_list)]
    original = copy.deepcopy(messages)
    agent = RecordingAgent()
    policy = wrap(agent, spec)
    prefixes = [[SYSTEM, INSTRUCTION]]
    for unit in unit_list:
        prefixes.append(prefixes[-1] + unit)
    for prefix in prefixes:
        policy.act(prefix, [])
    assert messages == original, "a policy mutated its input"
    return list(zip(prefixes, agent.shown))


def check_common(spec: str, shown: list) -> None:
    validate_messages(shown)
    # and the real API takes it as OpenAIChatModel sends it (the strict fake server's rules)
    assert rejection({"model": "m", "messages": wire_messages(shown)}) is None
    assert shown[0] == SYSTEM
    for _ in range(spec.count("ga_memory")):  # each adds its block as a system message after the verbatim prompt
        assert shown[1]["role"] == "system" and shown[1]["content"].startswith("<LONG_TERM_MEMORY>")
        shown = [shown[0], *shown[2:]]
    first = shown[1]
    assert first["role"] == "user"
    if "acon_history" in spec:
        assert message_text(first["content"]).startswith(INSTRUCTION["content"])
        assert {k: v for k, v in first.items() if k != "content"} == {
            k: v for k, v in INSTRUCTION.items() if k != "content"
        }
    else:
        assert first == INSTRUCTION


@SETTINGS
@given(spec=stacks, unit_list=units())
def test_every_stack_keeps_order_head_and_units(spec, unit_list):
    for _, shown in contexts(spec, unit_list):
        check_common(spec, shown)


@SETTINGS
@given(spec=stacks, unit_list=units(max_units=8))
def test_stacks_are_deterministic_and_round_trip(spec, unit_list):
    assert parse_policy(parse_policy(spec).spec) == parse_policy(spec)
    assert wrap(RecordingAgent(), spec).spec == parse_policy(spec).spec
    assert contexts(spec, unit_list) == contexts(spec, unit_list)


def tool_units(messages: list) -> int:
    return sum(unit.kind == "tool" for unit in split_transcript(messages).units)


@pytest.mark.parametrize("name", LAYERS)
@SETTINGS
@given(data=st.data(), unit_list=units())
def test_each_policy_keeps_its_promise(name, data, unit_list):
    spec = data.draw(LAYERS[name], label="spec")
    p = parse_policy(spec).layers[0].params
    for transcript, shown in contexts(spec, unit_list):
        check_common(spec, shown)
        units_in = split_transcript(transcript).units
        units_out = split_transcript(shown).units
        PROMISES[name](p, transcript, shown, units_in, units_out)


def _full(p, transcript, shown, units_in, units_out):
    assert shown == transcript


def _last_n(p, transcript, shown, units_in, units_out):
    assert tool_units(shown) == min(p["n"], tool_units(transcript))
    assert units_out == units_in[len(units_in) - len(units_out) :] if units_out else True
    if units_out and units_out[0].kind != "tool":  # the window starts at a tool unit unless n == 0
        assert p["n"] == 0 or tool_units(transcript) < p["n"] or tool_units(transcript) == 0


def _fifo(p, transcript, shown, units_in, units_out):
    assert units_out == (units_in[max(len(units_in) - p["k"], 0) :] if p["k"] else [])


def _last_n_summary(p, transcript, shown, units_in, units_out):
    assert tool_units(shown) <= p["n"] + (p["w"] - 1 if p["w"] > 0 else 0)
    assert units_out == units_in[len(units_in) - len(units_out) :] if units_out else True
    dropped = len(units_in) - len(units_out)
    has_summary = any(message_text(m["content"]).startswith("<EARLIER_STEPS_SUMMARY>") for m in shown[2:3])
    assert has_summary == (dropped > 0)


def _acon_history(p, transcript, shown, units_in, units_out):
    k = min(p["k"], len(units_in))
    assert units_out[len(units_out) - k :] == units_in[len(units_in) - k :] if k else True
    assert units_out == units_in[len(units_in) - len(units_out) :] if units_out else True
    if len(units_out) < len(units_in):
        assert "<HISTORY_SUMMARY>" in message_text(shown[1]["content"])


def _acon_observation(p, transcript, shown, units_in, units_out):
    assert len(units_in) == len(units_out)
    for unit_in, unit_out in zip(units_in, units_out):
        assert unit_in.messages[0] == unit_out.messages[0]
        for before, after in zip(unit_in.tool_results, unit_out.tool_results):
            if count_text(message_text(before["content"])) <= p["t"]:
                assert after == before
            else:
                assert after["tool_call_id"] == before["tool_call_id"]


def _head_tail(p, transcript, shown, units_in, units_out):
    tool_indices = [i for i, u in enumerate(units_out) if u.kind == "tool"]
    old = set(tool_indices[: max(len(tool_indices) - p["keep_recent"], 0)])
    for index, (unit_in, unit_out) in enumerate(zip(units_in, units_out)):
        for before, after in zip(unit_in.tool_results, unit_out.tool_results):
            if index not in old or p["tool_chars"]:
                assert index in old or after == before
                continue
            if p["chars"]:
                assert len(after["content"]) <= p["chars"] + len(MARKER.format(omitted=10**9))
            if p["tokens"]:
                assert count_text(after["content"]) <= p["tokens"] + 12  # cap + the marker's tokens
            if len(before["content"]) <= p["chars"] and (
                not p["tokens"] or count_text(before["content"]) <= p["tokens"]
            ):
                assert after == before


def _budget_eviction(p, transcript, shown, units_in, units_out):
    assert count_messages(shown) <= p["budget"] or len(units_out) <= p["min_units"]
    assert len(units_out) >= min(p["min_units"], len(units_in))
    assert units_out == units_in[len(units_in) - len(units_out) :] if units_out else True


def _working_memory_anchor(p, transcript, shown, units_in, units_out):
    at = 2 + len(split_transcript(transcript).pinned) if p["at"] == "start" else len(shown) - 1
    assert message_text(shown[at]["content"]).startswith("<WORKING_MEMORY>")
    assert shown[:at] + shown[at + 1 :] == transcript


def _clear_tool_uses(p, transcript, shown, units_in, units_out):
    results_in = [r for u in units_in if u.kind == "tool" for r in u.tool_results]
    results_out = [r for u in units_out if u.kind == "tool" for r in u.tool_results]
    assert [r["tool_call_id"] for r in results_in] == [r["tool_call_id"] for r in results_out]
    recent = len(results_in) - p["keep"]
    for index, (before, after) in enumerate(zip(results_in, results_out)):
        if index >= recent or before.get("name") in p["exclude_tools"]:
            assert after == before
    if count_messages(transcript) <= p["trigger"]:
        assert shown == transcript
    elif p["clear_at_least"] == 0:  # over the trigger: every old result not excluded is cleared
        for index, (before, after) in enumerate(zip(results_in, results_out)):
            if index < recent and before.get("name") not in p["exclude_tools"]:
                assert after["content"] == "[cleared]"
    if p["clear_tool_inputs"]:
        cleared_ids = {
            r["tool_call_id"] for r, b in zip(results_out, results_in) if r["content"] == "[cleared]" != b["content"]
        }
        for unit in units_out:
            for call in unit.messages[0].get("tool_calls") or () if unit.kind == "tool" else ():
                if call["id"] in cleared_ids:
                    assert call["function"]["arguments"] == "{}"


def _ga_memory(p, transcript, shown, units_in, units_out):
    block = shown[1]["content"]
    assert ("- sop/itemize_hotel_expense:" in block) == bool(p["dir"])  # the L1 index, and nothing without a store
    assert shown[:1] + shown[2:] == transcript  # nothing else changes (no checkpoint call in these transcripts)


def _retrieval(p, transcript, shown, units_in, units_out):
    keep = min(p["keep"], len(units_in))
    assert len(units_out) == min(len(units_in), p["keep"] + p["k"])
    assert units_out[len(units_out) - keep :] == units_in[len(units_in) - keep :] if keep else True
    positions, start = [], 0  # the retrieved units are evicted ones, in their original order
    for unit in units_out:
        start = units_in.index(unit, start) + 1
        positions.append(start)
    assert positions == sorted(set(positions))


PROMISES = {
    "full": _full,
    "last_n": _last_n,
    "fifo": _fifo,
    "last_n_summary": _last_n_summary,
    "acon_history": _acon_history,
    "acon_observation": _acon_observation,
    "head_tail": _head_tail,
    "budget_eviction": _budget_eviction,
    "working_memory_anchor": _working_memory_anchor,
    "clear_tool_uses": _clear_tool_uses,
    "ga_memory": _ga_memory,
    "retrieval": _retrieval,
}


@SETTINGS
@given(unit_list=units(max_units=10), cuts=st.lists(st.integers(0, 40), max_size=8))
def test_incremental_split_equals_a_fresh_split(unit_list, cuts):
    """Growing message by message (even mid-unit), shrinking, or replacing: same as splitting afresh."""
    messages = [SYSTEM, INSTRUCTION, *flatten(unit_list)]
    splitter = IncrementalSplit()
    lengths = list(range(len(messages) + 1)) + [min(c, len(messages)) for c in cuts]
    for length in lengths:
        prefix = messages[:length]
        if not _orphan_tail(prefix):
            assert splitter(prefix) == split_transcript(prefix)
    if len(messages) > 3:
        replaced = messages[:3] + [dict(messages[3], content="replaced")] + messages[4:]
        assert splitter(replaced) == split_transcript(replaced)
    body = flatten(unit_list)
    for length in range(len(body) + 1):  # a pinned block that changes at every step
        pinned = [SYSTEM, INSTRUCTION, {"role": "user", "content": f"<WORKING_MEMORY>step {length}"}]
        if not _orphan_tail(pinned + body[:length]):
            assert splitter(pinned + body[:length]) == split_transcript(pinned + body[:length])


def _orphan_tail(prefix):
    try:
        split_transcript(prefix)
    except ValueError:
        return True
    return False
