"""Each policy's ``kept_prefix`` (how many leading messages of its context are, unchanged, those of its last one):
the agent, the recorder and the prompt-cache figure skip them without comparing, so a claim must hold, message
for message by identity, on a scripted episode and on random transcripts (each grown by appending, and a rewrite
of an older message that the input no longer vouches for); and it must claim what holds where the last_n_summary
context only grew, or nothing is skipped."""

from __future__ import annotations

import random

import gymnasium as gym
import pytest
from policy_support import INSTRUCTION, SYSTEM, LabelSummarizer, RecordingAgent, step, user

import erp_sim.envs  # noqa: F401  (registers the ids)
from erp_sim.agents.policies import wrap
from erp_sim.agents.runner import run_episode
from erp_sim.agents.scripted import ScriptedAgent
from erp_sim.agents.types import AgentStep, Continuation, Transcript

SPECS = [
    "full",
    "last_n_summary:n=5,w=3",
    "last_n_summary:n=2,w=1",
    "last_n_summary:n=3,w=-1",
    "last_n_summary:n=0,w=2",
]


def identical_prefix(request: list, last: list) -> int:
    return next((i for i, (a, b) in enumerate(zip(request, last)) if a is not b), min(len(request), len(last)))


def check(requests: list[tuple[list, int, list]]) -> tuple[int, int]:
    """(messages claimed kept, messages identical in fact) over the requests; fails on a claim that does not hold.
    Each entry: (the request, its claim, copies of the last request's messages as they were sent)."""
    claimed = identical = 0
    for index, (request, kept, sent) in enumerate(requests[1:], start=1):
        last = requests[index - 1][0]
        assert identical_prefix(request[:kept], last) == kept, f"request {index}: claims {kept} kept"
        assert request[:kept] == sent[:kept], f"request {index}: a kept message changed since it was sent"
        claimed, identical = claimed + kept, identical + identical_prefix(request, last)
    return claimed, identical


class Kept(ScriptedAgent):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[tuple[list, int, list]] = []

    def act(self, transcript, tools) -> AgentStep:
        assert isinstance(transcript, Continuation)
        self.requests.append((list(transcript), transcript.kept, [dict(m) for m in transcript]))
        return super().act(transcript, tools)


@pytest.mark.parametrize("spec", SPECS)
def test_what_a_policy_claims_kept_holds_over_an_episode(spec):
    agent = Kept()
    env = gym.make("erp_sim/ExpenseItemization-v0", task_set="hotel_50", max_episode_steps=60)
    try:
        run_episode(env, wrap(agent, spec), task_id="hotel-006", seed=0)
    finally:
        env.close()
    claimed, identical = check(agent.requests)
    assert claimed >= 0.6 * identical  # between folds nearly the whole context is claimed, not just its head


class Recording(RecordingAgent):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[tuple[list, int, list]] = []

    def act(self, transcript, tools) -> AgentStep:
        self.requests.append((list(transcript), transcript.kept, [dict(m) for m in transcript]))
        return super().act(transcript, tools)


class SameSummary(LabelSummarizer):
    """The same text after every fold: the block stays the very object while the shown units move."""

    def summarize_history(self, task, messages, previous=None):
        result = super().summarize_history(task, messages, previous)
        return result.model_copy(update={"text": "the same summary"})


@pytest.mark.parametrize("summarizer", [LabelSummarizer, SameSummary])
@pytest.mark.parametrize("spec", SPECS[1:])
def test_what_last_n_summary_claims_kept_holds_on_random_transcripts(spec, summarizer):
    rng = random.Random(5)
    for trial in range(60):
        inner = Recording()
        policy = wrap(inner, spec, summarizer=summarizer())
        transcript = Transcript([SYSTEM, INSTRUCTION])
        plain = trial % 3 == 0  # a plain list vouches for nothing: only what the policy itself made may be claimed
        for index in range(rng.randint(1, 25)):
            transcript.extend(step(f"c{index}", f"result {index}") if rng.random() < 0.8 else [user(f"u{index}")])
            shown = transcript
            if plain or rng.random() < 0.1:  # an older message rewritten (a new object): nothing vouched
                shown = list(transcript)
                at = rng.randrange(len(shown))  # the head too
                if shown[at].get("role") != "tool":
                    shown[at] = {**shown[at]}
            policy.act(shown, [])
        check(inner.requests)
