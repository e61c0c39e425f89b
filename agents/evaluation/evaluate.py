"""``erp-sim eval``: policies x tasks x runs, one JSON line per episode, resumable, then a report.

With no arguments it runs the embedded default: presets C1-C4 with the scripted agent on
hotel_50, 5 runs each (the study's design; the scripted agent is deterministic, so its runs
agree and its numbers are not LLM results). Each finished episode is appended to
``OUT/results.jsonl`` at once, so a killed run loses at most the episodes in flight and
``--resume`` finishes the rest exactly once (infrastructure errors are retried). At the end
the file is rewritten in canonical order, so two runs of a deterministic agent give
byte-identical files once the ``timing`` fields are dropped.

Kill safety: worker processes die with the eval (``PR_SET_PDEATHSIG`` on Linux, and a
watch on the parent's pid everywhere), and never write a trajectory once the eval is gone;
``OUT/eval.lock`` is held (``flock``) while an eval runs on OUT, so a ``--resume`` never races
with a run still going. Each retry of an episode is an attempt: the row that counts is the
last, and it keeps the earlier ones under ``attempts``; a recorded cassette of an earlier
attempt is kept as ``NAME.attemptK.jsonl`` so that ``replay:`` replays the attempt that made
the row.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import multiprocessing
import os
import signal
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Iterable, Iterator

from pydantic import BaseModel, Field

from erp_sim.agents.policies import PRESETS, parse_policy, preset
from erp_sim.agents.evaluation.report import RESULTS_FILE, load_results, write_report
DEFAULT_CONFIGS = ["C1", "C2", "C3", "C4"]
RESULT_GRADE_FIELDS = {"success", "strict_success", "itemized_fraction", "remaining_amount", "collateral"}  # in results.jsonl
DEFAULT_OUT = "runs/eval"
LOCK_FILE = "eval.lock"
PARENT_POLL_SECONDS = 0.5
_parent_pid: int | None = None  # set in worker processes: the eval that started them


class EpisodeSpec(BaseModel):
    """Everything needed to run one episode anywhere (a worker process, a Ray node)."""

    config: str
    policy: str
    user: str = Field(description="rule | none | openai:MODEL")
    agent: str = Field(description="scripted | scripted:recall=TOKENS | openai:MODEL | replay:DIR")
    task_set: str
    task_id: str
    run: int
    seed: int
    max_steps: int = 200
    verbosity: str = "default"
    out_dir: str
    base_url: str | None = None
    record_dir: str | None = None
    context_window: int | None = Field(None, description="tokens; a longer request ends the episode (context_overflow)")

    @property
    def key(self) -> tuple:
        return (self.config, self.task_set, self.task_id, self.run)

    @property
    def episode_name(self) -> str:
        return f"{self.task_id}-run{self.run}"


# --- building the pieces of one episode -------------------------------------------------------
def _chat_model(name: str, base_url: str | None):
    from erp_sim.agents.models.openai_chat import OpenAIChatModel

    return OpenAIChatModel(name, base_url=base_url, temperature=0.0)


def build_agent(spec: EpisodeSpec):
    from erp_sim.agents.model_agent import ModelAgent
    from erp_sim.agents.policies import wrap
    from erp_sim.agents.scripted import ScriptedAgent

    kind, _, argument = spec.agent.partition(":")
    cassette = Path(spec.record_dir or argument or ".") / "cassettes" / spec.config / f"{spec.episode_name}.jsonl"
    if kind == "scripted":
        inner = ScriptedAgent(recall_horizon=_scripted_recall(argument), seed=spec.seed)
    elif kind == "openai":
        model = _chat_model(argument, spec.base_url)
        if spec.record_dir:
            from erp_sim.agents.models.cassette import RecordingModel

            _keep_earlier_attempt(cassette)
            model = RecordingModel(model, cassette)
        inner = ModelAgent(model, context_window=spec.context_window)
    elif kind == "replay":
        from erp_sim.agents.models.cassette import ReplayModel

        inner = ModelAgent(ReplayModel(cassette, strict=True), context_window=spec.context_window)
    else:
        raise ValueError(f"unknown agent {spec.agent!r}: use scripted, openai:MODEL or replay:DIR")
    return wrap(inner, spec.policy)


def _keep_earlier_attempt(cassette: Path) -> None:
    """Move an earlier attempt's cassette aside (NAME.attemptK.jsonl): NAME.jsonl is always the
    attempt that produced the row, so replay follows it, and the history is still on disk."""
    cassette.parent.mkdir(parents=True, exist_ok=True)
    if not cassette.exists():
        return
    number = 1
    while (earlier := cassette.with_name(f"{cassette.stem}.attempt{number}.jsonl")).exists():
        number += 1
    cassette.replace(earlier)


def _scripted_recall(argument: str) -> float | None:
    """``scripted`` or ``scripted:recall=H`` (the synthetic misreading model, H tokens)."""
    if not argument:
        return None
    key, _, value = argument.partition("=")
    try:
        if key.strip() == "recall":
            return float(value)
    except ValueError:
        pass
    raise ValueError(f"scripted agent options: recall=TOKENS (e.g. scripted:recall=2e6), got {argument!r}")


def sampling_settings(model: Any) -> dict[str, Any] | None:
    """The model name and sampling params a chat model sends with every request (None: no LLM)."""
    if model is None:
        return None
    inner = getattr(model, "inner", model)  # a RecordingModel records for the model it wraps
    name = getattr(inner, "model", None)
    return {**({"model": name} if isinstance(name, str) else {}), **dict(getattr(model, "sampling_params", {}) or {})}


def build_user(spec: EpisodeSpec):
    if spec.user in ("rule", "none"):
        return spec.user
    kind, _, model = spec.user.partition(":")
    if kind != "openai" or not model:
        raise ValueError(f"unknown user {spec.user!r}: use rule, none or openai:MODEL")
    from erp_sim.agents.llm_user import LLMUser

    return LLMUser(_chat_model(model, spec.base_url))


def run_spec(spec: EpisodeSpec) -> dict[str, Any]:
    """Run one episode, write its trajectory, return its results row."""
    import gymnasium as gym

    import erp_sim.envs  # noqa: F401  (registers the ids)
    from erp_sim.agents.runner import DEFAULT_MAX_MODEL_CALLS, run_episode

    user, agent = build_user(spec), build_agent(spec)
    env = gym.make("erp_sim/ExpenseItemization-v0", task_set=spec.task_set, user_model=user,
                   verbosity=spec.verbosity, max_episode_steps=spec.max_steps)
    try:
        trajectory = run_episode(env, agent, task_id=spec.task_id, seed=spec.seed, policy=spec.policy,
                                 context_window=spec.context_window,  # long horizons: as many model calls as env steps
                                 max_model_calls=max(DEFAULT_MAX_MODEL_CALLS, spec.max_steps))
    finally:
        env.close()
    if _parent_pid is not None and os.getppid() != _parent_pid:
        os._exit(1)  # the eval is gone: an orphan must not write anything
    relative = Path("trajectories") / spec.config / f"{spec.episode_name}.json.gz"
    path = Path(spec.out_dir) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as out:
        out.write(json.dumps(trajectory.deterministic_dump(), ensure_ascii=False).encode())
    grade = trajectory.grade
    return {
        "config": spec.config, "policy": spec.policy, "user": spec.user, "agent": spec.agent,
        "task_set": spec.task_set, "task_id": spec.task_id, "run": spec.run, "seed": spec.seed,
        "grade": grade.model_dump(mode="json", include=RESULT_GRADE_FIELDS) if grade is not None else {},
        "metrics": trajectory.metrics.model_dump(mode="json"),
        "termination": trajectory.termination, "failure_category": trajectory.failure_category,
        "infra_error": trajectory.infra_error, "model_error": trajectory.model_error, "trajectory": str(relative),
        "sampling": {"agent": sampling_settings(getattr(getattr(agent, "unwrapped", agent), "model", None)),
                     "user": sampling_settings(getattr(user, "model", None)), "context_window": spec.context_window},
        "timing": {k: round(v, 4) for k, v in trajectory.timing.items()},
    }


# --- planning, resuming, running ---------------------------------------------------------------
def plan(configs: list[tuple[str, str, str]], task_set: str, task_ids: list[str], runs: int, seed: int,
         **common: Any) -> list[EpisodeSpec]:
    """configs: (name, policy spec, user). Seeds: ``seed + run`` (one seed per run, as runs repeat the benchmark)."""
    return [EpisodeSpec(config=name, policy=policy, user=user, task_set=task_set, task_id=task_id, run=run,
                        seed=seed + run, **common)
            for name, policy, user in configs for run in range(runs) for task_id in task_ids]


def read_rows(path: Path) -> list[dict]:
    """Rows of a results file (none if it does not exist yet); a torn last line is skipped."""
    return load_results(path.parent, path.name)[0] if path.exists() else []


def row_key(row: dict) -> tuple:
    return (row["config"], row["task_set"], row["task_id"], row["run"])


def finished_keys(rows: Iterable[dict]) -> set[tuple]:
    return {row_key(r) for r in rows if not r.get("infra_error")}


def execute(specs: list[EpisodeSpec], *, backend: str = "local", concurrency: int = 1, address: str | None = None) -> Iterator[dict]:
    """Yield result rows as episodes finish."""
    if backend == "ray":
        yield from _execute_ray(specs, address)
    elif concurrency <= 1:
        for spec in specs:
            yield run_spec(spec)
    else:
        # spawn, not fork: workers are direct children of this process (so the death signal and
        # the pid watch refer to it) and inherit no open files (the lock, the results file)
        with ProcessPoolExecutor(max_workers=concurrency, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=_die_with_parent, initargs=(os.getpid(),)) as pool:
            pending = {pool.submit(run_spec, spec) for spec in specs[: concurrency * 2]}
            queue = iter(specs[concurrency * 2:])
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    try:
                        row = future.result()
                    except BrokenProcessPool:  # which episode's worker died cannot be told: stop, resumably
                        raise SystemExit("erp-sim: a worker process died (killed, or out of memory) while running "
                                         "episodes; every finished episode is saved: run again with --resume") from None
                    yield row
                    nxt = next(queue, None)
                    if nxt is not None:
                        pending.add(pool.submit(run_spec, nxt))


def _die_with_parent(parent_pid: int) -> None:
    """Worker initializer: end this worker as soon as the eval that started it ends, even by SIGKILL."""
    global _parent_pid
    _parent_pid = parent_pid
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)

    def watch() -> None:  # where prctl is missing (macOS), or if it failed
        while os.getppid() == parent_pid:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="watch-parent", daemon=True).start()


@contextlib.contextmanager
def eval_lock(out_dir: Path) -> Iterator[None]:
    """Hold OUT/eval.lock while running; a second eval on OUT (e.g. an early --resume) stops at once.

    ``flock`` is released by the kernel when the holder dies, so a killed run leaves no stale lock.
    """
    import fcntl

    path = out_dir / LOCK_FILE
    with path.open("a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise SystemExit(f"{out_dir} is in use by a running erp-sim eval (pid {holder}); wait for it or stop it") from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        yield


def _execute_ray(specs: list[EpisodeSpec], address: str | None) -> Iterator[dict]:
    try:
        import ray
    except ImportError:
        raise SystemExit("The Ray backend needs Ray: pip install 'erp-sim[ray]'.") from None
    ray.init(address=address, ignore_reinit_error=True, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(sys.path)}} if address is None else None)
    remote = ray.remote(run_spec)
    pending = [remote.remote(spec) for spec in specs]
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        yield ray.get(done[0])


def evaluate(specs: list[EpisodeSpec], out_dir: Path, *, resume: bool = False, backend: str = "local",
             concurrency: int = 1, address: str | None = None, quiet: bool = False) -> list[dict]:
    """Run what is not done yet, appending rows; return all rows in canonical order."""
    out_dir.mkdir(parents=True, exist_ok=True)
    results = out_dir / RESULTS_FILE
    if results.exists() and not resume:
        raise SystemExit(f"{results} exists: pass --resume to continue it, or choose another --out.")
    with eval_lock(out_dir):
        done = finished_keys(read_rows(results))
        todo = [spec for spec in specs if spec.key not in done]
        _run_and_append(todo, results, backend=backend, concurrency=concurrency, address=address, quiet=quiet)
        return canonicalize(results, specs)


def _run_and_append(todo: list[EpisodeSpec], results: Path, *, backend: str, concurrency: int, address: str | None,
                    quiet: bool) -> None:
    from tqdm import tqdm

    successes = tokens = finished = 0
    # disable=None: no bar when stderr is not a terminal (CI logs), as well as with --quiet
    with tqdm(total=len(todo), disable=True if quiet else None, unit="ep", desc="eval", dynamic_ncols=True) as bar, \
            results.open("a", encoding="utf-8") as out:
        for row in execute(todo, backend=backend, concurrency=concurrency, address=address):
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            out.flush()
            finished += 1
            successes += bool(row["grade"]["success"])
            tokens += row["metrics"]["input_tokens"]
            bar.set_postfix(success=f"{successes / finished:.0%}", tokens=f"{tokens:,}", refresh=False)
            bar.update()


def canonicalize(results: Path, specs: list[EpisodeSpec]) -> list[dict]:
    """Rewrite the results file in plan order, one row per episode (the latest), atomically.

    The latest row keeps the earlier attempts of its episode under ``attempts`` (termination and
    error of each, oldest first) and its own number under ``attempt``.
    """
    latest: dict[tuple, dict] = {}
    for row in read_rows(results):
        earlier = latest.get(row_key(row))
        if earlier is not None:
            row["attempts"] = [*earlier.get("attempts", []), _attempt_summary(earlier)]
        row["attempt"] = len(row.get("attempts", [])) + 1
        latest[row_key(row)] = row
    order = {spec.key: n for n, spec in enumerate(specs)}
    rows = sorted(latest.values(), key=lambda r: (order.get(row_key(r), len(order)), row_key(r)))
    tmp = results.with_suffix(".jsonl.tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    tmp.replace(results)
    return rows


def _attempt_summary(row: dict) -> dict:
    return {"attempt": row.get("attempt", 1), "termination": row.get("termination"),
            "infra_error": row.get("infra_error"), "model_error": row.get("model_error")}


# --- command line --------------------------------------------------------------------------------
def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of eval and sweep; every help text ends with its default (ArgumentDefaultsHelpFormatter)."""
    parser.add_argument("--agent", default="scripted",
                        help="scripted | scripted:recall=TOKENS | openai:MODEL | replay:DIR (the scripted agent is a "
                             "rule-based stand-in, not an LLM)")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint for openai: agents and users (None: api.openai.com, "
                                           "key from OPENAI_API_KEY)")
    parser.add_argument("--user", default="rule", help="rule | none | openai:MODEL (preset C1 always runs without a user)")
    parser.add_argument("--tasks", default="hotel_50", help="SET, SET:train, SET:test or SET:id1,id2 (sets: hotel_50, expense_types, long_horizon, Hotel, Meals ...)")
    parser.add_argument("--runs", type=int, default=5, help="runs over the task set per configuration")
    parser.add_argument("--seed", type=int, default=0, help="seed of run 0; run r uses seed + r")
    parser.add_argument("--concurrency", type=int, default=min(2, os.cpu_count() or 1),
                        help="episodes run at once in worker processes (1: in this process)")
    parser.add_argument("--backend", choices=["local", "ray"], default="local", help="where episodes run")
    parser.add_argument("--address", help="Ray cluster address (with --backend ray; None: a local Ray instance)")
    parser.add_argument("--out", default=DEFAULT_OUT, help="output directory (results.jsonl, trajectories, report.md)")
    parser.add_argument("--resume", action="store_true", help="continue an existing --out: run only episodes without a "
                                                               "scored row (infrastructure errors are retried)")
    parser.add_argument("--max-steps", type=int, default=200, help="environment steps per episode")
    parser.add_argument("--verbosity", choices=["default", "compact"], default="default", help="ERP response verbosity")
    parser.add_argument("--context-window", type=int, metavar="TOKENS",
                        help="the model's context window: a longer request ends its episode, scored as context_overflow "
                             "(None: no limit of ours; a server's own context-length 400 does the same)")
    parser.add_argument("--record", metavar="DIR", help="record model calls into DIR/cassettes (openai agents; None: off)")
    parser.add_argument("--baseline", help="configuration the report compares against (None: C2, else the first)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def task_ids(tasks: str) -> tuple[str, list[str]]:
    """``--tasks``: SET, SET:train, SET:test or SET:id1,id2 (parsed by ``erp_sim.task_sets.resolve_tasks``)."""
    from erp_sim.task_sets import resolve_tasks

    try:
        return resolve_tasks(tasks)
    except (KeyError, FileNotFoundError) as error:
        raise SystemExit(f"erp-sim: --tasks {tasks}: {error.args[0] if error.args else error}") from None


def check_models(spec: EpisodeSpec) -> None:
    """Build the agent and the user of one episode here, so that a bad --agent/--user (an unknown
    kind, a missing API key or cassette) is one line before any file is written, not a worker traceback."""
    kind, _, argument = spec.agent.partition(":")
    try:
        if kind == "replay":  # episodes may lack a cassette of their own; the directory must be there
            if not (Path(argument) / "cassettes").is_dir():
                raise FileNotFoundError(f"--agent {spec.agent}: no cassettes directory in {argument!r}")
        else:
            build_agent(spec.model_copy(update={"record_dir": None}))  # recording would create files
        build_user(spec)
    except (ValueError, FileNotFoundError) as error:
        raise SystemExit(f"erp-sim: {error}") from None


def run_from_args(args: argparse.Namespace, configs: list[tuple[str, str, str]]) -> int:
    if args.record and not args.agent.startswith("openai:"):
        raise SystemExit("erp-sim: --record needs an openai:MODEL agent")
    task_set, ids = task_ids(args.tasks)
    specs = plan(configs, task_set, ids, args.runs, args.seed, agent=args.agent, max_steps=args.max_steps,
                 verbosity=args.verbosity, out_dir=str(Path(args.out)), base_url=args.base_url, record_dir=args.record,
                 context_window=args.context_window)
    if not specs:
        raise SystemExit("erp-sim: nothing to run (no configuration, task or run)")
    for user in sorted({spec.user for spec in specs}):  # C1 runs without the user the others get
        check_models(next(spec for spec in specs if spec.user == user))
    started = time.perf_counter()
    rows = evaluate(specs, Path(args.out), resume=args.resume, backend=args.backend, concurrency=args.concurrency,
                    address=args.address, quiet=args.quiet)
    report = write_report(args.out, baseline=args.baseline)
    print_table(rows)
    print(f"\n{len(rows)} episodes in {time.perf_counter() - started:.1f}s wall time; report: {report}")
    scored = [row for row in rows if not row.get("infra_error")]
    if not scored:
        print(f"erp-sim: nothing was scored: all {len(rows)} episodes ended in infrastructure or harness errors "
              f"(listed in {report}); fix the cause and run again with --resume", file=sys.stderr)
        return 1
    if len(scored) < len(rows):
        print(f"erp-sim: {len(rows) - len(scored)} of {len(rows)} episodes were not scored (infrastructure or harness "
              f"errors, listed in {report}); --resume runs them again", file=sys.stderr)
    return 0


def print_table(rows: list[dict]) -> None:
    from erp_sim.agents.evaluation.report import short_labels
    from erp_sim.agents.evaluation.statistics import summarize

    summaries = summarize(rows)
    labels = short_labels(list(summaries))
    width = max([len("config"), *(len(label) for label in labels.values())]) + 2
    print(f"\n{'config':<{width}}{'success':>9}{'strict':>8}{'itemized':>10}{'over-item':>10}{'input tok/ep':>14}"
          f"{'input tok/bench':>17}"
          f"{'peak tok':>10}{'steps':>7}  policy")
    for name, summary in summaries.items():
        e = summary.estimates
        if not summary.n_episodes:
            print(f"{labels[name]:<{width}}  no scored episode  {summary.policy}")
            continue
        print(f"{labels[name]:<{width}}{e['success'].mean:>9.1%}{e['strict_success'].mean:>8.1%}"
              f"{e['itemized_amount'].mean:>10.2%}{e['over_itemization'].mean:>10.1%}{e['input_tokens_per_episode'].mean:>14,.0f}"
              f"{e['input_tokens'].mean:>17,.0f}{e['peak_tokens'].mean:>10,.0f}{e['steps'].mean:>7.1f}  {summary.policy}")


def parse_configs(names: list[str], policies: list[str], user: str) -> list[tuple[str, str, str]]:
    configs = []
    for name in names:
        p = preset(name)
        configs.append((name.upper(), p.policy, "none" if p.user_model == "none" else user))
    for spec in policies:
        configs.append((parse_policy(spec).spec, parse_policy(spec).spec, user))
    return configs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="erp-sim eval", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--configs", default=None, help=f"comma-separated presets ({', '.join(PRESETS)}); None: C1-C4 "
                                                        "unless --policy is given")
    parser.add_argument("--policy", action="append", default=[], help="a policy spec, e.g. last_n:n=5 (repeatable)")
    add_common_arguments(parser)
    # -- long-term memory across episodes (erp_sim.agents.memory.sequential) --
    parser.add_argument("--memory", metavar="DIR", help="memory store (directory or *.sqlite) for ga_memory policies")
    parser.add_argument("--sequential", action="store_true", help="tasks in order, memory carried over; adds a learning curve")
    parser.add_argument("--consolidator", default="deterministic", help="deterministic | openai:MODEL (with --sequential)")
    args = parser.parse_args(argv)
    if args.sequential:
        if len(args.policy) != 1 or args.configs:
            parser.error("--sequential takes exactly one --policy (with a ga_memory layer) and no --configs")
        from erp_sim.agents.memory.sequential import run_sequential

        try:
            return run_sequential(args, args.policy[0])
        except ValueError as exc:
            parser.error(str(exc))
    if args.memory:
        from erp_sim.agents.memory.sequential import with_memory_dir

        try:
            args.policy = [with_memory_dir(spec, args.memory) for spec in args.policy]
        except ValueError as exc:
            parser.error(str(exc))
    names = args.configs.split(",") if args.configs else ([] if args.policy else DEFAULT_CONFIGS)
    try:
        configs = parse_configs([n for n in names if n], args.policy, args.user)
    except ValueError as exc:
        parser.error(str(exc))
    return run_from_args(args, configs)


if __name__ == "__main__":
    sys.exit(main())
