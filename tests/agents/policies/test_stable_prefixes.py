"""Each policy's claim of the prefix its next request keeps: checked against the next request it sends.

A scripted episode runs under each policy; the agent inside records what each request claims
(``stable_prefix.stable_prefixes``). A claim is honest when the next request starts with that prefix,
message for message. Policies that know their next request (full history, a window not yet full, a
summary between folds, an anchor rewritten every step) must never claim more than that; those that
predict it from the largest unit so far (ACON's history threshold, the eviction budget, the clearing
trigger) must be right on nearly every step.
"""

from __future__ import annotations

from itertools import pairwise

import gymnasium as gym
import pytest

import erp_sim.envs  # noqa: F401  (registers the ids)
from erp_sim.agents.models.stable_prefix import stable_prefixes
from erp_sim.agents.policies import wrap
from erp_sim.agents.runner import run_episode
from erp_sim.agents.scripted import ScriptedAgent
from erp_sim.agents.types import AgentStep

TASK = "hotel-006"
EXACT = [
    "full",
    "last_n:n=5",
    "last_n_summary:n=5,w=3",
    "last_n_summary:n=2,w=1",
    "fifo:k=4",
    "acon_observation:t=300",
    "head_tail",
    "working_memory_anchor",
    "working_memory_anchor:at=end",
    "retrieval:backend=bm25,keep=3",
    "ga_memory",
    "head_tail+last_n:n=3",
]
PREDICTED = ["acon_history:t=1500", "budget_eviction:budget=6000", "clear_tool_uses:trigger=6000,keep=2"]


class Claiming(ScriptedAgent):
    """The scripted agent, keeping each request and what it claimed."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[tuple[list, tuple[int, ...]]] = []

    def act(self, transcript, tools) -> AgentStep:
        self.requests.append((list(transcript), stable_prefixes(transcript) or ()))
        return super().act(transcript, tools)


def claims(spec: str) -> tuple[int, int, list[tuple[int, ...]]]:
    """(honest claims, claims, each request's claim) over the episode."""
    requests = _requests(spec)
    honest = total = 0
    for (request, claim), (following, _) in pairwise(requests):
        for length in claim:
            total += 1
            honest += following[:length] == request[:length]
    return honest, total, [claim for _, claim in requests]


@pytest.mark.parametrize("spec", EXACT)
def test_a_policy_that_knows_its_next_request_claims_no_more(spec):
    honest, total, each = claims(spec)
    assert total and honest == total, f"{spec}: {total - honest} of {total} claims broken"
    assert all(each), f"{spec}: a request without any claim"


@pytest.mark.parametrize("spec", PREDICTED)
def test_a_predicting_policy_is_right_on_nearly_every_step(spec):
    honest, total, _ = claims(spec)
    assert total and honest >= 0.9 * total, f"{spec}: {total - honest} of {total} claims broken"


def test_what_each_preset_claims():
    """C2 claims every request whole; C3 only its head once its window is full; C4 its whole context between
    folds, and its head before one."""
    assert all(claim[-1] == length for length, claim in _sizes("full"))
    late = _sizes("last_n:n=5")[10:]
    assert late and all(claim == (2,) for _, claim in late)  # system prompt and instruction
    c4 = _sizes("last_n_summary:n=5,w=3")
    assert any(claim[-1] == length for length, claim in c4[10:])  # between folds: everything
    assert any(claim == (2,) for _, claim in c4[10:])  # a fold next: the head only


def _requests(spec: str) -> list[tuple[list, tuple[int, ...]]]:
    agent = Claiming()
    env = gym.make("erp_sim/ExpenseItemization-v0", task_set="hotel_50", max_episode_steps=60)
    try:
        run_episode(env, wrap(agent, spec), task_id=TASK, seed=0)
    finally:
        env.close()
    return agent.requests


def _sizes(spec: str) -> list[tuple[int, tuple[int, ...]]]:
    return [(len(request), claim) for request, claim in _requests(spec)]
