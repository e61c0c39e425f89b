"""CPU per model call of the eval loop against episode length, for every non-LLM context policy.

Runs whole episodes through ``run_episode`` (the loop ``erp-sim eval`` runs: agent and policy,
token counting, the visible-context recorder, the simulator) on the shortest, a median and the
longest hotel_50 task with the scripted agent, and a synthetic 200-call episode (an agent that
pages the expense-report list back and forth: every response is a new message). Each model
call's CPU (``cpu ms``: ``time.thread_time`` from one call to the next, in a run of the episode with
nothing but that timestamp) is split, from a second, instrumented run of the same deterministic
episode, into (the instrumented run's own timers and wrappers cost ``timers`` per call, left out):

- ``sim``: the simulator's ``env.step`` (the ERP call and the simulated user);
- ``count``: tokenizing the messages this call shows for the first time (new transcript messages,
  and whatever the policy wrote: summaries, anchors, cut results) and the message it answers,
  timed where the episode tokenizes each the first time (the counter's ``_count_uncached``, or
  ``count_text_before`` where the prompt-cache comparison meets a new text first): in the episode,
  between the simulator's and the agent's work, tokenizing costs 1.2-1.45x a tight loop over the
  same messages (cold CPU caches, not a repeat: ``scripts/bench_harness.py``). A message the
  policy tokenized first is in its ``policy`` column already and not counted again here;
  only what the episode never tokenized on its own is timed in a loop after the episode;
- ``policy``: the context policy's own work (its ``act`` minus the agent it wraps);
- ``floor`` = sim + count + policy, the work the call cannot avoid, and ``ratio`` = CPU / floor;
- ``agent``: the agent's own decision (the scripted agent reads its shown context; an LLM agent's
  share would be the request), and ``h-ratio`` = CPU / (floor + agent): the harness's own share
  (the runner's bookkeeping, the recorder, counting what was counted before);
- ``branch``: of that harness share, the prompt-cache figure's work where a request leaves the trie of
  earlier requests (``PrefixTracker._best_partial``, timed per call: the continuations seen there
  compared with the new message, encoding only around where their texts part);
- ``slope``: the least-squares growth of CPU per call with the call's index (us per earlier
  call), over the calls after the first ten; flat (a few us) means no work grows with history
  beyond what the policy's own output needs.

The token counter's cache is cleared before every episode, so each episode pays for its own
tokenization. Medians over ``--repeats`` runs of each episode. Prints one table; exits 0.

The agent's share is kept out of the floor on purpose: the scripted agent stands in for the model,
but its decision code runs in this process and is ours to make cheap (it reads only the messages
that differ from its last call's and decides from the visible form), so ``ratio`` holds it against
the target and ``h-ratio`` shows the harness alone. Above the floor, besides the agent, remain the
prompt-cache measurement where requests branch (a pruning policy's requests branch at every call)
and a constant per call (the step record, the recorder's lookups, the JSON of the action).

    .venv/bin/python scripts/bench_eval.py                     # every policy, 3 tasks + synthetic
    .venv/bin/python scripts/bench_eval.py --policies full last_n:n=5 --repeats 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest.mock import patch

import gymnasium as gym

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_policies import POLICIES as OTHER_POLICIES

import erp_sim.envs  # noqa: F401  (registers the ids)
from erp_sim.agents.policies import wrap
from erp_sim.agents.runner import run_episode
from erp_sim.agents.scripted import ScriptedAgent
from erp_sim.agents.tokens import TEXT_CACHE_MIN_CHARS, TokenCounter, _message_key, get_counter, message_text
from erp_sim.agents.tokens.prompt_cache import PrefixTracker, _Node
from erp_sim.agents.types import AgentStep

POLICIES = ["full", *(p for p in OTHER_POLICIES if p != "full"), "retrieval:backend=bm25"]
TASKS = {"short": "hotel-000", "median": "hotel-024", "longest": "hotel-049"}  # 4, 13 and 22 receipt items
SYNTHETIC_CALLS = 200
EVAL_MAX_STEPS = 200  # erp-sim eval's --max-steps default
SKIP_FIRST = 10  # the slope is fitted after the opening calls (menu search, first form)


class CallStarts:
    """Wraps an agent with one timestamp per call and nothing else: the uninstrumented run's CPU per call."""

    def __init__(self, agent):
        self.agent, self.starts = agent, []
        self.spec = getattr(agent, "spec", "full")

    @property
    def unwrapped(self):
        return getattr(self.agent, "unwrapped", self.agent)

    def reset(self) -> None:
        self.agent.reset()

    def act(self, transcript, tools) -> AgentStep:
        self.starts.append(time.thread_time())
        return self.agent.act(transcript, tools)


