"""scripts/bench_harness.py replays the harness's work on kept model calls: the replay must be the
episode's own work (same visible context, same token figures), or its CPU figures mean nothing."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


@pytest.fixture(scope="module")
def bench():
    saved = list(sys.path)
    sys.path.insert(0, str(SCRIPTS))
    try:
        yield importlib.import_module("bench_harness")
    finally:
        sys.path[:] = saved  # the script puts its folder on the path too (for bench_eval)


@pytest.mark.parametrize("policy", ["full", "last_n:n=5", "head_tail:chars=300", "working_memory_anchor"])
def test_the_replay_rebuilds_the_episodes_context_and_token_figures(bench, policy):
    episode = bench.capture(policy, "hotel-000")
    cpu, recorder, records = bench.replay(episode)
    bench._check(episode, recorder, records)  # raises on any difference
    assert len(records) == len(episode.trajectory.steps) > 5 and set(cpu) == set(bench.PIECES)
    assert recorder.context.steps == episode.trajectory.context.steps


def test_a_replay_that_differs_from_the_episode_is_refused(bench):
    episode = bench.capture("full", "hotel-000")
    _, recorder, records = bench.replay(episode)
    records[3] = records[3].model_copy(update={"input_tokens": records[3].input_tokens + 1})
    with pytest.raises(AssertionError, match="call 3"):
        bench._check(episode, recorder, records)
    recorder.context.tokens[0] += 1
    with pytest.raises(AssertionError, match="visible context"):
        bench._check(episode, recorder, records)
