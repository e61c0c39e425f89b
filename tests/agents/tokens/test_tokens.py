"""Exact o200k_base counts offline, the message formula, and incremental (cached) counting."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from erp_support import new_line, open_itemization
from hypothesis import given, settings
from hypothesis import strategies as st
from process_support import fresh_python

from erp_sim import ErpSession, get_task
from erp_sim.agents import tokens
from erp_sim.agents.tokens import TokenCounter, count_message, count_messages, count_text, decode, encode

# Token ids computed once with bpe-openai and checked against tiktoken's published values
# ("Hello, world!" is [13225, 11, 2375, 0] in o200k_base and [9906, 11, 1917, 0] in cl100k_base).
KNOWN_O200K = {
    "hello world": [24912, 2375],
    "Hello, world!": [13225, 11, 2375, 0],
    "EXP-000123": [63283, 12, 1302, 7633],
    "Itemize the hotel expense on report EXP-000123.": [
        1590,
        750,
        290,
        6372,
        29361,
        402,
        3019,
        24457,
        12,
        1302,
        7633,
        13,
    ],
    "naïve café 東京": [1503, 9954, 737, 30469, 185244],
    "": [],
}
KNOWN_CL100K = {"hello world": [15339, 1917], "Hello, world!": [9906, 11, 1917, 0]}


@pytest.mark.parametrize("text,ids", KNOWN_O200K.items())
def test_o200k_ids_and_counts(text, ids):
    assert encode(text) == ids
    assert count_text(text) == len(ids)
    assert decode(ids) == text


@pytest.mark.parametrize("text,ids", KNOWN_CL100K.items())
def test_cl100k_is_registered(text, ids):
    assert encode(text, "cl100k_base") == ids
    assert count_text(text, "cl100k_base") == len(ids)


def test_special_token_text_counts_as_ordinary_text():
    # A user who types "<|endoftext|>" sends characters, not the special token.
    assert encode("<|endoftext|>") == [27, 91, 419, 1440, 919, 91, 29]
    assert count_text("<|endoftext|>") == 7


def test_unknown_encoding_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown encoding 'p99k'.*o200k_base"):
        tokens.get_encoder("p99k")


def test_lone_surrogate_does_not_crash():
    assert count_text("\ud800abc") >= 1


def test_very_long_text_is_counted_exactly():
    # Over bpe-openai's 1M-character / 200k-token limit of encode_ordinary.
    text = ("hello world " * 100_000).rstrip()
    assert len(text) > 1_000_000
    assert count_text(text) == 200_000 == len(encode(text))


def test_message_formula():
    # 3 framing + "user"(1) + "hello world"(2)
    assert count_message({"role": "user", "content": "hello world"}) == 6
    # + name: 1 + "bob"(1)
    assert count_message({"role": "user", "content": "hello world", "name": "bob"}) == 8
    call = {"id": "call_1", "type": "function", "function": {"name": "form_save_form", "arguments": "{}"}}
    expected = 3 + 1 + 0 + 3 + count_text("form_save_form") + count_text("{}")
    assert count_message({"role": "assistant", "content": None, "tool_calls": [call]}) == expected
    # ids are not counted: two results differing only in tool_call_id count the same
    a = {"role": "tool", "tool_call_id": "a", "content": "hello world"}
    b = {"role": "tool", "tool_call_id": "a-much-longer-id", "content": "hello world"}
    assert count_message(a) == count_message(b) == 3 + count_text("tool") + 2
    # list content: the text parts count
    parts = {"role": "user", "content": [{"type": "text", "text": "hello"}, {"type": "text", "text": " world"}]}
    assert count_message(parts) == 6
    # a list of messages adds 3 tokens of reply priming
    assert count_messages([{"role": "user", "content": "hello world"}] * 2) == 6 + 6 + 3
    assert count_messages([]) == 3


def test_counting_a_growing_transcript_is_incremental():
    counter = TokenCounter()
    transcript = [{"role": "user", "content": f"message number {i}"} for i in range(50)]
    for n in range(1, 51):
        counter.count_messages(transcript[:n])
    assert counter.misses == 50  # each message tokenized once
    assert counter.hits == sum(range(50))


def test_equal_messages_share_a_cache_entry_and_the_cache_is_bounded():
    counter = TokenCounter(cache_size=10)
    for i in range(25):
        counter.count_message({"role": "user", "content": f"text {i}"})
    assert len(counter._cache) == 10
    counter.count_message({"role": "user", "content": "text 24"})
    assert counter.hits == 1
    # evicted entries are recounted, with the same result
    assert counter.count_message({"role": "user", "content": "text 0"}) == count_message(
        {"role": "user", "content": "text 0"}
    )


def test_count_tools_is_positive_for_a_schema():
    schema = [{"type": "function", "function": {"name": "form_save_form", "parameters": {"type": "object"}}}]
    assert TokenCounter().count_tools(schema) > 5
    assert TokenCounter().count_tools(None) == 0


def test_running_count_matches_count_messages_and_counts_only_new_messages():
    counter = TokenCounter()
    running = tokens.RunningCount(counter)
    transcript = [{"role": "user", "content": f"message {i}"} for i in range(20)]
    for n in range(21):
        assert running(transcript[:n]) == counter.count_messages(transcript[:n])
    lookups = counter.hits + counter.misses
    assert running(transcript) == counter.count_messages(transcript)
    assert counter.hits + counter.misses == lookups + 20  # only count_messages looked anything up
    edited = list(transcript)
    edited[3] = {"role": "user", "content": "a different, longer message"}
    assert running(edited) == counter.count_messages(edited)  # a replaced message: recounted
    assert running(transcript[:5]) == counter.count_messages(transcript[:5])  # a shorter list: recounted


def test_the_cache_is_bounded_in_characters_too():
    counter = TokenCounter(cache_chars=10_000)
    for i in range(50):
        counter.count_message({"role": "tool", "content": f"{i:04d}" + "x" * 996})
    assert len(counter._cache) == 10 and counter._cache.chars <= 10_000


def test_a_key_put_again_holds_its_characters_once():
    """Two threads counting one text put it twice: the bound must not count its characters twice."""
    cache = tokens._LRU(max_entries=10, max_chars=100)
    for _ in range(5):
        cache.put("a" * 30, 7, 30)
    cache.put("b" * 60, 9, 60)
    assert len(cache) == 2 and cache.chars == 90 and cache.get("a" * 30) == 7


def test_counting_loads_only_the_backend_not_every_rank_table():
    """``import bpe_openai`` decodes every encoding's Python rank table; counting needs none of them."""
    probe = (
        "import sys\nfrom erp_sim.agents.tokens import count_text, decode, encode\n"
        "assert count_text('hello world') == 2 and decode(encode('héllo 🙂')) == 'héllo 🙂'\n"
        "print('bpe_openai' in sys.modules, 'bpe_openai._bindings' in sys.modules)"
    )
    assert fresh_python(probe).split() == ["False", "True"]