class Timed(CallStarts):
    """Also how long each call took, and its step."""

    def __init__(self, agent):
        super().__init__(agent)
        self.durations, self.steps = [], []

    def act(self, transcript, tools) -> AgentStep:
        start = time.thread_time()
        self.starts.append(start)
        step = self.agent.act(transcript, tools)
        self.durations.append(time.thread_time() - start)
        self.steps.append(step)
        return step


class TimedEnv(gym.Wrapper):
    """Sums the CPU of ``env.step`` per model call (a call's tool calls may step several times)."""

    def __init__(self, env, timed_agent: CallStarts):
        super().__init__(env)
        self.timed_agent = timed_agent
        self.per_call: dict[int, float] = {}

    def step(self, action):
        start = time.thread_time()
        result = self.env.step(action)
        call = len(self.timed_agent.starts) - 1
        self.per_call[call] = self.per_call.get(call, 0.0) + time.thread_time() - start
        return result


class PagingAgent:
    """The synthetic long episode: open the report list, then page it forth and back forever."""

    spec = "full"

    def reset(self) -> None: ...

    def act(self, transcript, tools) -> AgentStep:
        calls = (len(transcript) - 2) // 2  # system, instruction, then one call and one result per step
        if calls == 0:
            name, arguments = "form_open_menu_item", {"name": "TrvExpenses", "type": "Display"}
        else:
            page = "LoadNextPage" if calls % 2 else "LoadPreviousPage"
            name, arguments = "form_click_control", {"controlName": "ExpenseReportsGrid", "actionId": page}
        call_id = "call_" + hashlib.sha1(f"{calls}".encode()).hexdigest()[:12]
        message = {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
            ],
        }
        return AgentStep(message=message, shown=list(transcript))


@contextmanager
def timed_branch_points(timed_agent: Timed) -> Iterator[dict[int, float]]:
    """Time ``PrefixTracker._best_partial`` per model call (the prompt-cache figure's work where a request
    leaves the trie) while the block runs; the class's own method is put back after it."""
    per_call: dict[int, float] = {}
    best_partial = PrefixTracker._best_partial

    def timed(tracker: PrefixTracker, node: _Node, key: tuple) -> int:
        start = time.thread_time()
        shared = best_partial(tracker, node, key)
        call = len(timed_agent.starts) - 1
        per_call[call] = per_call.get(call, 0.0) + time.thread_time() - start
        return shared

    with patch.object(PrefixTracker, "_best_partial", timed):  # every tracker of the episode uses it
        yield per_call


def episode_settings(task: str) -> tuple[str, int, int]:
    """A bench episode's task id, env step limit and model-call limit (``synthetic`` pages hotel-010's list)."""
    if task == "synthetic":
        return "hotel-010", 2 * SYNTHETIC_CALLS, SYNTHETIC_CALLS
    return task, EVAL_MAX_STEPS, 400


def time_first_counts(counter: TokenCounter, timed_agent: Timed, inner: Timed) -> list[tuple[dict, float, bool]]:
    """Time the counter's first tokenization of each message (``_count_uncached``) where the episode does it:
    (message, CPU, inside the policy's act); undone by ``del``."""
    first_counts: list[tuple[dict, float, bool]] = []
    count_uncached = counter._count_uncached

    def timed(message):
        start = time.thread_time()
        count = count_uncached(message)
        cpu = time.thread_time() - start  # before the bench's own bookkeeping below
        in_policy = len(timed_agent.starts) > len(timed_agent.durations) and not inner_running(inner)
        first_counts.append((message, cpu, in_policy))  # keyed after the episode: the bench's work stays small
        return count

    counter._count_uncached = timed  # type: ignore[method-assign]  # timed for one episode, deleted after it
    return first_counts


