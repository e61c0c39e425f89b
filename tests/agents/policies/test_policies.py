"""Each policy on small hand-written transcripts: exactly what is kept, dropped and summarized.

Labels (see ``policy_support.labels``): S = system prompt, I = first user instruction,
cN = the result of tool call cN (its assistant call is implied), u:/a: = user/assistant text,
<TAG> = a block a policy inserted.
"""

from __future__ import annotations

import copy
import json

import pytest
from policy_support import (
    INSTRUCTION,
    SYSTEM,
    LabelSummarizer,
    RecordingAgent,
    assistant,
    itemization_response,
    labels,
    receipt_response,
    report_response,
    run,
    step,
    tool_unit,
    transcript,
    user,
)

from erp_sim.agents.policies import PRESETS, ContextPolicy, parse_policy, split_transcript, validate_messages, wrap
from erp_sim.agents.policies.generic_agent import MARKER, cut_chars, cut_head_tail
from erp_sim.agents.summarizers import SummarizerError
from erp_sim.agents.tokens import count_message, count_messages, count_text, get_counter
from erp_sim.agents.types import Usage

BIG = "word " * 100  # one tool result of about 100 tokens


def five_steps(text: str = "r") -> list:
    return transcript(*(step(f"c{i}", text) for i in range(1, 6)))


# -- units ---------------------------------------------------------------------------------
def test_units_group_a_call_with_all_its_results():
    messages = transcript(
        tool_unit(("c1", "form_click_control", "a"), ("c2", "form_find_controls", "b")),
        user("hello"),
        assistant("thinking"),
        step("c3", "c"),
    )
    split = split_transcript(messages)
    assert split.system == [SYSTEM] and split.instruction is INSTRUCTION
    assert [(u.kind, len(u.messages)) for u in split.units] == [("tool", 3), ("user", 1), ("assistant", 1), ("tool", 2)]
    assert split.join() == messages


def test_validate_messages_catches_orphans_and_missing_results():
    validate_messages(transcript(step("c1", "a")))
    with pytest.raises(ValueError, match="answers no open tool call"):
        validate_messages([SYSTEM, INSTRUCTION, {"role": "tool", "tool_call_id": "x", "content": "r"}])
    with pytest.raises(ValueError, match="have no result"):
        validate_messages(transcript(step("c1", "a")[:1], user("hi")))
    with pytest.raises(ValueError, match="have no result"):
        validate_messages(transcript(step("c1", "a")[:1]))
    with pytest.raises(ValueError, match="system message after"):
        validate_messages(transcript(step("c1", "a"), SYSTEM))


# -- full, last_n, fifo --------------------------------------------------------------------
def test_full_passes_everything():
    messages = transcript(step("c1", "a"), user("u"), step("c2", "b"))
    assert run(wrap(RecordingAgent(), "full"), messages) == messages


def test_last_n_keeps_the_last_n_tool_units_and_what_lies_between_them():
    messages = transcript(
        step("c1", "r"), step("c2", "r"), user("hi"), step("c3", "r"), assistant("x"), step("c4", "r")
    )
    shown = run(wrap(RecordingAgent(), "last_n:n=2"), messages)
    assert labels(shown) == ["S", "I", "c3", "a:x", "c4"]
    shown = run(wrap(RecordingAgent(), "last_n:n=3"), messages)
    assert labels(shown) == ["S", "I", "c2", "u:hi", "c3", "a:x", "c4"]
    assert labels(run(wrap(RecordingAgent(), "last_n:n=0"), messages + [user("bye")])) == ["S", "I", "u:bye"]
    assert run(wrap(RecordingAgent(), "last_n:n=9"), messages) == messages


def test_fifo_counts_every_unit_as_a_turn():
    messages = transcript(
        step("c1", "r"), step("c2", "r"), user("hi"), step("c3", "r"), assistant("x"), step("c4", "r")
    )
    assert labels(run(wrap(RecordingAgent(), "fifo:k=2"), messages)) == ["S", "I", "a:x", "c4"]
    assert labels(run(wrap(RecordingAgent(), "fifo:k=3"), messages)) == ["S", "I", "c3", "a:x", "c4"]
    assert labels(run(wrap(RecordingAgent(), "fifo:k=0"), messages)) == ["S", "I"]


