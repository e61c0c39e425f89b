"""The scripted agent's reading cache: a reading reused from the last call gives what a fresh one gives."""

from __future__ import annotations

import copy
import pickle
import random
import re
import sys

import gymnasium as gym
import pytest
from hypothesis import given
from hypothesis import strategies as st

import erp_sim.envs  # noqa: F401  (registers the ids)
from erp_sim.agents.policies import wrap
from erp_sim.agents.runner import run_episode
from erp_sim.agents.scripted import ScriptedAgent, View, decide
from erp_sim.agents.types import Continuation, SealedMessage, Transcript, unchanged_prefix
from erp_sim.workflows.itemization import scripted as itemization_scripted

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


# -- what a sender vouches is unchanged (types.unchanged_prefix) is read on from, never compared -------------
class Uncomparable(dict):
    """A message that fails the test when compared with another: shows where a list is compared."""

    def __eq__(self, other):
        raise AssertionError("a vouched-for message was compared")

    __hash__ = None


def test_a_transcript_is_read_on_uncompared_and_a_plain_list_is_compared(shown_lists):
    longest = [Uncomparable(m) for m in shown_lists["full"][-1]]
    transcript, reading = Transcript(longest[:4]), None
    for end in range(4, len(longest) + 1, 3):
        transcript.extend(longest[len(transcript) : end])
        cached = View(transcript, reading=reading)  # the same Transcript, grown: nothing compared
        reading = cached.reading
        assert same_view(cached, View([dict(m) for m in transcript]))
    with pytest.raises(AssertionError, match="compared"):  # a plain list with the same messages is compared
        View(list(longest), reading=View(list(longest[:-2])).reading)


def test_the_vouch_holds_only_for_the_list_read_last():
    one, two = ({"role": "user", "content": "x"},), ({"role": "user", "content": "y"},)
    first = Transcript([*one, *two])
    assert unchanged_prefix(first, first, 1) == 1 and unchanged_prefix(first, first, 9) == 2
    assert unchanged_prefix(first, Transcript(first), 2) == 0  # an equal Transcript: another list
    assert unchanged_prefix(first, None, 2) == unchanged_prefix(list(first), list(first), 2) == 0
    last = Continuation([*one, *two])
    following = Continuation([*one, *two, *one], last, kept=2)
    assert unchanged_prefix(following, last, 2) == 2 and unchanged_prefix(following, last, 1) == 1
    assert unchanged_prefix(following, first, 2) == 0  # sent after another list than the one read
    assert Continuation([*one], last, kept=5).kept == 1 and Continuation([*one, *two], None, kept=2).kept == 0
    assert last.previous is None and following.previous is last  # a chain of one
    Continuation(following, following, kept=3)
    assert following.previous is None


def test_a_transcript_refuses_what_would_change_a_message_it_showed():
    transcript = Transcript([{"role": "user", "content": "x"}])
    transcript.append({"role": "assistant", "content": "y"})
    transcript += [{"role": "user", "content": "z"}]
    transcript.extend([])
    for change in (
        lambda t: t.__setitem__(0, {}),
        lambda t: t.__delitem__(0),
        lambda t: t.insert(0, {}),
        lambda t: t.pop(),
        lambda t: t.remove(t[0]),
        lambda t: t.clear(),
        lambda t: t.sort(key=str),
        lambda t: t.reverse(),
        lambda t: t.__imul__(2),
    ):
        with pytest.raises(TypeError, match="only grows"):
            change(transcript)
    assert [m["content"] for m in transcript] == ["x", "y", "z"]


def test_a_transcripts_messages_refuse_changes_in_place_and_copy_as_plain_dicts():
    """What the runner's transcript vouches for (``unchanged_prefix``) holds for its messages too: an agent or
    policy that clears a tool result in place is refused with a way out, and every copy is a plain dict."""
    given = {"role": "tool", "tool_call_id": "c1", "content": "a long result"}
    transcript = Transcript([{"role": "user", "content": "x"}])
    transcript.append(given)
    transcript += [{"role": "user", "content": "z"}]
    shown = transcript[1]
    given["content"] = "changed by its author after the append"  # the transcript holds its own copy
    assert shown["content"] == "a long result" and isinstance(shown, SealedMessage)
    for change in (
        lambda m: m.__setitem__("content", "[cleared]"),
        lambda m: m.__delitem__("content"),
        lambda m: m.update(content="[cleared]"),
        lambda m: m.pop("content"),
        lambda m: m.popitem(),
        lambda m: m.clear(),
        lambda m: m.setdefault("name", "t"),
        lambda m: m.__ior__({"content": "[cleared]"}),
    ):
        with pytest.raises(TypeError, match=r"copy it \(dict\(message\)\)"):
            change(shown)
    assert shown == {"role": "tool", "tool_call_id": "c1", "content": "a long result"}
    for copied in (
        dict(shown),
        shown.copy(),
        copy.copy(shown),
        copy.deepcopy(shown),
        pickle.loads(pickle.dumps(shown)),
    ):
        assert type(copied) is dict and copied == shown
        copied["content"] = "[cleared]"
    assert transcript[2] is transcript[-1] and all(type(m) is SealedMessage for m in transcript)