def time_first_text_counts(counter: TokenCounter) -> dict[str, float]:
    """Time ``count_text_before`` where it tokenizes a long text the first time (the prompt-cache comparison
    meets a new message's text before the counter does; the counter then finds its count): text -> CPU."""
    first_texts: dict[str, float] = {}
    count_text_before = counter.count_text_before

    def timed(text: str, cut: int) -> int:
        new = len(text) >= TEXT_CACHE_MIN_CHARS and counter._text_cache.get(text) is None
        start = time.thread_time()
        before = count_text_before(text, cut)
        if new:
            first_texts.setdefault(text, time.thread_time() - start)
        return before

    counter.count_text_before = timed  # type: ignore[method-assign]  # timed for one episode, deleted after it
    return first_texts


def inner_running(inner: Timed) -> bool:
    """The wrapped agent is deciding now (its call started and has not returned)."""
    return len(inner.starts) > len(inner.durations)


def new_agent(task: str):
    return PagingAgent() if task == "synthetic" else ScriptedAgent()


def bare_run(policy: str, task: str) -> list[float]:
    """The same episode without the columns' timers and wrappers: CPU from one model call to the next."""
    agent = CallStarts(wrap(new_agent(task), policy))
    task_id, steps, calls_limit = episode_settings(task)
    env = gym.make("erp_sim/ExpenseItemization-v0", max_episode_steps=steps)
    get_counter().cache_clear()
    run_episode(env, agent, task_id=task_id, seed=0, policy=policy, max_model_calls=calls_limit)
    env.close()
    return [later - earlier for earlier, later in zip(agent.starts, agent.starts[1:])]


def run(policy: str, task: str) -> dict:
    """One episode, timed per call: the columns from an instrumented run, the CPU per call from a bare one."""
    inner = new_agent(task)
    inner_timed = Timed(inner)
    outer = Timed(wrap(inner_timed, policy))
    task_id, steps, calls_limit = episode_settings(task)
    env = TimedEnv(gym.make("erp_sim/ExpenseItemization-v0", max_episode_steps=steps), outer)
    counter = get_counter()
    counter.cache_clear()
    first_counts = time_first_counts(counter, outer, inner_timed)
    first_texts = time_first_text_counts(counter)
    try:
        with timed_branch_points(outer) as branch_cpu:
            trajectory = run_episode(env, outer, task_id=task_id, seed=0, policy=policy, max_model_calls=calls_limit)
    finally:
        del counter._count_uncached, counter.count_text_before
    env.close()
    calls = len(outer.starts)
    first: dict[tuple, tuple[float, bool]] = {}
    for message, cpu, in_policy in first_counts:
        key = _message_key(message)
        first.setdefault(key, (cpu, in_policy))
    cold = TokenCounter()
    count_cpu: list[float] = []
    shown_before: set[int] = set()
    charged: set[tuple] = set()
    for step in outer.steps:  # tokenizing what call k shows for the first time and what it answers
        new = [m for m in step.shown if id(m) not in shown_before]
        shown_before.update(map(id, step.shown))
        in_episode, elsewhere = 0.0, []
        for message in [*new, step.message]:
            key = _message_key(message)
            if key in charged:  # an equal message was tokenized before: its count is known
                continue
            charged.add(key)
            timed = first.get(key)
            if timed is None:  # never tokenized on its own in the episode: timed in a loop
                elsewhere.append(message)
            elif not timed[1]:  # the policy's first count is in its own column already
                in_episode += timed[0] + first_texts.pop(message_text(message.get("content")), 0.0)
        start = time.thread_time()
        for message in elsewhere:
            cold.count_message(message)
        count_cpu.append(in_episode + time.thread_time() - start)
    instrumented = [outer.starts[k + 1] - outer.starts[k] for k in range(calls - 1)]
    total = bare_run(policy, task)
    assert len(total) == calls - 1, "the bare run made other calls"  # the episode is deterministic
    policy_cpu = [outer.durations[k] - inner_timed.durations[k] for k in range(calls - 1)]
    floor = [env.per_call.get(k, 0.0) + count_cpu[k] + policy_cpu[k] for k in range(calls - 1)]
    return {
        "calls": calls,
        "total": total,
        "timers": [i - t for i, t in zip(instrumented, total)],
        "floor": floor,
        "sim": [env.per_call.get(k, 0.0) for k in range(calls - 1)],
        "count": count_cpu[:-1],
        "policy": policy_cpu,
        "agent": inner_timed.durations[:-1],
        "branch": [branch_cpu.get(k, 0.0) for k in range(calls - 1)],
        "termination": trajectory.termination,
    }