# -- last_n_summary ------------------------------------------------------------------------
def test_last_n_summary_folds_evicted_units_w_at_a_time_and_shows_pending_ones():
    summarizer = LabelSummarizer()
    agent = RecordingAgent()
    policy = wrap(agent, "last_n_summary:n=1,w=2", summarizer=summarizer)
    run(policy, five_steps())
    by_step = [labels(shown) for shown in agent.shown]
    assert by_step == [
        ["S", "I", "c1"],
        ["S", "I", "c1", "c2"],  # c1 evicted, pending: W=2 not reached, still visible
        ["S", "I", "<EARLIER_STEPS_SUMMARY>", "c3"],  # c1, c2 folded in one call
        ["S", "I", "<EARLIER_STEPS_SUMMARY>", "c3", "c4"],
        ["S", "I", "<EARLIER_STEPS_SUMMARY>", "c5"],  # c3, c4 folded onto the previous summary
    ]
    assert summarizer.history_calls == [(["c1", "c2"], None), (["c3", "c4"], "sum[c1,c2]")]
    assert "sum[c3,c4]<-sum[c1,c2]" in agent.shown[-1][2]["content"]


def test_last_n_summary_folds_incrementally_what_a_fresh_policy_folds_at_once():
    """A long-lived last_n_summary (its splitter and fold reusing what they saw) shows at every step what a
    fresh one shows on the same history: growing by appending, after an error result, after a policy above
    edited an already folded result (a new message object in its place), and growing again after that. Only
    the batches from the edited one on are folded again."""
    spec = "last_n_summary:n=2,w=2"
    steps = [step(f"c{i}", f"result {i}: total {i}.00") for i in range(1, 14)]
    steps[6] = step("c7", "Error: the form TrvItemization is not open")
    messages = transcript(*steps)
    live_agent = RecordingAgent()
    live = wrap(live_agent, spec)

    def same_as_fresh(history: list) -> int:
        fresh_agent = RecordingAgent()
        wrap(fresh_agent, spec).act(list(history), [])
        live_step = live.act(list(history), [])
        assert live_agent.shown[-1] == fresh_agent.shown[-1]
        return live_step.summarizer_calls

    for end in range(4, len(messages) - 1, 2):  # unit by unit, the last step held back
        same_as_fresh(messages[:end])
    shown = live_agent.shown[-1]
    assert "<EARLIER_STEPS_SUMMARY>" in shown[2]["content"] and "Seen: Error: the form" in shown[2]["content"]
    edited = list(messages[:-2])
    edited[9] = {**edited[9], "content": "result 4: total 40.00"}  # c4, in the second of five batches
    assert same_as_fresh(edited) == 4  # batches 2 to 5 again, not the first
    assert "total 40.00" in live_agent.shown[-1][2]["content"]
    assert same_as_fresh([*edited, *messages[-2:]]) == 0  # c12 is now pending: nothing to fold
    assert same_as_fresh([*edited, *messages[-2:], *step("c14", "result 14")]) == 1


def test_last_n_summary_w_minus_one_summarizes_everything_evicted_at_once():
    summarizer = LabelSummarizer()
    agent = RecordingAgent()
    run(wrap(agent, "last_n_summary:n=2,w=-1", summarizer=summarizer), five_steps())
    assert [labels(s) for s in agent.shown][-1] == ["S", "I", "<EARLIER_STEPS_SUMMARY>", "c4", "c5"]
    assert summarizer.history_calls == [(["c1"], None), (["c1", "c2"], None), (["c1", "c2", "c3"], None)]


def test_summary_counts_are_added_to_the_step():
    summarizer = LabelSummarizer()
    policy = wrap(RecordingAgent(), "last_n_summary:n=1,w=1", summarizer=summarizer)
    messages = five_steps()
    first = policy.act(messages[:4], [])
    assert (first.summarizer_calls, first.summarizer_usage) == (0, Usage())
    second = policy.act(messages[:6], [])
    assert (second.summarizer_calls, second.summarizer_usage) == (1, Usage(input_tokens=10, output_tokens=2))
    again = policy.act(messages[:6], [])  # same transcript: the cached summary, no new call
    assert again.summarizer_calls == 0