def test_ordinary_vocabulary_sizes_match_the_rank_tables():
    from bpe_openai import registry

    from erp_sim.agents.tokens import ORDINARY_TOKENS

    for name, size in ORDINARY_TOKENS.items():
        ranks = registry.ENCODING_CONSTRUCTORS[name]()["mergeable_ranks"]
        assert size == len(ranks) == max(ranks.values()) + 1


def test_decoding_special_and_unknown_ids_goes_through_the_full_encoding():
    ids = encode("abc héllo")
    assert decode(ids[:-1]) + decode(ids[-1:]) == "abc héllo"
    assert decode([199_999]) == "<|endoftext|>"
    with pytest.raises(KeyError):
        decode([10**9])


def test_a_message_whose_content_or_calls_are_replaced_is_counted_again():
    counter = TokenCounter()
    message = {"role": "assistant", "content": "short"}
    first = counter.count_message(message)
    assert counter.count_message(message) == first
    message["content"] = "a much longer text than before, with many more tokens in it"
    assert counter.count_message(message) > first
    message["tool_calls"] = [{"id": "c", "type": "function", "function": {"name": "form_save_form", "arguments": "{}"}}]
    assert counter.count_message(message) == count_message(
        {"role": "assistant", "content": message["content"], "tool_calls": message["tool_calls"]}
    )