def slope(values: list[float]) -> float:
    """Least-squares growth per call (same unit as values), after the opening calls."""
    points = list(enumerate(values))[SKIP_FIRST:]
    if len(points) < 3:
        return float("nan")
    return statistics.linear_regression([x for x, _ in points], [y for _, y in points]).slope


def measure(policy: str, task: str, repeats: int) -> dict:
    runs = [run(policy, task) for _ in range(repeats)]
    per_call = {
        key: [statistics.median(r[key][k] for r in runs) for k in range(len(runs[0][key]))]
        for key in ("total", "timers", "floor", "sim", "count", "policy", "agent", "branch")
    }
    harness = [t - f - a for t, f, a in zip(per_call["total"], per_call["floor"], per_call["agent"])]
    med = {key: statistics.median(values) if values else float("nan") for key, values in per_call.items()}
    return {
        "calls": runs[0]["calls"],
        "termination": runs[0]["termination"],
        **{f"{k}_ms": v * 1e3 for k, v in med.items()},
        "ratio": med["total"] / med["floor"] if med["floor"] else float("nan"),
        "harness_ratio": med["total"] / (med["floor"] + med["agent"]),
        "harness_ms": statistics.median(harness) * 1e3 if harness else float("nan"),
        "slope_us": slope(per_call["total"]) * 1e6,
        "floor_slope_us": slope(per_call["floor"]) * 1e6,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", nargs="*", default=POLICIES)
    parser.add_argument("--tasks", nargs="*", default=[*TASKS, "synthetic"], help="short, median, longest, synthetic")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    run("full", TASKS["short"])  # warm up: imports, the first session
    print(
        f"CPU per model call (thread time, medians over calls and {args.repeats} repeats); floor = sim + count + policy"
    )
    print(
        f"{'policy':<44}{'task':>9}{'calls':>6}{'cpu ms':>8}{'sim':>7}{'count':>7}{'policy':>8}{'floor':>7}"
        f"{'agent':>7}{'branch':>7}{'timers':>7}{'ratio':>7}{'h-ratio':>8}{'slope us/call':>15}{'floor slope':>12}"
    )
    ratios, harness_ratios = [], []
    for policy in args.policies:
        for name in args.tasks:
            row = measure(policy, TASKS.get(name, name), args.repeats)
            ratios.append(row["ratio"])
            harness_ratios.append(row["harness_ratio"])
            print(
                f"{policy[:43]:<44}{name:>9}{row['calls']:>6}{row['total_ms']:>8.2f}{row['sim_ms']:>7.2f}{row['count_ms']:>7.2f}"
                f"{row['policy_ms']:>8.2f}{row['floor_ms']:>7.2f}{row['agent_ms']:>7.2f}{row['branch_ms']:>7.2f}{row['timers_ms']:>7.2f}{row['ratio']:>7.2f}"
                f"{row['harness_ratio']:>8.2f}{row['slope_us']:>15.2f}{row['floor_slope_us']:>12.2f}",
                flush=True,
            )
    print(
        f"\nratio CPU / floor: median {statistics.median(ratios):.2f}, worst {max(ratios):.2f} (target <= 1.3); "
        f"CPU / (floor + agent): median {statistics.median(harness_ratios):.2f}, worst {max(harness_ratios):.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