def test_a_failed_summary_raises_and_is_not_cached():
    summarizer = LabelSummarizer(fail=True)
    policy = wrap(RecordingAgent(), "last_n_summary:n=1,w=1", summarizer=summarizer)
    messages = five_steps()
    with pytest.raises(SummarizerError):
        policy.act(messages[:6], [])
    summarizer.fail = False
    step_ = policy.act(messages[:6], [])
    assert step_.summarizer_calls == 1 and summarizer.history_calls == [(["c1"], None)]


# -- acon_history --------------------------------------------------------------------------
def test_acon_history_compresses_past_the_threshold_keeping_the_last_k_units():
    unit_tokens = sum(count_message(m) for m in step("c1", BIG))
    summarizer = LabelSummarizer()
    agent = RecordingAgent()
    threshold = int(2.5 * unit_tokens)
    run(wrap(agent, f"acon_history:t={threshold},k=1", summarizer=summarizer), five_steps(BIG))
    by_step = [labels(shown) for shown in agent.shown]
    block = "<HISTORY_SUMMARY>\n{}\n</HISTORY_SUMMARY>"
    assert by_step == [
        ["S", "I", "c1"],
        ["S", "I", "c1", "c2"],
        ["S", "I+" + block.format("sum[c1,c2]"), "c3"],  # 3 units > 2.5 units: fold all but the last
        ["S", "I+" + block.format("sum[c1,c2]"), "c3", "c4"],  # summary + 2 units: under the threshold
        ["S", "I+" + block.format("sum[c3,c4]<-sum[c1,c2]"), "c5"],  # accumulate: built on the previous summary
    ]
    for shown in agent.shown:  # the original instruction is a prefix of the copy, and untouched
        assert shown[1]["content"].startswith(INSTRUCTION["content"])
    assert INSTRUCTION["content"] == "Itemize the hotel expense on report EXP-000123, line 2."


def test_acon_history_reset_mode_starts_each_summary_afresh():
    unit_tokens = sum(count_message(m) for m in step("c1", BIG))
    summarizer = LabelSummarizer()
    agent = RecordingAgent()
    run(wrap(agent, f"acon_history:t={int(2.5 * unit_tokens)},k=1,mode=reset", summarizer=summarizer), five_steps(BIG))
    assert summarizer.history_calls == [(["c1", "c2"], None), (["c3", "c4"], None)]
    assert labels(agent.shown[-1])[1] == "I+<HISTORY_SUMMARY>\nsum[c3,c4]\n</HISTORY_SUMMARY>"


def test_acon_history_restarts_on_a_transcript_that_does_not_extend_the_folded_one():
    unit_tokens = sum(count_message(m) for m in step("c1", BIG))
    summarizer = LabelSummarizer()
    policy = wrap(RecordingAgent(), f"acon_history:t={int(2.5 * unit_tokens)},k=1", summarizer=summarizer)
    run(policy, five_steps(BIG))
    other = transcript(*(step(f"d{i}", BIG) for i in range(1, 4)))
    policy.act(other, [])
    assert summarizer.history_calls[-1] == (["d1", "d2"], None)


# -- acon_observation ----------------------------------------------------------------------
def test_acon_observation_refines_long_results_once_with_recent_history():
    summarizer = LabelSummarizer()
    agent = RecordingAgent()
    messages = transcript(step("c1", "short"), step("c2", BIG), step("c3", "short"), step("c4", BIG))
    run(wrap(agent, "acon_observation:t=50,recent=1", summarizer=summarizer), messages)
    shown = agent.shown[-1]
    assert [m["content"] for m in shown if m["role"] == "tool"] == ["short", "refined(c2)", "short", "refined(c4)"]
    # each long result refined once, when it was the newest, with the preceding unit as history
    assert summarizer.observation_calls == [("c2", ["c1"]), ("c4", ["c3"])]
    validate_messages(shown)


# -- head_tail -----------------------------------------------------------------------------
def test_cut_chars_keeps_head_and_tail():
    text = "A" * 10 + "B" * 30 + "C" * 10
    assert cut_chars(text, 20) == "A" * 10 + MARKER.format(omitted=30) + "C" * 10
    assert cut_chars(text, 50) == text
    assert cut_chars(text, 0) == text


