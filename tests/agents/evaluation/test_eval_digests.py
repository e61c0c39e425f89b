"""Speed work must change no result: fixed (policy, task) episodes against digests stored before it.

Every non-LLM context policy (the presets C1-C4 and the other deterministic policies) runs the
scripted agent on the shortest, a median and the longest hotel_50 task, and the recall variant
runs on two presets; each episode's trajectory (as ``erp-sim eval`` writes it) and results row are
compared with digests in ``eval_digests.json``, which were written from the code before the
speed-ups. Timing fields are left out (wall clock). The only allowed difference is a field added
on purpose, named below (``ADDED_FIELDS``, ``ADDED_PATHS``, ``ADDED_PREFIXES``): it is dropped
before hashing; any other new field fails the test by name, a missing or changed one by its digest.

Regenerate the digests only for a change that is meant to change results:
``.venv/bin/python tests/agents/evaluation/test_eval_digests.py --write``.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

DIGESTS = Path(__file__).with_name("eval_digests.json")
TASKS = ["hotel-000", "hotel-024", "hotel-049"]  # 4, 13 and 22 receipt items: shortest, median, longest
CONFIGS = [  # (config, policy, user, agent)
    ("C1", "full", "none", "scripted"),
    ("C2", "full", "rule", "scripted"),
    ("C3", "last_n:n=5", "rule", "scripted"),
    ("C4", "last_n_summary:n=5,w=3", "rule", "scripted"),
    ("fifo", "fifo:k=5", "rule", "scripted"),
    ("acon_history", "acon_history:t=4096,k=1", "rule", "scripted"),
    ("acon_observation", "acon_observation:t=1024", "rule", "scripted"),
    ("head_tail", "head_tail:chars=800", "rule", "scripted"),
    ("budget_eviction", "budget_eviction:budget=30000", "rule", "scripted"),
    ("anchor", "working_memory_anchor", "rule", "scripted"),
    ("clearing", "clear_tool_uses:trigger=30000,keep=3", "rule", "scripted"),
    ("stack", "working_memory_anchor+head_tail+budget_eviction", "rule", "scripted"),
    ("retrieval", "retrieval:backend=bm25", "rule", "scripted"),
    ("C2-recall", "full", "rule", "scripted:recall=2e5"),
    ("C3-recall", "last_n:n=5", "rule", "scripted:recall=2e6"),
]
TIMING = {"timing"}  # wall clock: never deterministic
# Fields added on purpose (a merge may bring them in); nothing else may differ. A name in
# ADDED_FIELDS matches at any depth of a row or trajectory (the prompt-cache change's counts);
# a path in ADDED_PATHS matches exactly: ``context.tokens`` (each shown message's o200k count,
# stored by the speed work so the run page need not tokenize again) and every new key under a
# row's ``sampling`` (the sampling settings of an LLM agent or user).
ADDED_FIELDS = {"cacheable_prefix_tokens", "provider_cached_tokens", "role_calls"}
# the cost change (issues 20 and 25): per episode, each role's cacheable prefix, the provider's cached
# tokens and the service's own counts, named apart from our o200k counts (the steps had the service's
# counts already; user_input_tokens/user_output_tokens existed and must keep their values offline)
ADDED_PATHS = (
    "context.tokens",
    "metrics.reported_input_tokens",
    "metrics.reported_output_tokens",
    *(
        f"metrics.{role}_{field}"
        for role, fields in (
            (
                "summarizer",
                (
                    "input_tokens",
                    "output_tokens",
                    "reported_input_tokens",
                    "reported_output_tokens",
                    "cacheable_prefix_tokens",
                    "provider_cached_tokens",
                ),
            ),
            (
                "user",
                (
                    "reported_input_tokens",
                    "reported_output_tokens",
                    "cacheable_prefix_tokens",
                    "provider_cached_tokens",
                ),
            ),
        )
        for field in fields
    ),
)
ADDED_PREFIXES = ("sampling.",)


def _run(config: str, policy: str, user: str, agent: str, task_id: str, out_dir: Path) -> tuple[dict, dict]:
    from erp_sim.agents.evaluation.evaluate import EpisodeSpec, run_spec

    spec = EpisodeSpec(
        config=config,
        policy=policy,
        user=user,
        agent=agent,
        task_set="hotel_50",
        task_id=task_id,
        run=0,
        seed=0,
        out_dir=str(out_dir),
    )
    row = run_spec(spec)
    with gzip.open(out_dir / row["trajectory"], "rt", encoding="utf-8") as stream:
        trajectory = json.load(stream)
    return _without(row, TIMING), _without(trajectory, TIMING)


def _without(value: dict, keys: set[str]) -> dict:
    return {k: v for k, v in value.items() if k not in keys}


def fields(value: Any, prefix: str = "") -> set[str]:
    """Dotted paths of every dict key (list items share their list's path, as ``name[]``)."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{prefix}{key}"
            found.add(path)
            found |= fields(item, path + ".")
    elif isinstance(value, list):
        for item in value:
            found |= fields(item, prefix.rstrip(".") + "[].")
    return found


def _allowed(path: str) -> bool:
    leaf = path.rsplit(".", 1)[-1].removesuffix("[]")
    return leaf in ADDED_FIELDS or path in ADDED_PATHS or path.startswith(ADDED_PREFIXES)


def _drop(value: Any, paths: set[str], prefix: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _drop(v, paths, f"{prefix}{k}.") for k, v in value.items() if f"{prefix}{k}" not in paths}
    if isinstance(value, list):
        return [_drop(item, paths, prefix.rstrip(".") + "[].") for item in value]
    return value


def digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _cases() -> list[tuple[str, str, str, str, str]]:
    return [(*config, task_id) for config in CONFIGS for task_id in TASKS]


def _name(case: tuple) -> str:
    return f"{case[0]}/{case[4]}"


def compare(stored: dict, kind: str, value: dict) -> str | None:
    """None when ``value`` has no field the recorded episodes lacked but the allowed ones, else which.

    (The stored field list is the union over all recorded episodes; a missing field changes the digest.)
    """
    unexpected = sorted(path for path in fields(value) - set(stored["fields"][kind]) if not _allowed(path))
    if unexpected:
        return (
            f"{kind}: fields added {unexpected} (allowed to add: {sorted(ADDED_FIELDS)} anywhere, "
            f"{', '.join(ADDED_PATHS)}, {', '.join(ADDED_PREFIXES)}*)"
        )
    return None


@pytest.fixture(scope="module")
def stored() -> dict:
    return json.loads(DIGESTS.read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", _cases(), ids=_name)
def test_results_unchanged(case, stored, tmp_path):
    row, trajectory = _run(*case, tmp_path)
    expected = stored["episodes"][_name(case)]
    for kind, value in (("row", row), ("trajectory", trajectory)):
        problem = compare(stored, kind, value)
        assert problem is None, f"{_name(case)}: {problem}"
        added = fields(value) - set(stored["fields"][kind])
        assert digest(_drop(value, added)) == expected[kind], (
            f"{_name(case)}: the {kind} differs from the one recorded before the speed work"
        )


def test_allowed_fields_are_named_and_nothing_else_passes():
    """The check names the fields it lets through; a field outside the list is reported, not ignored."""
    row = {"metrics": {"input_tokens": 1}, "sampling": {"agent": None}}
    stored = {"fields": {"row": sorted(fields(row))}}
    assert compare(stored, "row", {**row, "metrics": {"input_tokens": 1, "cacheable_prefix_tokens": 0}}) is None
    assert compare(stored, "row", {**row, "sampling": {"agent": None, "temperature": 0}}) is None
    problem = compare(stored, "row", {**row, "metrics": {"input_tokens": 1, "surprise": 2}})
    assert problem is not None and "metrics.surprise" in problem
    assert (
        compare(stored, "row", {**row, "metrics": {"input_tokens": 1, "tokens": 2}}) is not None
    )  # only context.tokens
    value = {**row, "metrics": {"input_tokens": 1, "cacheable_prefix_tokens": 5}}
    assert digest(_drop(value, fields(value) - set(stored["fields"]["row"]))) == digest(row)


def write(path: Path = DIGESTS) -> None:
    import tempfile

    episodes, row_fields, trajectory_fields = {}, set(), set()
    with tempfile.TemporaryDirectory() as tmp:
        for case in _cases():
            row, trajectory = _run(*case, Path(tmp))
            episodes[_name(case)] = {"row": digest(row), "trajectory": digest(trajectory)}
            row_fields |= fields(row)
            trajectory_fields |= fields(trajectory)
            print(_name(case), row["termination"], row["metrics"]["model_calls"], file=sys.stderr)
    payload = {"fields": {"row": sorted(row_fields), "trajectory": sorted(trajectory_fields)}, "episodes": episodes}
    path.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(
            "usage: python tests/agents/evaluation/test_eval_digests.py --write   (only for a change meant to change results)"
        )
    write()
