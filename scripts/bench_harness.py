"""The harness's own CPU per model call, piece by piece, without the simulator's noise around it.

``scripts/bench_eval.py`` measures whole episodes, where the harness's share (CPU - floor - agent) is
a difference of noisy figures of ~0.5 ms calls. This bench runs each episode once, keeps every model
call's step (what the model was shown, its answer) and the transcript's length at that call, then
replays only the harness's work on them, many times, with a fresh token counter each time:

- ``observe``: the prompt-cache tracker (``PrefixTracker.observe``), which counts the shown messages;
- ``record``: the visible-context recorder (``ContextRecorder.record``);
- ``step``: the answer's count and the ``StepRecord``;
- ``dispatch``: the action's JSON and the tool-result message of each call;
- ``count``: the bench's floor for tokenizing, a cold counter counting what each call shows for the
  first time in one tight loop; ``count flushed``: the same with 16 MB of memory written between
  calls, as the simulator and the agent do in an episode (tokenizing cold costs more: this is why
  the episode's counting comes out above the tight loop's, not counting twice);
- ``own`` = observe + record + step + dispatch - count: the harness's own constant.

The replay is checked against the episode: the recorder's context and every call's token figures
come out the same. Medians over ``--repeats`` replays; CPU is ``time.thread_time``.

    .venv/bin/python scripts/bench_harness.py --policies full last_n:n=5 --tasks median synthetic
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_eval import TASKS, PagingAgent, episode_settings

import erp_sim.envs  # noqa: F401  (registers the ids)
from erp_sim.agents.policies import wrap
from erp_sim.agents.runner import _tool_result, run_episode
from erp_sim.agents.scripted import ScriptedAgent
from erp_sim.agents.tokens import TokenCounter, get_counter
from erp_sim.agents.tokens.prompt_cache import EpisodeMeter
from erp_sim.agents.trajectory import ContextRecorder, StepRecord, Trajectory
from erp_sim.agents.types import AgentStep

PIECES = ("observe", "record", "step", "dispatch")
FLUSH_BYTES = 16 << 20  # more than the last-level cache of the machines this ran on
CACHE_LINE = 64


class Keeping:
    """Wraps the policy stack: keeps each call's step and the transcript's length at that call."""

    def __init__(self, agent):
        self.agent, self.steps, self.lengths = agent, [], []
        self.spec = getattr(agent, "spec", "full")

    def reset(self) -> None:
        self.agent.reset()

    def act(self, transcript, tools) -> AgentStep:
        self.lengths.append(len(transcript))
        step = self.agent.act(transcript, tools)
        self.steps.append(step)
        return step


@dataclass
class Episode:
    trajectory: Trajectory
    steps: list[AgentStep]
    lengths: list[int]


def capture(policy: str, task: str) -> Episode:
    """One episode of ``policy`` on ``task`` (a task id or ``synthetic``), its calls kept."""
    keeping = Keeping(wrap(PagingAgent() if task == "synthetic" else ScriptedAgent(), policy))
    task_id, steps, calls_limit = episode_settings(task)
    env = gym.make("erp_sim/ExpenseItemization-v0", max_episode_steps=steps)
    get_counter().cache_clear()
    trajectory = run_episode(env, keeping, task_id=task_id, seed=0, policy=policy, max_model_calls=calls_limit)
    env.close()
    return Episode(trajectory, keeping.steps, keeping.lengths)


def replay(episode: Episode) -> tuple[dict[str, float], ContextRecorder, list[StepRecord]]:
    """The harness's work on the episode's calls, timed per piece (seconds, summed over calls)."""
    counter = TokenCounter()
    tracker, recorder = EpisodeMeter(counter).tracker("agent"), ContextRecorder(counter)
    messages, tools = episode.trajectory.messages, episode.trajectory.tools
    tool_tokens = counter.count_tools(tools)
    transcript = messages[: episode.lengths[0]]
    cpu: dict[str, float] = dict.fromkeys(PIECES, 0.0)
    records = []
    clock = time.thread_time
    for index, (step, length) in enumerate(zip(episode.steps, episode.lengths)):
        transcript += messages[len(transcript) : length]
        started = clock()
        cacheable = tracker.observe(step.shown, tools)
        observed = clock()
        recorder.record(step.shown, transcript)
        recorded = clock()
        calls = step.message.get("tool_calls") or []
        record = StepRecord(
            index=index,
            shown_messages=len(step.shown),
            input_tokens=tracker.message_tokens + tool_tokens,
            output_tokens=tracker.count(step.message),
            cacheable_prefix_tokens=cacheable,
            tool_calls=len(calls),
        )
        stepped = clock()
        for call in calls:
            json.dumps({"name": call["function"]["name"], "arguments": call["function"].get("arguments") or "{}"})
            _tool_result(call, "")
        dispatched = clock()
        records.append(record)
        cpu["observe"] += observed - started
        cpu["record"] += recorded - observed
        cpu["step"] += stepped - recorded
        cpu["dispatch"] += dispatched - stepped
    return cpu, recorder, records


def cold_count(episode: Episode, flush: bytearray | None = None) -> float:
    """``bench_eval``'s count: each call's first-shown messages and its answer, with a cold counter."""
    counter, seen, total = TokenCounter(), set[int](), 0.0
    for step in episode.steps:
        new = [m for m in step.shown if id(m) not in seen]
        seen.update(map(id, step.shown))
        if flush is not None:  # what the simulator and the agent do to the caches between two calls
            flush[::CACHE_LINE] = bytes(len(flush) // CACHE_LINE)
        started = time.thread_time()
        counter.count_messages(new)
        counter.count_message(step.message)
        total += time.thread_time() - started
    return total


def measure(policy: str, task: str, repeats: int) -> dict[str, float]:
    """Per call, in ms: each piece, the tight and the flushed count, and the harness's own share."""
    episode = capture(policy, task)
    _, recorder, records = replay(episode)
    _check(episode, recorder, records)
    flush = bytearray(FLUSH_BYTES)
    runs: dict[str, list[float]] = defaultdict(list)
    for _ in range(repeats):
        cpu, _, _ = replay(episode)
        for name, seconds in cpu.items():
            runs[name].append(seconds)
        runs["count"].append(cold_count(episode))
        runs["count flushed"].append(cold_count(episode, flush))
        runs["own"].append(sum(cpu.values()) - runs["count"][-1])
    calls = len(episode.steps)
    return {"calls": calls, **{name: statistics.median(v) / calls * 1e3 for name, v in runs.items()}}