def test_head_tail_cuts_old_results_only_with_per_tool_caps():
    long = "A" * 10 + "B" * 30 + "C" * 10
    messages = transcript(
        tool_unit(("c1", "form_click_control", long), ("c2", "form_find_controls", long)), step("c3", long)
    )
    shown = run(wrap(RecordingAgent(), "head_tail:chars=20,tool_chars=form_find_controls:0"), messages)
    results = {m["tool_call_id"]: m["content"] for m in shown if m["role"] == "tool"}
    assert results["c1"] == cut_chars(long, 20)  # old: cut to 10 + 10 characters
    assert results["c2"] == long  # per-tool cap 0: never cut
    assert results["c3"] == long  # the newest unit is kept whole (keep_recent=1)
    assert messages[3]["content"] == long  # the transcript itself is untouched


def test_head_tail_token_cap():
    messages = transcript(step("c1", BIG), step("c2", "short"))
    shown = run(wrap(RecordingAgent(), "head_tail:chars=0,tokens=20"), messages)
    cut = shown[3]["content"]
    # "word " * 100 is the tokens "word", " word" x 99, " ": 10 kept at the head, 10 at the tail
    assert cut == "word" + " word" * 9 + MARKER.format(omitted=405) + " word" * 9 + " "
    assert count_text(cut) <= 20 + count_text(MARKER.format(omitted=405))


def test_head_tail_with_both_caps_keeps_the_tighter_cut_at_each_end():
    text = "word " * 100
    counter = get_counter()
    assert cut_head_tail(text, chars=20, tokens=1000, counter=counter) == cut_chars(text, 20)
    assert (
        cut_head_tail(text, chars=1000, tokens=4, counter=counter)
        == "word word" + MARKER.format(omitted=485) + " word "
    )
    both = cut_head_tail(text, chars=30, tokens=4, counter=counter)
    assert len(both) <= 30 + len(MARKER.format(omitted=480)) and count_text(both) <= 4 + count_text(
        MARKER.format(omitted=480)
    )
    assert cut_head_tail("東京" * 50, chars=0, tokens=3, counter=counter).startswith("東")  # no broken characters


# -- budget_eviction -----------------------------------------------------------------------
def test_budget_eviction_drops_oldest_units_to_the_target_then_holds():
    messages = transcript(*(step(f"c{i}", BIG) for i in range(1, 9)))
    head_tokens = count_messages([SYSTEM, INSTRUCTION])
    unit_tokens = sum(count_message(m) for m in step("c1", BIG))
    budget = head_tokens + 4 * unit_tokens + 5  # room for 4 units
    agent = RecordingAgent()
    run(wrap(agent, f"budget_eviction:budget={budget},target=0.6,min_units=1"), messages)
    kept = [labels(shown)[2:] for shown in agent.shown]
    assert kept[:4] == [["c1"], ["c1", "c2"], ["c1", "c2", "c3"], ["c1", "c2", "c3", "c4"]]
    assert kept[4] == ["c4", "c5"]  # over budget: evict to <= 60% of the budget
    assert kept[5] == ["c4", "c5", "c6"]  # then the prefix holds until the budget is hit again
    assert kept[6] == ["c4", "c5", "c6", "c7"]
    assert kept[7] == ["c7", "c8"]
    for shown in agent.shown:
        assert count_messages(shown) <= budget


def test_budget_eviction_never_goes_below_min_units():
    messages = transcript(*(step(f"c{i}", BIG) for i in range(1, 5)))
    shown = run(wrap(RecordingAgent(), "budget_eviction:budget=10,min_units=2"), messages)
    assert labels(shown) == ["S", "I", "c3", "c4"]


# -- working_memory_anchor -----------------------------------------------------------------
def erp_transcript():
    lines = [("2024-03-01", "Daily room rate", "300.00", "Saved")]
    return transcript(
        step("c1", report_response()), step("c2", receipt_response()), step("c3", itemization_response(lines))
    )


def test_working_memory_anchor_is_pinned_after_the_instruction_and_survives_eviction():
    agent = RecordingAgent()
    policy = wrap(agent, "working_memory_anchor+last_n:n=1")
    shown = run(policy, erp_transcript())
    assert labels(shown) == ["S", "I", "<WORKING_MEMORY>", "c3"]
    anchor = shown[2]["content"]
    for fact in (
        "EXP-000123",
        "Room charge",
        "45.00",
        "remaining 60.00",
        "Itemize receipt item: 2024-03-01 | City tax | 45.00",
    ):
        assert fact in anchor  # the receipt was read two steps ago and evicted, but its facts remain


