"""Cacheable prefix figures on hand-built request sequences (erp_sim.agents.tokens.prompt_cache)."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from erp_sim.agents.tokens import (
    REPLY_PRIMING_TOKENS,
    TEXT_CACHE_MIN_CHARS,
    TokenCounter,
    encode,
    encode_message,
    get_counter,
    message_token_key,
)
from erp_sim.agents.tokens.prompt_cache import EpisodeMeter, PrefixTracker, record_call
from erp_sim.agents.tokens.shared_prefix import shared_message_tokens, shared_text_tokens
from erp_sim.agents.types import ChatResponse, Continuation, Transcript, Usage
from erp_sim.envs.episode import tool_schemas

COUNTER = get_counter()


def function_tool(name: str, description: str) -> dict:
    """A tool schema without parameters, as a request lists it."""
    parameters = {"type": "object", "properties": {}}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


TOOLS = [function_tool("form_open", "Open a form.")]
OTHER_TOOLS = [function_tool("form_close", "Close a form.")]
SYSTEM = {"role": "system", "content": "You itemize hotel expenses in Dynamics 365. " * 20}
TASK = {"role": "user", "content": "Itemize the hotel line of report EXP-001: three nights at 120.00."}


def step(n: int) -> list[dict]:
    """An assistant call and its tool result, numbered."""
    call = {"id": f"c{n}", "type": "function", "function": {"name": "form_open", "arguments": f'{{"step": {n}}}'}}
    return [
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{n}", "name": "form_open", "content": f"form state after step {n} " * 30},
    ]


def tokens(*messages: dict) -> int:
    return sum(COUNTER.count_message(m) for m in messages)


def test_encode_message_has_as_many_units_as_count_message():
    for message in [
        SYSTEM,
        TASK,
        *step(1),
        {"role": "user", "name": "ana", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": None},
    ]:
        assert len(encode_message(message)) == COUNTER.count_message(message)


def test_full_history_extends_the_same_prefix_every_call():
    tracker = PrefixTracker()
    history = [SYSTEM, TASK]
    assert tracker.observe(history, TOOLS) == 0  # nothing earlier
    for n in range(1, 5):
        before = list(history)
        history += step(n)
        # everything the previous request sent is a prefix of this one: tools + its messages
        assert tracker.observe(history, TOOLS) == COUNTER.count_tools(TOOLS) + tokens(*before)


def test_a_repeated_request_is_cacheable_whole_with_its_reply_priming():
    tracker = PrefixTracker()
    request = [SYSTEM, TASK, *step(1)]
    tracker.observe(request, TOOLS)
    whole = COUNTER.count_messages(request) + COUNTER.count_tools(TOOLS)
    assert tracker.observe(request, TOOLS) == whole
    assert whole == COUNTER.count_tools(TOOLS) + tokens(*request) + REPLY_PRIMING_TOKENS


def test_rewriting_an_early_message_stops_the_prefix_there():
    tracker = PrefixTracker()
    tracker.observe([SYSTEM, TASK, *step(1), *step(2)], TOOLS)
    rewritten = dict(step(1)[1], content="a refined observation")  # the first tool result, rewritten by a policy
    figure = tracker.observe([SYSTEM, TASK, step(1)[0], rewritten, *step(2)], TOOLS)
    # tools, system, task and the first call are shared; of the rewritten result only what precedes
    # its content (framing, role, separator) is; nothing after it counts, though step 2 is identical
    shared_in_rewritten = 2 + COUNTER.count_text("tool")  # start mark, role, separator
    assert figure == COUNTER.count_tools(TOOLS) + tokens(SYSTEM, TASK, step(1)[0]) + shared_in_rewritten
    assert figure < COUNTER.count_tools(TOOLS) + tokens(SYSTEM, TASK, *step(1))


def test_last_n_pruning_keeps_only_system_and_task_cacheable():
    tracker = PrefixTracker()
    tracker.observe([SYSTEM, TASK, *step(1), *step(2)], TOOLS)
    pruned = [SYSTEM, TASK, *step(2), *step(3)]  # the oldest pair dropped: step 2 now follows the task
    figure = tracker.observe(pruned, TOOLS)
    start = COUNTER.count_tools(TOOLS) + tokens(SYSTEM, TASK)
    # the first message after the task differs from step 1's call only in its arguments' digits
    assert start < figure < start + tokens(step(2)[0])


def test_the_instruction_with_a_summary_appended_keeps_the_instruction_tokens():
    tracker = PrefixTracker(COUNTER)
    tracker.observe([SYSTEM, TASK, *step(1)], TOOLS)
    folded = {
        "role": "user",
        "content": TASK["content"] + "\n<HISTORY_SUMMARY>step 1 opened the form</HISTORY_SUMMARY>",
    }
    figure = tracker.observe([SYSTEM, folded], TOOLS)
    assert (
        figure >= COUNTER.count_tools(TOOLS) + tokens(SYSTEM) + tokens(TASK) - 2
    )  # all but the end framing, maybe a merge
    assert figure < COUNTER.count_tools(TOOLS) + tokens(SYSTEM) + tokens(TASK)


def test_changed_tools_make_nothing_cacheable():
    tracker = PrefixTracker()
    tracker.observe([SYSTEM, TASK], TOOLS)
    assert tracker.observe([SYSTEM, TASK, *step(1)], OTHER_TOOLS) == 0
    assert tracker.observe([SYSTEM, TASK, *step(1)], TOOLS) == COUNTER.count_tools(TOOLS) + tokens(SYSTEM, TASK)


def test_tool_schemas_are_tokenized_once_per_counter_and_counted_as_count_tools_counts_them():
    """Every episode sends a fresh copy of the same schemas: their text is tokenized once (per counter), and the
    runner's count of them (``tools_tokens``) is ``count_tools``'s."""
    import copy

    class Encoding:
        def __init__(self, encoder):
            self.encoder, self.name, self.encoded = encoder, encoder.name, []

        def encode(self, text: str) -> list[int]:
            self.encoded.append(text)
            return self.encoder.encode(text)

        def count(self, text: str) -> int:
            self.encoded.append(text)
            return self.encoder.count(text)

        def __getattr__(self, name: str):
            return getattr(self.encoder, name)

    counter = TokenCounter()
    counter.encoder = encoding = Encoding(counter.encoder)
    long_tools = [{**TOOLS[0], "function": {**TOOLS[0]["function"], "description": "Open a form. " * 100}}]
    for _ in range(3):  # a fresh tracker (an episode) and a fresh copy of the schemas each time
        tracker, tools = PrefixTracker(counter), copy.deepcopy(long_tools)
        assert tracker.tools_tokens(tools) == COUNTER.count_tools(long_tools)
        assert tracker.observe([SYSTEM, TASK], tools) == 0
        assert tracker.observe([SYSTEM, TASK, *step(1)], tools) == COUNTER.count_tools(long_tools) + tokens(
            SYSTEM, TASK
        )
        assert tracker.tools_tokens(None) == COUNTER.count_tools(None) == 0
    schemas = [text for text in encoding.encoded if "Open a form. Open" in text]
    assert len(schemas) == 1  # the first episode's
    erp_tools = tool_schemas()  # the real schemas: the encoding's length is count_tools's count
    assert PrefixTracker().tools_tokens(erp_tools) == COUNTER.count_tools(erp_tools) > 1000


def test_the_longest_match_is_taken_over_every_earlier_request_not_only_the_last():
    tracker = PrefixTracker()
    long = [SYSTEM, TASK, *step(1), *step(2)]
    tracker.observe(long, TOOLS)
    tracker.observe([SYSTEM, {"role": "user", "content": "something else entirely"}], TOOLS)
    assert tracker.observe([*long, *step(3)], TOOLS) == COUNTER.count_tools(TOOLS) + tokens(*long)


def test_requests_without_tools_are_measured_too():
    tracker = PrefixTracker()
    assert tracker.observe([SYSTEM, TASK]) == 0
    assert tracker.observe([SYSTEM, TASK, *step(1)]) == tokens(SYSTEM, TASK)


def test_record_call_reports_to_the_running_episode_only_and_keeps_provider_figures_apart():
    response = ChatResponse(
        message={"role": "assistant", "content": "a summary"},
        usage=Usage(input_tokens=999, output_tokens=7, cached_input_tokens=512),
    )
    record_call("summarizer", [SYSTEM, TASK], None, response)  # no episode: nothing to report to, no error
    meter = EpisodeMeter().start()
    try:
        record_call("summarizer", [SYSTEM, TASK], None, response)
        record_call("summarizer", [SYSTEM, TASK, *step(1)], None, response)
        record_call("user", [SYSTEM, TASK], None, response.model_copy(update={"usage": Usage(input_tokens=5)}))
    finally:
        meter.stop()
    record_call("summarizer", [SYSTEM], None, response)  # after the episode: not counted
    first, second, user = meter.drain()
    assert (first.role, first.input_tokens, first.cacheable_prefix_tokens) == (
        "summarizer",
        COUNTER.count_messages([SYSTEM, TASK]),
        0,
    )
    assert second.cacheable_prefix_tokens == tokens(SYSTEM, TASK)
    assert (second.reported_input_tokens, second.provider_cached_tokens) == (999, 512)  # the service's, as reported
    assert second.output_tokens == COUNTER.count_message(response.message)
    assert (user.role, user.cacheable_prefix_tokens, user.provider_cached_tokens) == ("user", 0, None)  # roles apart
    assert meter.drain() == []


@pytest.mark.parametrize("calls", [50])
def test_many_branches_at_one_point_cost_two_comparisons(calls):
    """C3-like: every request branches right after the task; the figure stays exact."""
    tracker = PrefixTracker()
    for n in range(calls):
        figure = tracker.observe([SYSTEM, TASK, *step(n), *step(n + 1)], TOOLS)
        if n:
            assert figure >= COUNTER.count_tools(TOOLS) + tokens(SYSTEM, TASK)
            assert figure < COUNTER.count_tools(TOOLS) + tokens(SYSTEM, TASK, step(n)[0])


def test_resending_the_same_message_objects_gives_what_fresh_copies_give():
    """The tracker skips the leading messages that are the last request's very objects (full
    history); on random sequences (grow, prune, rewrite an early message, switch tools, repeat)
    that shortcut gives exactly the figures of the same requests built from fresh copies."""
    import copy
    import random

    rng = random.Random(7)
    for _ in range(30):
        pool = [SYSTEM, TASK, *[m for n in range(12) for m in step(n)]]
        shared, fresh = PrefixTracker(), PrefixTracker()
        history = pool[:2]
        for _ in range(25):
            move = rng.random()
            if move < 0.5:
                history = history + pool[len(history) : len(history) + 2] if len(history) < len(pool) else history
            elif move < 0.7:
                history = history[:2] + history[rng.randrange(2, max(3, len(history))) :]  # prune
            elif move < 0.8:
                history = [
                    history[0],
                    {"role": "user", "content": TASK["content"] + f" summary {rng.random()}"},
                    *history[2:],
                ]  # rewrite an early message
            tools = OTHER_TOOLS if rng.random() < 0.1 else TOOLS
            assert shared.observe(history, tools) == fresh.observe(copy.deepcopy(history), copy.deepcopy(tools))


def test_what_the_sender_vouches_for_gives_what_fresh_copies_give():
    """A Transcript that grew and a Continuation of the last request (``types.unchanged_prefix``) are read on from
    the vouched prefix uncompared, and the tracker keeps its last lists in place: on random sequences of such
    requests, plain lists and tool switches, the figures and message tokens are those of fresh copies."""
    import copy
    import random

    rng = random.Random(17)
    for _ in range(30):
        pool = [SYSTEM, TASK, *[m for n in range(12) for m in step(n)]]
        vouched, fresh = PrefixTracker(), PrefixTracker()
        transcript, request = Transcript(pool[:2]), list(pool[:2])
        for _ in range(30):
            move = rng.random()
            if move < 0.4:  # the transcript, grown
                transcript.extend(rng.sample(pool, rng.randrange(3)))
                request = transcript
            elif move < 0.8:  # the last request's first messages (as vouched), then others
                kept = rng.randrange(len(request) + 1)
                last = request if isinstance(request, Continuation) else None
                request = Continuation([*request[:kept], *rng.sample(pool, rng.randrange(3))], last, kept)
            else:
                request = [*request[:2], *rng.sample(pool, rng.randrange(4))]
            tools = OTHER_TOOLS if rng.random() < 0.1 else TOOLS
            assert vouched.observe(request, tools) == fresh.observe(copy.deepcopy(list(request)), tools)
            assert vouched.message_tokens == fresh.message_tokens


def test_a_request_that_fails_to_count_leaves_the_tracker_as_one_that_never_saw_it():
    """The last request's lists are cut in place: a failure half-way (a message the counter cannot read)
    drops them, so the next request is walked from the trie's root and figures as it would have."""
    failing, fresh = PrefixTracker(), PrefixTracker()
    history = Transcript([SYSTEM, TASK, *step(1)])
    for tracker in (failing, fresh):
        tracker.observe(history, TOOLS)
    with pytest.raises(TypeError):  # the last request's first two messages, then one whose content is no text
        failing.observe([SYSTEM, TASK, {"role": "tool", "tool_call_id": "c1", "content": object()}], TOOLS)
    history.extend(step(2))
    assert failing.observe(history, TOOLS) == fresh.observe(history, TOOLS)
    assert failing.message_tokens == fresh.message_tokens