def _check(episode: Episode, recorder: ContextRecorder, records: list[StepRecord]) -> None:
    """The replay did the episode's work: the same visible context and token figures at every call."""
    trajectory = episode.trajectory
    if recorder.context != trajectory.context:
        raise AssertionError("the replayed visible context differs from the episode's")
    fields = ("input_tokens", "output_tokens", "cacheable_prefix_tokens", "shown_messages", "tool_calls")
    for replayed, recorded in zip(records, trajectory.steps, strict=True):
        if any(getattr(replayed, name) != getattr(recorded, name) for name in fields):
            raise AssertionError(f"call {recorded.index}: the replayed token figures differ from the episode's")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", nargs="*", default=["full", "last_n:n=5", "working_memory_anchor"])
    parser.add_argument("--tasks", nargs="*", default=["median", "synthetic"], help="short, median, longest, synthetic")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    columns = (*PIECES, "count", "count flushed", "own")
    print(f"harness CPU per model call, ms (thread time, medians over {args.repeats} replays); own = pieces - count")
    print(f"{'policy':<32}{'task':>10}{'calls':>6}" + "".join(f"{name:>14}" for name in columns))
    for policy in args.policies:
        for name in args.tasks:
            row = measure(policy, TASKS.get(name, name), args.repeats)
            print(
                f"{policy[:31]:<32}{name:>10}{row['calls']:>6}" + "".join(f"{row[c]:>14.4f}" for c in columns),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