def test_working_memory_anchor_at_end():
    shown = run(wrap(RecordingAgent(), "working_memory_anchor:at=end"), erp_transcript())
    assert labels(shown)[-1] == "<WORKING_MEMORY>" and labels(shown)[:3] == ["S", "I", "c1"]


# -- clear_tool_uses -----------------------------------------------------------------------
def four_uses():
    return transcript(
        step("c1", BIG, "form_click_control"),
        step("c2", BIG, "form_find_controls"),
        step("c3", BIG, "form_click_control"),
        step("c4", BIG, "form_click_control"),
    )


def results_of(shown):
    return {m["tool_call_id"]: m["content"] for m in shown if m["role"] == "tool"}


def test_clear_tool_uses_clears_all_but_the_last_keep_once_over_the_trigger():
    shown = run(wrap(RecordingAgent(), "clear_tool_uses:trigger=100,keep=2"), four_uses())
    assert results_of(shown) == {"c1": "[cleared]", "c2": "[cleared]", "c3": BIG, "c4": BIG}
    calls = [m for m in shown if m.get("tool_calls")]
    assert json.loads(calls[0]["tool_calls"][0]["function"]["arguments"]) == {}  # inputs kept (empty here anyway)


def test_clear_tool_uses_below_trigger_exclusions_inputs_and_clear_at_least():
    assert results_of(run(wrap(RecordingAgent(), "clear_tool_uses:trigger=100000,keep=2"), four_uses()))["c1"] == BIG
    shown = run(
        wrap(RecordingAgent(), "clear_tool_uses:trigger=100,keep=1,exclude_tools=form_find_controls"), four_uses()
    )
    assert results_of(shown) == {"c1": "[cleared]", "c2": BIG, "c3": "[cleared]", "c4": BIG}
    # clearing two results frees about 200 tokens: asking for 5000 clears nothing
    assert (
        results_of(run(wrap(RecordingAgent(), "clear_tool_uses:trigger=100,keep=2,clear_at_least=5000"), four_uses()))[
            "c1"
        ]
        == BIG
    )
    messages = transcript(tool_unit(("c1", "form_click_control", BIG)), step("c2", BIG))
    messages[2]["tool_calls"][0]["function"]["arguments"] = '{"controlName": "NewLine"}'
    shown = run(
        wrap(RecordingAgent(), 'clear_tool_uses:trigger=10,keep=1,clear_tool_inputs=true,placeholder="[gone, re-run]"'),
        messages,
    )
    assert shown[2]["tool_calls"][0]["function"]["arguments"] == "{}" and shown[3]["content"] == "[gone, re-run]"
    assert messages[2]["tool_calls"][0]["function"]["arguments"] == '{"controlName": "NewLine"}'


# -- the wrapper itself --------------------------------------------------------------------
def test_stack_str_spec_unwrapped_and_reset():
    inner = RecordingAgent()
    policy = wrap(inner, "head_tail:chars=400+last_n:n=5")
    assert isinstance(policy, ContextPolicy)
    assert str(policy) == (
        "<HeadTail(chars=400,tokens=0,keep_recent=1,tool_chars={},tool_tokens={})<LastN(n=5)<RecordingAgent>>>"
    )
    assert policy.spec == parse_policy("head_tail:chars=400+last_n:n=5").spec
    assert parse_policy(policy.spec) == parse_policy("head_tail:chars=400+last_n").model_copy()
    assert policy.unwrapped is inner
    policy.act(transcript(step("c1", "r")), [])
    policy.reset()
    assert inner.resets == 1 and inner.shown == []


def test_policies_never_mutate_the_transcript():
    messages = transcript(step("c1", BIG), user("hi"), step("c2", BIG), step("c3", BIG))
    before = copy.deepcopy(messages)
    spec = "working_memory_anchor+head_tail:chars=20+acon_observation:t=10+acon_history:t=50+clear_tool_uses:trigger=10,keep=0"
    run(wrap(RecordingAgent(), spec), messages)
    assert messages == before


def test_presets_reproduce_the_study_configurations():
    assert {name: (p.policy, p.user_model) for name, p in PRESETS.items()} == {
        "C1": ("full", "none"),
        "C2": ("full", "rule"),
        "C3": ("last_n:n=5", "rule"),
        "C4": ("last_n_summary:n=5,w=3", "rule"),
    }
    for preset in PRESETS.values():
        assert parse_policy(preset.policy).spec == preset.policy
