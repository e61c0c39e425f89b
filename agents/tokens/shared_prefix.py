"""How many leading tokens messages share, without encoding them whole (for ``prompt_cache``).

Two messages' ``encode_token_key`` ids part inside the first part of their keys that differs: the
header (role and name), or a text field (the content, a call's name or arguments), since framing ids
never equal a text token. Two texts' encodings are compared only around where the texts part: o200k's
pretokenizer has piece boundaries that two characters decide, encoding is the pieces' tokens in order,
so the tokens before the last such boundary both texts share are the same in both (counted), and the
pieces from there to a boundary past the first differing character hold the first differing token
(encoded). Against many earlier messages at once (``best_shared_tokens``), the fields are kept sorted.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from itertools import accumulate, chain
from typing import AnyStr

from erp_sim.agents.tokens import NAMES_KEPT, TEXT_CACHE_MIN_CHARS, Encoder, TokenCounter, encode_token_key

# Long text prefixes whose tokens a tracker keeps, the oldest dropped first: requests part at one or two places
# call after call, and a prefix may be as long as a tool result, so few are kept.
PREFIXES_KEPT = 32


def _shared_length(a: AnyStr, b: AnyStr) -> int:
    """Length of the common prefix of two (byte) strings (binary search over slices: C speed; each step
    compares only the part not known equal, so the slices copied add up to about the shorter length)."""
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    if long.startswith(short):
        return len(short)
    low, high = 0, len(short)  # a[:low] == b[:low], a[:high] != b[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if long.startswith(short[low:middle], low):  # one slice copied, the other compared in place
            low = middle
        else:
            high = middle
    return low


# A piece boundary of o200k's pretokenizer that two characters decide: an ASCII letter, then an ASCII
# character that is no letter and no apostrophe. Only the letter pieces take letters, and none of them goes on
# past such a character (a contraction needs the apostrophe), so every piece before the boundary is decided by
# the text up to that character, the text cut there encodes to those pieces, and the pattern has no lookbehind:
# the text from the boundary encodes to the pieces that follow. Encoding is the pieces' tokens in order.
_CUT = re.compile(r"[A-Za-z][\x00-\x26\x28-\x40\x5b-\x60\x7b-\x7f]")  # the boundary lies between the two
_CUT_REVERSED = re.compile(r"[\x00-\x26\x28-\x40\x5b-\x60\x7b-\x7f][A-Za-z]")  # the same, read backwards
CUT_WINDOW = 256  # characters searched back for a boundary before the whole common prefix is


def _last_cut(text: str, end: int) -> int:
    """The last boundary p with both its characters before ``end`` (0: the start, always one)."""
    for start in (max(0, end - CUT_WINDOW), 0):
        found = _CUT_REVERSED.search(text[start:end][::-1])
        if found is not None:
            return end - 1 - found.start()
        if start == 0:
            break
    return 0


def _next_cut(text: str, after: int) -> int:
    """The first boundary past position ``after`` (its letter at ``after`` or later), or the end."""
    found = _CUT.search(text, after)
    return len(text) if found is None else found.start() + 1


def _shared_ids(a: list[int], b: list[int]) -> int:
    """How many leading ids two id lists share."""
    return next((n for n, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


class _TextProbe:
    """One text compared with several others: how many leading tokens its encoding shares with each one's,
    encoding only around where the texts part. The tokens before the last boundary both share are the same in
    both (counted: the text's own side, once per boundary); the pieces from there to a boundary past the first
    differing character hold the first differing token (the text's window encoded once per boundary pair)."""

    def __init__(self, text: str, counter: TokenCounter, prefixes: dict[str, int] | None = None):
        self.text, self.counter, self.encoder = text, counter, counter.encoder
        self._prefixes = prefixes  # long prefixes' tokens, kept by the caller across texts (one prefix, many texts)
        self._before: dict[int, int] = {}  # boundary -> tokens of text[:boundary]
        self._windows: dict[tuple[int, int], list[int]] = {}
        # The window first compared (the other text agreeing on the most characters): its start, end and ids,
        # and, when asked for, where its tokens end (characters from its start; 0 for each token of a window
        # that is not ASCII: then every one may be shared), which bound what a text agreeing on fewer
        # characters can share (``most``).
        self._reference: tuple[int, int, list[int]] | None = None
        self._ends: list[int] | None = None

    def tokens_before(self, cut: int) -> int:
        """Tokens of ``text[:cut]`` at a piece boundary (``TokenCounter.count_text_before``), a long prefix
        looked up first in ``prefixes``."""
        known = self._before.get(cut)
        if known is None:
            text = self.text
            if not cut:
                known = 0
            elif cut == len(text):
                known = self.counter.count_text(text)
            elif cut < TEXT_CACHE_MIN_CHARS or self._prefixes is None:
                known = self.counter.count_text_before(text, cut)
            else:  # a long prefix: the texts compared at one branch point often part at the same place
                prefix = text[:cut]
                known = self._prefixes.get(prefix)
                if known is None:
                    if len(self._prefixes) >= PREFIXES_KEPT:
                        del self._prefixes[next(iter(self._prefixes))]
                    known = self._prefixes[prefix] = self.counter.count_text_before(text, cut)
            self._before[cut] = known
        return known

    def shared(self, other: str, part: int) -> int:
        """Leading tokens shared with ``other``, which agrees with the text on exactly ``part`` characters."""
        text = self.text
        if other == text:
            return self.tokens_before(len(text))
        cut, end = _last_cut(text, part), _next_cut(text, part)
        ids = self._windows.get((cut, end))
        if ids is None:
            ids = self._windows[cut, end] = self.encoder.encode(text[cut:end])
        if self._reference is None:
            self._reference = (cut, end, ids)
        return self.tokens_before(cut) + _shared_ids(ids, self.encoder.encode(other[cut : _next_cut(other, part)]))

    def most(self, part: int) -> int | None:
        """At most how many leading tokens a text agreeing on ``part`` characters can share (None: unknown, past
        the reference window): shared tokens decode to equal bytes, so each ends before character ``part`` ends,
        and the text's tokens up to the window's end are those before it and the window's."""
        if self._reference is None:
            return None
        cut, end, ids = self._reference
        if part >= end:
            return None
        if part < cut:  # only tokens before the window's start
            return self.tokens_before(cut)
        if self._ends is None:
            self._ends = _token_ends(ids, self.encoder) if self.text[cut:end].isascii() else [0] * len(ids)
        return self.tokens_before(cut) + bisect_right(self._ends, part - cut)


_token_chars: dict[tuple[str, int], int] = {}  # (encoding, ASCII token) -> its characters


def _token_ends(ids: list[int], encoder: Encoder) -> list[int]:
    """Where each token of an ASCII text ends, in characters from its start (one byte each: a token decodes
    alone); each token's length is decoded once per process (a vocabulary's worth at most)."""
    lengths = []
    for token in ids:
        length = _token_chars.get((encoder.name, token))
        if length is None:
            length = _token_chars[encoder.name, token] = len(encoder.decode([token]))
        lengths.append(length)
    return list(accumulate(lengths))


def shared_text_tokens(a: str, b: str, counter: TokenCounter) -> int:
    """How many leading tokens the encodings of ``a`` and ``b`` share (``_TextProbe``)."""
    return _TextProbe(b, counter).shared(a, _shared_length(a, b))


def message_fields(key: tuple) -> tuple[str, ...]:
    """A message key's texts after its header, in the order encoded: content, then each call's name and
    arguments. Framing ids (never a text token) come between, so two messages with the same header share
    the ids of their equal leading fields and then what their first differing fields share."""
    return (key[2], *chain.from_iterable(key[3]))


def _framing_before(field: int) -> int:
    """Framing ids between the header and field ``field`` (``encode_token_key``): each call opens with
    CALL_START before its name and CALL_ARGUMENTS before its arguments, and closes with CALL_END."""
    return 0 if not field else 3 * ((field - 1) // 2) + 1 + (field - 1) % 2


_header_lengths: dict[tuple[Encoder, tuple], int] = {}  # (encoder, role and name) -> len(_header_ids)


def _header_length(key: tuple, encoder: Encoder) -> int:
    """``len(_header_ids(key, encoder))``, kept per role and name (bounded like ``tokens._name_ids``)."""
    length = _header_lengths.get((encoder, key[:2]))
    if length is None:
        if len(_header_lengths) >= NAMES_KEPT:
            _header_lengths.clear()
        length = _header_lengths[encoder, key[:2]] = len(_header_ids(key, encoder))
    return length


def _header_ids(key: tuple, encoder: Encoder) -> list[int]:
    """The ids of a message key's role and name with their framing, up to the content (no MESSAGE_END)."""
    return encode_token_key((*key[:2], "", ()), encoder)[:-1]


def _shared_fields(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    """How many leading fields two field tuples share."""
    return next((n for n, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _next_field(
    siblings: list[tuple[str, ...]], fields: tuple[str, ...], whole: int, position: int, step: int, last: str | None
) -> int:
    """From ``position`` on, away from ``fields``' sorted position (``step`` -1 or 1): the first sibling that shares
    the first ``whole`` fields with ``fields`` and has one more, whose field ``whole`` is not ``last`` (the one
    compared before: the same field shares the same tokens); -1 when none is left. Sorted siblings sharing a
    prefix are contiguous: one out of them ends the walk (one lacking field ``whole`` sorts first of them)."""
    while 0 <= position < len(siblings):
        sibling = siblings[position]
        if len(sibling) <= whole or sibling[:whole] != fields[:whole]:
            return -1
        if sibling[whole] != last:
            return position
        position += step
    return -1


def best_shared_tokens(
    siblings: list[tuple[str, ...]], key: tuple, counter: TokenCounter, prefixes: dict[str, int] | None = None
) -> int:
    """Most leading ids of ``encode_token_key(key)`` shared with any message of the same header (role and name)
    whose ``message_fields`` are in ``siblings`` (sorted, without ``key``'s own), encoding no text whole.

    Sorted field tuples sharing a prefix with ``key``'s are contiguous around its insertion point, so the most
    fields any sibling shares whole (j) is a neighbour's, and the best sibling shares j fields and then the
    most tokens in field j. Those siblings lie around the insertion point in order of how many characters of
    field j they share (m), decreasing away from it. A sibling sharing m characters shares at most key's tokens
    that end within those m (shared tokens decode to equal bytes; this grows with m), and the best shares at
    least the tokens before the last boundary in its m: the nearest is compared exactly, then the others outward
    while their bound could beat the best (``_TextProbe.most``)."""
    fields = message_fields(key)
    at = bisect_left(siblings, fields)
    whole = max(_shared_fields(fields, sibling) for sibling in siblings[max(0, at - 1) : at + 1])
    before = _header_length(key, counter.encoder) + _framing_before(whole)
    if whole:
        before += sum(map(counter.count_text, fields[:whole]))
    if whole == len(fields):  # every sibling sharing all of key's fields has more: its next call's framing differs
        return before - 1
    text, probe, best = fields[whole], _TextProbe(fields[whole], counter, prefixes), -1
    # two walks outward from the insertion point, the sibling sharing more characters compared first (a side's
    # characters shared are found when it is next compared: -1 until then)
    low = _next_field(siblings, fields, whole, at - 1, -1, None)
    high = _next_field(siblings, fields, whole, at, 1, None)
    low_part = high_part = -1
    while low >= 0 or high >= 0:
        if low >= 0 and low_part < 0:
            low_part = _shared_length(siblings[low][whole], text)
        if high >= 0 and high_part < 0:
            high_part = _shared_length(siblings[high][whole], text)
        if low >= 0 and (high < 0 or low_part >= high_part):
            position, part, low_part = low, low_part, -1
            low = _next_field(siblings, fields, whole, low - 1, -1, siblings[low][whole])
        else:
            position, part, high_part = high, high_part, -1
            high = _next_field(siblings, fields, whole, high + 1, 1, siblings[high][whole])
        most = probe.most(part)
        if most is not None and most <= best:
            break  # nor any sibling after it (no more characters shared, no more tokens)
        best = max(best, probe.shared(siblings[position][whole], part))
        if most is None and (low >= 0 or high >= 0):  # the first comparison set the window the bound is read from
            most = probe.most(part)
        if most is not None and most <= best:
            break  # every sibling left shares at most as many characters: none can share more tokens
    # no sibling with field j: the one sharing all its fields with key ends where key's next call opens
    return before + best if best >= 0 else before - 1


def shared_message_tokens(a: tuple, b: tuple, counter: TokenCounter) -> int:
    """How many leading ids the ``encode_token_key`` of two message keys share, without encoding their texts
    whole. Framing ids never equal a text token, so the ids part inside the first part of the keys that
    differs: the header (role and name, short), or a field (``best_shared_tokens``)."""
    if a == b:
        return len(encode_token_key(a, counter.encoder))
    return best_shared_message_tokens({a[:2]: [message_fields(a)]}, b, counter)


def best_shared_message_tokens(
    siblings: dict[tuple, list[tuple[str, ...]]],
    key: tuple,
    counter: TokenCounter,
    prefixes: dict[str, int] | None = None,
) -> int:
    """Most leading ids ``encode_token_key(key)`` shares with any other message key, given as ``message_fields``
    sorted per header (role, name): with those of its own header if any, by ``best_shared_tokens`` (each
    shares the whole header, which no other header does: framing ends it); else the most header ids any
    other header shares."""
    same_header = siblings.get(key[:2])
    if same_header:
        return best_shared_tokens(same_header, key, counter, prefixes)
    ids = _header_ids(key, counter.encoder)
    return max(_shared_ids(_header_ids(header, counter.encoder), ids) for header in siblings)