def test_the_rest_after_leaving_the_trie_takes_the_last_requests_sums_at_the_right_offset():
    """A re-rendered anchor near the start makes every request leave the trie there; the rest is mostly the
    last request's very objects, shifted by messages inserted or dropped before (or inside) a long identical
    run, and its token sums are taken from the last request's. Messages of many different lengths: sums taken
    at a wrong offset would give wrong totals, and wrong figures for the next request that extends this one
    (it takes the sums up to each message). Checked against fresh copies and the definition by brute force."""
    import copy
    import random

    rng, made = random.Random(5), iter(range(10**6))
    tools_units = (tuple(encode(json.dumps(TOOLS, sort_keys=True, separators=(",", ":")))),)

    def note() -> dict:
        return {"role": "user", "content": f"note {next(made)}: " + "word " * rng.randrange(1, 60)}

    for _ in range(max(20, EXAMPLES // 15)):
        shared, fresh, earlier = PrefixTracker(), PrefixTracker(), []
        history, request = [note() for _ in range(rng.randrange(0, 30))], []
        for call in range(25):
            move = rng.random()
            if move < 0.25 and history:  # drop one, before or inside the run
                del history[rng.randrange(len(history))]
            elif move < 0.5:  # insert one
                history.insert(rng.randrange(len(history) + 1), note())
            elif move < 0.7 and len(history) > 4:  # drop several at once (a few, or more than are searched near)
                start = rng.randrange(len(history) - 3)
                del history[start : start + rng.choice([2, 3, 6, 12])]
            history += [note() for _ in range(rng.randrange(0, 3))]
            extend = call and rng.random() < 0.3  # the last request's very objects, then more (full history)
            request = [*request, note()] if extend else [SYSTEM, TASK, {**note(), "role": "system"}, *history]
            figure = shared.observe(request, TOOLS)
            assert shared.message_tokens == COUNTER.count_messages(request)
            assert figure == fresh.observe(copy.deepcopy(request), TOOLS)
            units = (*tools_units, *(tuple(encode_message(m)) for m in request))
            assert figure == _reference_figure(units, earlier)
            earlier.append(units)


def _reference_figure(request: tuple, earlier: list[tuple]) -> int:
    """The definition, by brute force: the longest unit-by-unit prefix shared with any earlier request."""
    best = 0
    for other in earlier:
        if other[0] != request[0]:  # tool schemas differ: nothing is cacheable
            continue
        shared = len(request[0])
        for position, unit in enumerate(request[1:], start=1):
            if position >= len(other):
                break
            if unit != other[position]:
                shared += next(
                    (n for n, (a, b) in enumerate(zip(unit, other[position])) if a != b),
                    min(len(unit), len(other[position])),
                )
                break
            shared += len(unit)
        else:
            shared += REPLY_PRIMING_TOKENS if len(other) == len(request) else 0
        best = max(best, shared)
    return best


def test_figures_equal_the_definition_on_random_branching_requests():
    """Messages compared by key (no tokenizing) give the token-by-token definition's figures, also
    for messages that differ as dicts but not as tokens (None vs empty content, a tool result's
    unsent name, text parts) and for requests that branch anywhere."""
    import random

    from erp_sim.agents.tokens import encode

    rng = random.Random(11)
    texts = ["form state " * 5, "form state " * 5 + "and more", "form status", "", "Itemize line 3 of EXP-000123."]
    texts += [text + end for text in ADVERSARIAL_TEXTS for end in ("", " x", "'s", "  \n", "7")]

    def message() -> dict:
        role = rng.choice(["user", "assistant", "tool"])
        content = rng.choice(texts)
        made = {
            "role": role,
            "content": rng.choice([content, [{"type": "text", "text": content}]] + ([None] if not content else [])),
        }
        if role == "tool":
            made.update(tool_call_id=f"c{rng.random()}", name=rng.choice(["a", "b"]))
        elif role == "assistant" and rng.random() < 0.5:
            made["tool_calls"] = [
                {
                    "id": f"c{rng.random()}",
                    "type": "function",
                    "function": {"name": "form_open", "arguments": rng.choice(['{"a": 1}', '{"a": 2}'])},
                }
            ]
        return made

    for _ in range(max(60, EXAMPLES // 10)):
        tracker, earlier = PrefixTracker(), []
        pool = [message() for _ in range(8)]
        for _ in range(15):
            request = [
                SYSTEM,
                *(rng.choice(pool) if rng.random() < 0.7 else message() for _ in range(rng.randrange(0, 6))),
            ]
            tools = OTHER_TOOLS if rng.random() < 0.1 else TOOLS
            units = (
                tuple(encode(json.dumps(tools, sort_keys=True, separators=(",", ":")))),
                *(tuple(encode_message(m)) for m in request),
            )
            assert tracker.observe(request, tools) == _reference_figure(units, earlier)
            earlier.append(units)


# Texts that part where o200k's pieces depend on what follows: whitespace runs before a letter or a line
# end, contractions (the pattern's 's 're 'll, in any case), digit runs cut in threes, letters with marks,
# text that changes case, characters of several bytes (a token may end inside one), a long letter run.
ADVERSARIAL_PIECES = [
    *("a", "b", "Z", "The", "tHE", "x" * 40, "'s", "'S", "'re", "'ll", "'", "' ", "'t'"),
    *(" ", "  ", "\t", "\n", "\r\n", " \n ", "\n\n  ", "\u00a0", "\u2028"),
    *("1", "12", "12345", "\u0663", "{", '"', ":", ",", "/", "!?", "_", "-", "\\u00e9"),
    *("\u00e9", "e\u0301", "\u65e5\u672c", "\U0001f600", "\u00df", "\u0130", "\u03a3", "\u0644\u0627"),
    *("\u00e8", "\u00ea", "\u65e5\u672b", "\U0001f601", "\u0645"),  # the same leading bytes, another last byte
]
ADVERSARIAL_TEXTS = [
    'form state  \n  {"FieldName": "Amount\'s", "Value": 120.5}',
    "nights   \n\n   Hotel's  room\t\t12345678 \u00e9t\u00e9 caf\u00e9\u0301 \U0001f600\U0001f600 IT'S OK",
    "a" * 300 + " " * 20 + "B" * 50,
]
PIECE_TEXT = st.lists(st.sampled_from(ADVERSARIAL_PIECES), max_size=30).map("".join) | st.text(max_size=40)
EXAMPLES = int(os.environ.get("PREFIX_EXAMPLES", "300"))  # run with e.g. 20000 after changing the shortcut


def _shared_ids(a: list[int], b: list[int]) -> int:
    return next((n for n, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(PIECE_TEXT, PIECE_TEXT, PIECE_TEXT)
def test_tokens_shared_around_where_texts_part_equal_the_whole_encodings(common, a, b):
    """Encoding only around the first differing character gives the shared tokens of the whole encodings,
    whether the counter knows the texts' counts (a fresh counter: not yet) or not."""
    a, b = common + a, common + b
    expected = _shared_ids(encode(a), encode(b))
    assert shared_text_tokens(a, b, TokenCounter()) == expected
    assert shared_text_tokens(a, b, COUNTER) == expected


def test_a_prefix_at_a_piece_boundary_is_counted_from_the_shorter_side_or_with_the_whole():
    """``count_text_before``: a long text's count, once known, leaves only its shorter side to count; an
    unknown long text is counted in two parts whose sum the counter then keeps as its count."""
    text = "Itemized lines (3):\n" + "  1. 2026-10-31 | Daily room rate | 379.07 | New\n" * 12
    cuts = [cut for cut in range(1, len(text)) if text[cut - 1].isalpha() and not text[cut].isalpha()]
    assert len(cuts) > 20 and len(text) >= TEXT_CACHE_MIN_CHARS
    for cut in cuts:
        counter = TokenCounter()
        counter.encoder = recording = _Recording(counter.encoder)
        assert counter.count_text_before(text, cut) == len(encode(text[:cut]))
        assert recording.counted == [cut, len(text) - cut]  # unknown: both parts
        assert counter.count_text(text) == len(encode(text))
        assert len(recording.counted) == 2  # their sum was kept
        assert counter.count_text_before(text, cut) == len(encode(text[:cut]))
        assert recording.counted[2:] == [min(cut, len(text) - cut)]  # known: the shorter side only


class _Recording:
    """An encoder that notes the length of every text it counts."""

    def __init__(self, encoder):
        self.encoder, self.name, self.counted = encoder, encoder.name, []

    def count(self, text: str) -> int:
        self.counted.append(len(text))
        return self.encoder.count(text)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["user", "assistant", "tool", "tools"]),
            st.sampled_from([None, "ana", "an"]),
            PIECE_TEXT,
            st.lists(st.tuples(st.sampled_from(["form_open", "form"]), PIECE_TEXT), max_size=2),
        ),
        min_size=2,
        max_size=2,
    )
)
def test_ids_shared_by_two_messages_equal_the_whole_encodings(pair):
    """Role, name, text and calls: the shared ids of two messages, whichever part they differ in."""
    messages = []
    for role, name, text, calls in pair:
        message = {"role": role, "content": text, **({"name": name} if name else {})}
        if calls:
            message["tool_calls"] = [
                {"id": "c", "type": "function", "function": {"name": n, "arguments": arguments}}
                for n, arguments in calls
            ]
        messages.append(message)
    keys = [message_token_key(m) for m in messages]
    expected = _shared_ids(encode_message(messages[0]), encode_message(messages[1]))
    assert shared_message_tokens(keys[0], keys[1], COUNTER) == expected


CONTINUATION = st.tuples(
    st.sampled_from(["user", "assistant", "tool"]),
    st.sampled_from([None, "ana"]),
    PIECE_TEXT,
    st.lists(st.tuples(st.sampled_from(["form_open", "form"]), PIECE_TEXT), max_size=2),
)


def _continuation(common: str, made: tuple) -> dict:
    """A message from a drawn (role, name, text, calls): its texts start with ``common``."""
    role, name, text, calls = made
    message = {"role": role, "content": common + text, **({"name": name} if name else {})}
    if role == "tool":
        message["tool_call_id"] = "c"
    if calls:
        message["tool_calls"] = [
            {"id": "c", "type": "function", "function": {"name": n, "arguments": common + arguments}}
            for n, arguments in calls
        ]
    return message


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(PIECE_TEXT, st.integers(1, 60), st.lists(CONTINUATION, min_size=2, max_size=14), CONTINUATION, st.randoms())
def test_the_most_tokens_shared_with_many_continuations_equal_the_whole_encodings(
    common, repeat, continuations, last, rng
):
    """Many requests that branch at one point (a pruning policy's window start, an anchor's counter), each
    continued by a message sharing a long prefix with the others (texts and call arguments), then one more:
    each gets the definition's figure, whichever continuation shares the most, however many were seen."""
    common = common * repeat  # long shared prefixes: past the boundary search window, counted by difference
    messages = [_continuation(common, made) for made in [*continuations, last]]
    rng.shuffle(messages)
    tracker, earlier = PrefixTracker(), []
    for message in messages:
        request = [SYSTEM, message]
        units = (
            tuple(encode(json.dumps(TOOLS, sort_keys=True, separators=(",", ":")))),
            *(tuple(encode_message(m)) for m in request),
        )
        assert tracker.observe(request, TOOLS) == _reference_figure(units, earlier)
        earlier.append(units)


def test_a_tracker_keeps_a_bounded_number_of_long_prefixes():
    """Requests that part at ever new places in long texts: the prefix counts kept stay bounded."""
    from erp_sim.agents.tokens.shared_prefix import PREFIXES_KEPT

    tracker, earlier = PrefixTracker(), []
    for n in range(3 * PREFIXES_KEPT):
        message = {"role": "tool", "tool_call_id": "c", "content": "form state " * (30 + n) + f"row {n}"}
        request = [SYSTEM, message]
        units = (
            tuple(encode(json.dumps(TOOLS, sort_keys=True, separators=(",", ":")))),
            *(tuple(encode_message(m)) for m in request),
        )
        assert tracker.observe(request, TOOLS) == _reference_figure(units, earlier)
        earlier.append(units)
    assert 0 < len(tracker._prefixes) <= PREFIXES_KEPT