def test_running_count_counts_only_messages_it_has_not_seen_wherever_they_stand():
    counter = TokenCounter()
    running = tokens.RunningCount(counter)
    transcript = [{"role": "user", "content": f"message {i}"} for i in range(10)]
    running(transcript)
    transcript[6]["content"] = "this message was edited in place and is longer now"
    assert running(transcript) == counter.count_messages(transcript)
    lookups = counter.hits + counter.misses
    anchor = {"role": "system", "content": "a note a policy inserts near the start"}
    changed = [transcript[0], anchor, *transcript[1:8], *transcript[9:]]  # one inserted, one dropped
    assert running(changed) == counter.count_messages(changed)
    assert counter.hits + counter.misses == lookups + 1 + len(changed)  # the anchor, then count_messages


def test_decoding_ids_cut_inside_a_character_replaces_it_as_bpe_openai_does():
    """A head/tail cut by tokens can split a 4-byte character; the backend alone refuses such bytes."""
    from erp_sim.agents.tokens import decode, encode

    ids = encode("0:0\U00010000\U00010000")
    cut = [decode(ids[:n]) for n in range(len(ids) + 1)]
    assert cut[-1] == "0:0\U00010000\U00010000"
    assert any("\ufffd" in text for text in cut)  # a cut inside a character: the replacement character


def test_same_prefix_counts_identical_objects_or_a_wholly_equal_prefix():
    """One list comparison when the shorter list's items are all equal to the other's (the very objects, or
    equal copies: full history resends the same messages), else the leading identical objects, stopping at the
    first difference (a request that parts early costs little)."""
    import random

    rng = random.Random(1)
    objects = [{"role": "user", "content": "same"} for _ in range(6)] + [{"role": "user", "content": "other"}]
    for _ in range(3_000):
        items = [rng.choice(objects) for _ in range(rng.randrange(8))]
        reference = items[: rng.randrange(len(items) + 1)] + [rng.choice(objects) for _ in range(rng.randrange(4))]
        shorter = min(len(items), len(reference))
        expected = 0
        while expected < shorter and items[expected] is reference[expected]:
            expected += 1
        if items[:shorter] == reference[:shorter]:
            expected = shorter
        assert tokens.same_prefix(items, reference) == expected


def test_only_lone_surrogates_are_replaced_before_tokenizing():
    ascii_text, accented = "plain ascii", "caf\u00e9 \u2014 na\u00efve"
    assert tokens._valid_utf8(ascii_text) is ascii_text and tokens._valid_utf8(accented) is accented
    assert tokens._valid_utf8("lone \ud800 surrogate") == "lone \ufffd surrogate"


# Characters that decide where o200k's pattern ends a piece around a line break: breaks, spaces and tabs, "/"
# (the punctuation piece runs on over it), other whitespace of the encoding's \s and of Python's only
# (\x85, \u2028, \x0b; \x1c), punctuation, letters, digits and an apostrophe.
LINE_ALPHABET = "\n\n\n\r  \t//\x85\u2028\x0b\x1c.,:-#|()'aZé19"


@contextmanager
def lines_per_chunk(lines: int) -> Iterator[None]:
    """Chunks of ``lines`` lines on average in every text while the block runs (1: one before every line a cut may
    go before), in short texts too (``SHORT_CHUNK_LINES``)."""
    old = tokens.CHUNK_LINES, tokens.SHORT_CHUNK_LINES
    tokens.CHUNK_LINES = tokens.SHORT_CHUNK_LINES = lines
    try:
        yield
    finally:
        tokens.CHUNK_LINES, tokens.SHORT_CHUNK_LINES = old