class Shown(ScriptedAgent):
    """The scripted agent, keeping each list it was shown (the policy's context)."""

    def __init__(self) -> None:
        super().__init__()
        self.shown: list[list] = []

    def act(self, transcript, tools):
        self.shown.append(transcript)
        return super().act(transcript, tools)


def test_full_history_vouches_for_what_it_received_unchanged_and_other_policies_for_nothing(shown_lists):
    longest = shown_lists["full"][-1]
    for spec, vouched in (("full", True), ("last_n:n=5", False), ("head_tail:chars=800", False)):
        for sent in (Transcript, list):
            inner = Shown()
            policy, transcript = wrap(inner, spec), sent(longest[:4])
            policy.act(transcript, [])
            transcript = transcript if sent is Transcript else list(transcript)
            transcript += longest[4:7]
            policy.act(transcript, [])
            first, then = inner.shown
            assert then.previous is first
            assert then.kept == (len(first) if vouched and sent is Transcript else 0), (spec, sent)
    stacked = Shown()  # in a stack, what the layer above vouched for
    policy, transcript = wrap(stacked, "full+full"), Transcript(longest[:4])
    policy.act(transcript, [])
    transcript += longest[4:6]
    policy.act(transcript, [])
    assert stacked.shown[1].kept == 4


class Checked(ScriptedAgent):
    """The scripted agent, noting every call where its reading (resumed from the last) is not a fresh one's."""

    def __init__(self) -> None:
        super().__init__()
        self.calls, self.differing = 0, list[int]()

    def act(self, transcript, tools):
        step = super().act(transcript, tools)
        fresh = ScriptedAgent().act(list(transcript), tools)
        same = same_view(View(transcript, reading=self._reading), View(list(transcript)))
        if step.message != fresh.message or not same:
            self.differing.append(self.calls)
        self.calls += 1
        return step


@pytest.mark.parametrize("spec", ["full", "head_tail:chars=800"])
def test_an_episode_read_on_from_what_is_vouched_decides_as_a_fresh_reading(spec):
    env = gym.make("erp_sim/LongHorizon-v0")
    agent = Checked()
    checked = run_episode(env, wrap(agent, spec), task_id="long-050-00")
    plain = run_episode(env, wrap(ScriptedAgent(), spec), task_id="long-050-00")
    env.close()
    assert checked.infra_error is None and agent.calls == len(checked.steps) > 100
    assert agent.differing == []
    assert checked.messages == plain.messages and type(checked.messages) is list


def test_a_message_edited_in_place_in_a_plain_list_is_read_again_through_a_policy(shown_lists):
    """An outsider's list carries no vouch: the full policy's context then claims nothing and an in-place edit of
    the latest result is read (the agent's decision is a fresh agent's)."""
    messages = copy.deepcopy(shown_lists["full"][-1])
    policy = wrap(ScriptedAgent(), "full")
    policy.act(messages, [])
    result = next(m for m in reversed(messages) if m.get("role") == "tool")
    result["content"] = next(m["content"] for m in messages if m.get("role") == "tool" and m is not result)
    assert policy.act(messages, []).message == ScriptedAgent().act(list(messages), []).message
    assert View(messages).state != View(shown_lists["full"][-1]).state


# -- the user's "yes ... add" (itemization.scripted.confirms) ------------------------------------------
_CONFIRMED = re.compile(r"\byes\b.*\badd\b", re.IGNORECASE | re.DOTALL)  # what confirms finds, as a regex


@given(st.lists(st.sampled_from(["yes", "YeS", "ye\u017f", "add", "ADD", "Add", "x", "_", "1", " ", "\n", "é", "ß"])))
def test_confirms_finds_what_the_regex_finds(parts):
    text = "".join(parts)
    assert itemization_scripted.confirms(text) == bool(_CONFIRMED.search(text))


def test_confirms_reads_every_case_of_yes_and_add_as_ignorecase_does():
    """Its patterns spell each letter's cases out (no leading \\b, for speed): every code point re.IGNORECASE
    takes for a letter of "yes" or "add" (the long s for s, say) is in them."""
    every_character = "".join(map(chr, range(sys.maxunicode + 1)))
    for word, pattern in (("yes", itemization_scripted._YES), ("add", itemization_scripted._ADD)):
        for at, letter in enumerate(word):
            for case in re.findall(letter, every_character, re.IGNORECASE):
                assert pattern.fullmatch(word[:at] + case + word[at + 1 :]), (word, case)