@settings(max_examples=400, deadline=None)
@given(lines=st.lists(st.text(alphabet=LINE_ALPHABET, max_size=12), min_size=tokens.CHUNKED_MIN_LINES + 1))
def test_a_text_counted_by_chunks_of_lines_has_its_whole_count(lines):
    """A many-line text counted as the sum of its chunks has the count of the text whole, wherever the chunks
    end (here before every line a cut may go before), and so has an edited copy and a prefix ending at a cut."""
    text = "\n".join(lines)
    encoder = tokens.get_encoder()
    counter = TokenCounter()
    with lines_per_chunk(1):
        assert counter._count_long(text) == encoder.count(text)
        edited = text[: len(text) // 2] + "\nan inserted line\n" + text[len(text) // 2 :]
        assert counter._count_long(edited) == encoder.count(edited)
        cut = text.find("\n", len(text) // 3) + 1
        if cut and tokens._CUT_BEFORE.match(text, cut) and len(text) >= tokens.TEXT_CACHE_MIN_CHARS:
            assert counter.count_text_before(text, cut) == encoder.count(text[:cut])


@settings(max_examples=400, deadline=None)
@given(
    lines=st.lists(st.text(alphabet=LINE_ALPHABET, max_size=12), min_size=tokens.CHUNKED_MIN_LINES + 1),
    where=st.floats(min_value=0, max_value=1),
    chunk_lines=st.sampled_from([1, tokens.SHORT_CHUNK_LINES, tokens.CHUNK_LINES]),
    known=st.booleans(),
)
def test_a_prefix_of_a_text_counted_by_chunks_of_lines_has_its_whole_count(lines, where, chunk_lines, known):
    """``count_text_before`` of a many-line text sums the chunks before the cut and the part of the next one (or
    of the two before it, where the line the next one starts with is cut short of where a chunk may start): the
    prefix's own count, at any cut, whether the chunks were counted before (an edited copy was) or not; and the
    whole text's count it keeps is the whole text's."""
    text = "\n".join(lines)
    encoder = tokens.get_encoder()
    counter = TokenCounter()
    cut = round(where * len(text))
    with lines_per_chunk(chunk_lines):
        if known:
            counter.count_text(text[: len(text) // 2] + "\nan inserted line\n" + text[len(text) // 2 :])
        if len(text) >= tokens.TEXT_CACHE_MIN_CHARS:
            assert counter.count_text_before(text, cut) == encoder.count(text[:cut])
        assert counter.count_text(text) == encoder.count(text)


def test_a_prefix_of_a_new_summary_is_not_tokenized_whole_where_its_chunks_are_known():
    """The prompt cache counts a new summary's prefix up to where it parts from the last one (a few lines in, fewer
    than a text is chunked at): of the chunks before the cut, known from the last summary, none is tokenized again,
    only the part of the one the cut falls in and the chunk that changed (here every line is a chunk)."""
    lines = [f"  {n}. 2026-07-{n % 28 + 1:02d} | Accommodation | {100 + n}.25" for n in range(400)]
    counter, tokenized = spied_counter()
    with lines_per_chunk(1):
        counter.count_text("\n".join(lines))  # the last summary
        lines[300] = "  300. 2026-07-01 | Room tax | 13.37"
        text = "\n".join(lines)
        tokenized.clear()
        cut = text.index("Accommodation", len(lines[0]) * 20) + len("Accommodation")  # a letter, then " "
        assert counter.count_text_before(text, cut) == tokens.get_encoder().count(text[:cut])
        assert counter.count_text(text) == tokens.get_encoder().count(text)
    assert len(tokenized) == 2 and max(tokenized) <= len(lines[0]) + 1  # the cut's line, up to the cut; line 300


def spied_counter() -> tuple[TokenCounter, list[int]]:
    """A fresh counter, and the lengths of the texts it hands its encoder (what it really tokenizes)."""
    counter = TokenCounter()
    encoder = counter.encoder
    tokenized: list[int] = []

    class Spy:
        def count(self, text: str) -> int:
            tokenized.append(len(text))
            return encoder.count(text)

    counter.encoder = Spy()  # type: ignore[assignment]
    return counter, tokenized


def test_a_long_summary_is_tokenized_again_only_where_it_changed():
    """A re-rendered summary with one line changed costs about a chunk of tokenizing, not the whole text."""
    lines = [f"  {n}. 2026-07-{n % 28 + 1:02d} | Accommodation | {100 + n}.25" for n in range(400)]
    counter, tokenized = spied_counter()
    encoder = tokens.get_encoder()
    assert counter.count_text("\n".join(lines)) == encoder.count("\n".join(lines))
    tokenized.clear()
    lines[200] = "  200. 2026-07-01 | Room tax | 13.37"
    edited = "\n".join(lines)
    assert counter.count_text(edited) == encoder.count(edited)
    # Chunks end before lines whose str hash (salted per process) is 0 mod 8: the edit re-tokenizes the chunk
    # holding it (and the next, if the edited line's hash moved a boundary), 8 lines on average; over 40 of the
    # 400 lines in about one process in 40 (a bound of a tenth failed there), over 100 in about one in a million.
    assert len(tokenized) <= 2 and sum(tokenized) < len(edited) / 4


# Characters that decide whether o200k's pattern ends a piece before a '",': letters and digits (ASCII or not),
# marks (a combining accent runs on a letter piece), an apostrophe (a contraction), spaces and line breaks
# (the pieces that look ahead), quotes, commas, other punctuation and "/".
STRING_END_ALPHABET = 'aZ9é東\u0301\u0663\'  \n\r\t"""",,,:{}[]/.-'


@settings(max_examples=400, deadline=None)
@given(values=st.lists(st.text(alphabet=STRING_END_ALPHABET, max_size=10), min_size=tokens.CHUNKED_MIN_STRING_ENDS + 1))
def test_a_text_counted_by_chunks_at_string_ends_has_its_whole_count(values):
    """A one-line text with many '",' counted as the sum of its chunks has the count of the text whole, wherever
    the chunks end (here before every '",' a cut may go before), and so has an edited copy."""
    text = tokens.STRING_END.join(values).replace("\n", " ")  # one line: the line chunks are tested above
    encoder = tokens.get_encoder()
    counter = TokenCounter()
    old, tokens.CHUNK_STRING_ENDS = tokens.CHUNK_STRING_ENDS, 1
    try:
        assert counter._count_long(text) == encoder.count(text)
        middle = len(text) // 2
        edited = text[:middle] + 'x9","Value":"an edited value 12.50' + text[middle:]
        assert counter._count_long(edited) == encoder.count(edited)
    finally:
        tokens.CHUNK_STRING_ENDS = old


def test_a_response_is_tokenized_again_only_where_it_differs_from_the_last(monkeypatch):
    """Of two JSON responses a grid row apart, the second costs about the chunks around the row, not the whole text,
    and both counts are exact."""
    session = ErpSession(get_task("long_horizon", 0))
    open_itemization(session)
    first = new_line(session, "Room tax", "10.25").text
    second = new_line(session, "Room tax", "11.75").text
    assert "\n" not in first and first.count(tokens.STRING_END) >= tokens.CHUNKED_MIN_STRING_ENDS
    counter, tokenized = spied_counter()
    encoder = tokens.get_encoder()
    assert counter.count_text(first) == encoder.count(first)
    assert len(first) / 2 < sum(tokenized) <= len(first)  # every chunk is new (but one repeated in the text)
    assert counter.count_text(second) == encoder.count(second)
    # Chunks end before one string end in 4 on average, by their str hash (salted per process): how much of the
    # second is tokenized again varies from process to process. With a cut before every string end it may go
    # before, it is only the values around the differences (the summary's counts, the new row, the selection).
    monkeypatch.setattr(tokens, "CHUNK_STRING_ENDS", 1)
    counter, tokenized = spied_counter()
    assert counter.count_text(first) == encoder.count(first)
    tokenized.clear()
    assert counter.count_text(second) == encoder.count(second)
    assert 0 < sum(tokenized) < len(second) / 4
