"""``erp-sim eval``: policies x tasks x runs, one JSON line per episode, resumable, then a report.

With no arguments it runs the embedded default: presets C1-C4 with the scripted agent on
hotel_50, one run each: the scripted agent is deterministic, so further runs would be identical
copies (``runs.py``; an LLM agent gets the study's 5 runs), and its numbers are not LLM results.
Each finished episode is appended to ``OUT/results.jsonl`` at once, so a killed run loses at
most the episodes in flight and ``--resume`` finishes the rest exactly once (infrastructure
errors are retried). At the end the file is rewritten in canonical order, so two runs of a
deterministic agent give byte-identical files once the ``timing`` fields are dropped.

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
import ctypes
import gzip
import json
import multiprocessing
import os
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from types import ModuleType
from typing import Any

from erp_sim import workflows
from erp_sim.agents.command_line import UsageError
from erp_sim.agents.evaluation.attempts import latest_attempts
from erp_sim.agents.evaluation.costs import checked_prices
from erp_sim.agents.evaluation.episode_models import (
    build_agent,
    build_summarizer,
    build_user,
    prepare_models,
    sampling_settings,
)
from erp_sim.agents.evaluation.episode_row import (
    GRADE_FIELDS,
    RESULTS_FILE,
    EpisodeKey,
    EpisodeRow,
    RefusedLine,
    RowGrade,
    RowMetrics,
    RowSampling,
    RowTiming,
    read_results,
    succeeded,
)
from erp_sim.agents.evaluation.eval_options import EpisodeSpec, episode_options, task_ids
from erp_sim.agents.evaluation.output_lock import eval_lock
from erp_sim.agents.evaluation.ray_reaper import start_reaper, stop_reaper
from erp_sim.agents.evaluation.report import write_report
from erp_sim.agents.evaluation.report.formats import DASH, md_table, plural, success_label
from erp_sim.agents.evaluation.resume_check import resume_contradiction
from erp_sim.agents.evaluation.runs import default_runs, runs_text
from erp_sim.agents.evaluation.settings import step_limit_warning
from erp_sim.agents.evaluation.statistics import summarize
from erp_sim.agents.models.roles import label
from erp_sim.agents.runner import run_episode
from erp_sim.agents.tokens import get_counter
from erp_sim.database import clear_templates
from erp_sim.response import orjson_module

PARENT_POLL_SECONDS = 0.5
_parent_pid: int | None = None  # set in worker processes: the eval that started them


def gymnasium_and_envs() -> tuple[ModuleType, ModuleType]:
    """Gymnasium and ``erp_sim.envs`` (which registers the ids; with the env's module), imported on first use: by a
    worker's first episode or its warm-up, not by importing this module, which the eval's parent and every
    spawned worker do (tests/test_startup.py)."""
    import gymnasium

    import erp_sim.envs.expense_env

    return gymnasium, erp_sim.envs


def progress_bar_class() -> Any:
    """tqdm's bar, imported on first use: the live bar is the parent's, which a worker's start-up need not load
    (tests/test_startup.py)."""
    from tqdm import tqdm  # type: ignore[import-untyped]  # tqdm ships no types; types-tqdm is no dependency

    return tqdm


def run_spec(spec: EpisodeSpec) -> dict[str, Any]:
    """Run one episode, write its trajectory, return its results row as its JSON object (``EpisodeRow.dump``:
    plain data, what a worker process or a Ray task sends back)."""
    user, summarizer = build_user(spec), build_summarizer(spec)
    agent = build_agent(spec, summarizer)
    gym, envs = gymnasium_and_envs()
    env = gym.make(envs.DEFAULT_ENV_ID, task_set=spec.task_set, user_model=user, **spec.env_kwargs())
    try:
        trajectory = run_episode(
            env, agent, task_id=spec.task_id, seed=spec.seed, policy=spec.policy, **spec.run_kwargs()
        )
    finally:
        env.close()
    if _parent_pid is not None and os.getppid() != _parent_pid:
        os._exit(1)  # the eval is gone: an orphan must not write anything
    relative = Path("trajectories") / spec.folder / f"{spec.episode_name}.json.gz"
    path = Path(spec.out_dir) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = trajectory_json(trajectory.deterministic_dump())
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="", compresslevel=3) as out:
        out.write(payload)
    grade = trajectory.grade
    agent_model = getattr(getattr(agent, "unwrapped", agent), "model", None)
    row = EpisodeRow(
        config=spec.config,
        policy=spec.policy,
        user=spec.user,
        agent=_agent_label(spec, agent_model),
        task_set=spec.task_set,
        split=spec.split,
        task_id=spec.task_id,
        run=spec.run,
        seed=spec.seed,
        grade=RowGrade.model_validate(grade.model_dump(include=set(GRADE_FIELDS))) if grade is not None else None,
        metrics=RowMetrics.model_validate(trajectory.metrics.model_dump()),
        termination=trajectory.termination,
        failure_category=trajectory.failure_category,
        infra_error=trajectory.infra_error,
        model_error=trajectory.model_error,
        trajectory=str(relative),
        sampling=RowSampling(
            agent=sampling_settings(agent_model),
            user=sampling_settings(getattr(user, "model", None)),
            summarizer=sampling_settings(getattr(summarizer, "model", None)),
            **spec.sampling(),
            cassettes=_cassette_dir(spec),
            served_models=trajectory.served_models(),
        ),
        timing=RowTiming.model_validate({k: round(v, 4) for k, v in trajectory.timing.items()}),
    )
    return row.dump()


def trajectory_json(value: dict[str, Any]) -> bytes:
    """A trajectory's JSON, compact, as UTF-8: orjson's (the default job's 96 MB of trajectories in a third of
    json's CPU), or json's where orjson refuses a value (an integer past 64 bits, a lone surrogate); the same
    value either way (a non-finite float, which orjson writes as null, pydantic's JSON dump has made null already
    in the messages; the typed floats of a trajectory are finite sums). Gzip level 3 then: half of level 6's CPU on these files, for 45% more bytes."""
    orjson = orjson_module()
    try:
        return orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(value, separators=(",", ":")).encode()  # ASCII: a lone surrogate escaped, readable


def _agent_label(spec: EpisodeSpec, model: Any) -> str:
    """``--agent``, except that a replayed row names the recorded agent, as the recording's row does."""
    if not spec.agent.startswith("replay:"):
        return spec.agent
    recorded = getattr(model, "settings", None)  # a replay of the scripted agent beside recorded roles: no model
    return label(recorded) if recorded is not None else "scripted" if model is None else spec.agent


def _cassette_dir(spec: EpisodeSpec) -> str | None:
    """The recording a row's model calls went to (--record) or came from (replay:DIR)."""
    kind, _, argument = spec.agent.partition(":")
    directory = argument if kind == "replay" else spec.record_dir
    return None if directory is None else str(Path(directory))


# --- planning, resuming, running ---------------------------------------------------------------
def plan(
    configs: list[tuple[str, str, str]], task_set: str, task_ids: list[str], runs: int, seed: int, **common: Any
) -> list[EpisodeSpec]:
    """configs: (name, policy spec, user). Seeds: ``seed + run`` (one seed per run, as runs repeat the benchmark)."""
    return [
        EpisodeSpec(
            config=name,
            policy=policy,
            user=user,
            task_set=task_set,
            task_id=task_id,
            run=run,
            seed=seed + run,
            **common,
        )
        for name, policy, user in configs
        for run in range(runs)
        for task_id in task_ids
    ]


def finished_keys(rows: Iterable[EpisodeRow]) -> set[EpisodeKey]:
    return {r.episode_key for r in rows if not r.infra_error}


def execute(
    specs: list[EpisodeSpec],
    *,
    backend: str = "local",
    concurrency: int = 1,
    address: str | None = None,
    pool: ProcessPoolExecutor | None = None,
) -> Iterator[EpisodeRow]:
    """Yield result rows as episodes finish, each checked against the row's contract (``pool``: workers started
    already, ``_forked_pool``'s)."""
    for row in _execute(specs, backend=backend, concurrency=concurrency, address=address, pool=pool):
        yield EpisodeRow.model_validate(row)


def _execute(
    specs: list[EpisodeSpec],
    *,
    backend: str,
    concurrency: int,
    address: str | None,
    pool: ProcessPoolExecutor | None = None,
) -> Iterator[dict[str, Any]]:
    if backend == "ray":
        yield from _execute_ray(specs, address)
    elif concurrency <= 1:
        for spec in specs:
            yield run_spec(spec)
    else:
        # spawn, not fork (unless _forked_pool forked them before the lock and the results file were opened):
        # workers are direct children of this process (so the death signal and the pid watch refer to it) and
        # inherit no open files (the lock, the results file)
        forked = pool is not None
        with pool or ProcessPoolExecutor(
            max_workers=concurrency,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_die_with_parent,
            initargs=(os.getpid(),),
        ) as pool:
            # a forked pool's job is every episode of one task (its configurations and runs), so the worker that
            # tokenized and parsed the task's tool results meets them again; a spawned one's is one episode
            jobs = _by_task(specs) if forked else [[spec] for spec in specs]
            try:
                yield from _pool_rows(pool, jobs, concurrency)
            except KeyboardInterrupt:  # Ctrl-C: the workers (which ignore it) stop at once, their episodes unsaved
                pool.shutdown(wait=False, cancel_futures=True)
                for process in list((getattr(pool, "_processes", None) or {}).values()):
                    process.terminate()
                raise


def _pool_rows(pool: ProcessPoolExecutor, jobs: list[list[EpisodeSpec]], concurrency: int) -> Iterator[dict[str, Any]]:
    pending = {pool.submit(run_specs, job) for job in jobs[: concurrency * 2]}
    queue = iter(jobs[concurrency * 2 :])
    while pending:
        done, pending = wait(pending, return_when=FIRST_COMPLETED)
        for future in done:
            try:
                rows = future.result()
            except BrokenProcessPool:  # which episode's worker died cannot be told: stop, resumably
                raise SystemExit(
                    "erp-sim: a worker process died (killed, or out of memory) while running "
                    "episodes; every finished episode is saved: run again with --resume"
                ) from None
            yield from rows
            nxt = next(queue, None)
            if nxt is not None:
                pending.add(pool.submit(run_specs, nxt))


def run_specs(specs: list[EpisodeSpec]) -> list[dict[str, Any]]:
    """``run_spec`` of each, in order: one worker's job."""
    return [run_spec(spec) for spec in specs]


def _by_task(specs: list[EpisodeSpec]) -> list[list[EpisodeSpec]]:
    """The specs grouped by task, each group in plan order, the groups in the order of their first spec."""
    groups: dict[tuple[str, str], list[EpisodeSpec]] = {}
    for spec in specs:
        groups.setdefault((spec.task_set, spec.task_id), []).append(spec)
    return list(groups.values())


def _die_with_parent(parent_pid: int) -> None:
    """Worker initializer: end this worker as soon as the eval that started it ends, even by SIGKILL."""
    global _parent_pid
    _parent_pid = parent_pid
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the eval stops its workers
    if sys.platform.startswith("linux"):
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


def ray_and_its_deaths() -> tuple[ModuleType, tuple[type[Exception], ...]]:
    """Ray and the errors of a task whose worker died, imported on first use: the ray extra (``--backend ray``)."""
    try:
        import ray
        from ray.exceptions import LocalRayletDiedError, NodeDiedError, OutOfMemoryError, WorkerCrashedError
    except ImportError:
        raise SystemExit("The Ray backend needs Ray: pip install 'erp-sim[ray]'.") from None
    return ray, (WorkerCrashedError, OutOfMemoryError, NodeDiedError, LocalRayletDiedError)


def _execute_ray(
    specs: list[EpisodeSpec], address: str | None, run: Callable[[EpisodeSpec], dict[str, Any]] | None = None
) -> Iterator[dict[str, Any]]:
    """The local backend's semantics on Ray: no silent retry of an episode whose worker died (Ray would run it
    again, a second attempt nobody asked for), and ``ray.shutdown()`` on every exit of a Ray it started; a watchdog
    (``ray_reaper``) stops that Ray's processes if the eval is killed outright. ``run`` is for tests."""
    ray, worker_died = ray_and_its_deaths()
    owned = not ray.is_initialized()  # a Ray the caller started stays theirs
    context = ray.init(
        address=address,
        ignore_reinit_error=True,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(sys.path)}} if address is None else None,
    )
    # for a killed eval. ray.init returns a RayContext, which its annotation calls BaseContext (unused-ignore:
    # without Ray installed, mypy sees Any here)
    session_dir = context.address_info.get("session_dir", "")  # type: ignore[attr-defined, unused-ignore]
    reaper = start_reaper(session_dir) if owned else None
    try:
        remote = ray.remote(max_retries=0)(run or run_spec)
        pending = [remote.remote(spec) for spec in specs]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            try:
                row = ray.get(done[0])
            except worker_died as error:
                raise SystemExit(
                    f"erp-sim: a Ray worker died while running an episode ({type(error).__name__}); "
                    "every finished episode is saved: run again with --resume"
                ) from None
            yield row
    finally:
        if owned:
            ray.shutdown()
            stop_reaper(reaper)


def evaluate(
    specs: list[EpisodeSpec],
    out_dir: Path,
    *,
    resume: bool = False,
    backend: str = "local",
    concurrency: int = 1,
    address: str | None = None,
    quiet: bool = False,
) -> list[EpisodeRow]:
    """Run what is not done yet, appending rows; return all rows in canonical order."""
    out_dir.mkdir(parents=True, exist_ok=True)
    results = out_dir / RESULTS_FILE
    if results.exists() and not resume:
        raise UsageError(f"{results} exists: pass --resume to continue it, or choose another --out.")
    pool = _forked_pool(specs, concurrency) if backend == "local" else None
    with pool or contextlib.nullcontext(), eval_lock(out_dir):
        rows = read_results(results).rows
        problem = resume_contradiction(specs, rows, results)  # another model pooled into a configuration
        if problem:
            raise UsageError(problem)
        done = finished_keys(rows)
        todo = [spec for spec in specs if spec.key not in done]
        if todo:  # nothing left (a --resume of a finished run): no backend starts, Ray included
            _run_and_append(
                todo, results, backend=backend, concurrency=concurrency, address=address, quiet=quiet, pool=pool
            )
        return canonicalize(results, specs)


def _forked_pool(specs: list[EpisodeSpec], concurrency: int) -> ProcessPoolExecutor | None:
    """Workers forked from this process, warmed once, for a run that calls no model service (the default job:
    each spawned worker imported the stack again, 1-2 s of CPU each), else None (spawned workers, as for model
    services, whose clients must not cross a fork). Forked before the lock and the results file are opened, so
    they hold neither, and only while this process has one thread (a fork copies no other thread's locks)."""
    if concurrency <= 1 or not sys.platform.startswith("linux") or threading.active_count() > 1:
        return None
    if not all(_offline(spec) for spec in specs):
        return None
    _warm_worker()
    pool = ProcessPoolExecutor(
        max_workers=concurrency,
        mp_context=multiprocessing.get_context("fork"),
        initializer=_forked_worker,
        initargs=(os.getpid(),),
    )
    pool.submit(_warm_worker).result()  # forks every worker now (the fork context starts them all at once)
    return pool


def _offline(spec: EpisodeSpec) -> bool:
    """An episode that calls no model service and records nothing."""
    return (
        spec.agent.split(":", 1)[0] == "scripted"
        and spec.user in ("rule", "none")
        and spec.summarizer == "structured"
        and spec.record_dir is None
    )


def _warm_worker() -> None:
    """Import what an episode runs and load the tokenizer (no database: SQLite connections must not cross a fork)."""
    gymnasium_and_envs()
    for name in workflows.PACKAGES:
        workflows.load(name)
    get_counter().count_text("warm")


def _forked_worker(parent_pid: int) -> None:
    """Initializer of a forked worker: ``_die_with_parent``, and no template inherited from the parent (a test
    process may have opened some)."""
    clear_templates()
    _die_with_parent(parent_pid)


def _run_and_append(
    todo: list[EpisodeSpec],
    results: Path,
    *,
    backend: str,
    concurrency: int,
    address: str | None,
    quiet: bool,
    pool: ProcessPoolExecutor | None = None,
) -> None:
    successes = tokens = finished = 0
    # disable=None: no bar when stderr is not a terminal (CI logs), as well as with --quiet
    with (
        progress_bar_class()(
            total=len(todo), disable=True if quiet else None, unit="ep", desc="eval", dynamic_ncols=True
        ) as bar,
        results.open("a", encoding="utf-8") as out,
    ):
        for row in execute(todo, backend=backend, concurrency=concurrency, address=address, pool=pool):
            out.write(row.json_line())
            out.flush()
            finished += 1
            successes += succeeded(row)
            tokens += row.metrics.input_tokens
            bar.set_postfix(success=f"{successes / finished:.0%}", tokens=f"{tokens:,}", refresh=False)
            bar.update()


def canonicalize(results: Path, specs: list[EpisodeSpec]) -> list[EpisodeRow]:
    """Rewrite the results file in plan order, one row per episode (the latest), atomically.

    The latest row keeps the earlier attempts of its episode under ``attempts`` (termination and
    error of each, oldest first) and its own number under ``attempt``. Lines that are not rows (a
    torn line, a row of another version) move to ``results.refused.jsonl``, each named on stderr.
    """
    order = {spec.key: n for n, spec in enumerate(specs)}
    read = read_results(results)
    rows = sorted(latest_attempts(read.rows), key=lambda r: (order.get(r.episode_key, len(order)), r.episode_key))
    if read.refused:
        set_aside(read.refused, results.with_suffix(".refused.jsonl"))
    tmp = results.with_suffix(".jsonl.tmp")
    tmp.write_text("".join(row.json_line() for row in rows), encoding="utf-8")
    tmp.replace(results)
    return rows


def set_aside(refused: list[RefusedLine], path: Path) -> None:
    """Keep lines that are not rows (appended to ``path``) and name each on stderr: nothing is lost."""
    with path.open("a", encoding="utf-8") as out:
        for line in refused:
            out.write(line.text if line.text.endswith("\n") else line.text + "\n")
            print(f"erp-sim: {line}; moved to {path.name}", file=sys.stderr)


# --- command line --------------------------------------------------------------------------------
def run_from_args(args: argparse.Namespace, configs: list[tuple[str, str, str]]) -> int:
    """Plan, check and run the episodes, then report; Ctrl-C says what was saved and how to go on (exit 130)."""
    specs: list[EpisodeSpec] = []
    try:
        return _run_from_args(args, configs, specs)
    except KeyboardInterrupt:
        return interrupted(args, specs)


def interrupted(args: argparse.Namespace, specs: list[EpisodeSpec]) -> int:
    """One line instead of a traceback: the episodes saved so far and the command that continues the run."""
    results = Path(args.out) / RESULTS_FILE
    saved = len(finished_keys(read_results(results).rows) & {spec.key for spec in specs}) if specs else 0
    command = getattr(args, "command", None) or "erp-sim eval ..."
    if "--resume" not in command.split():
        command += " --resume"
    print(
        f"\ninterrupted: {saved} of {len(specs)} episodes saved in {args.out}; continue with `{command}`",
        file=sys.stderr,
    )
    return 130


def command_text(prog: str, argv: list[str] | None) -> str:
    """The command as typed (``prog`` and its arguments, shell-quoted), for the line that says how to go on."""
    return f"{prog} {shlex.join(sys.argv[1:] if argv is None else argv)}".strip()


def _run_from_args(args: argparse.Namespace, configs: list[tuple[str, str, str]], specs: list[EpisodeSpec]) -> int:
    prices = checked_prices(args.price)
    task_set, ids = task_ids(args.tasks)
    runs = args.runs if args.runs is not None else default_runs(args.agent)
    specs += plan(configs, task_set, ids, runs, args.seed, **episode_options(args))
    if not specs:
        raise UsageError("nothing to run (no configuration, task or run)")
    warning = step_limit_warning(task_set, ids, specs[0].step_limit())
    if warning:
        print(f"erp-sim: {warning}", file=sys.stderr)
    results = Path(args.out) / RESULTS_FILE

    def contradiction() -> None:  # checked again under the lock; here, so that no probe or manifest comes first
        problem = resume_contradiction(specs, read_results(results).rows, results) if args.resume else None
        if problem:
            raise UsageError(problem)

    prepare_models(specs, probe=not args.no_probe, preflight=contradiction)
    started = time.perf_counter()
    done_before = finished_keys(read_results(Path(args.out) / RESULTS_FILE).rows) if args.resume else set()
    rows = evaluate(
        specs,
        Path(args.out),
        resume=args.resume,
        backend=args.backend,
        concurrency=args.concurrency,
        address=args.address,
        quiet=args.quiet,
    )
    report = write_report(args.out, baseline=args.baseline, prices=prices, view=args.view)
    print_table(rows)
    run_now = sum(spec.key not in done_before for spec in specs)  # what this invocation ran, not the file's rows
    print(
        f"\n{plural(run_now, 'episode')} in {time.perf_counter() - started:.1f}s wall time ({len(rows)} in the results); "
        f"report: {report}" + ("" if args.view else f"; the run page: erp-sim view {args.out}")
    )
    scored = [row for row in rows if not row.infra_error]
    if not scored:
        print(
            f"erp-sim: nothing was scored: all {len(rows)} episodes ended in infrastructure or harness errors "
            f"(listed in {report}); fix the cause and run again with --resume",
            file=sys.stderr,
        )
        return 1
    if len(scored) < len(rows):
        print(
            f"erp-sim: {len(rows) - len(scored)} of {len(rows)} episodes were not scored (infrastructure or harness "
            f"errors, listed in {report}); --resume runs them again",
            file=sys.stderr,
        )
    return 0


#: The table erp-sim eval prints, as GitHub Markdown, so that the README's copy is a paste of it
#: (tests/agents/evaluation/test_evaluate.py holds the two to the same columns and number formats).
TABLE_COLUMNS = (
    "config",
    "policy",
    "user",
    "full itemization",
    "strict",
    "input tokens / benchmark",
    "peak tokens",
    "steps",
    "runs",
)


def table_columns(rows: list[EpisodeRow]) -> tuple[str, ...]:
    """``TABLE_COLUMNS`` with the success column named as the rows' workflow names it (``report.formats.
    success_label``: "full itemization", "reconciled"; rows of several workflows: "success")."""
    return (*TABLE_COLUMNS[:3], success_label(row.task_set for row in rows), *TABLE_COLUMNS[4:])


def print_table(rows: list[EpisodeRow]) -> None:
    lines = []
    for name, summary in summarize(rows).items():
        e = summary.estimates
        numbers = (
            [
                f"{e['success'].mean:.1%}",
                f"{e['strict_success'].mean:.1%}",
                f"{e['input_tokens'].mean:,.0f}",
                f"{e['peak_tokens'].mean:,.0f}",
                f"{e['steps'].mean:.1f}",
            ]
            if summary.n_episodes
            else ["no scored episode", *[DASH] * 4]
        )
        lines.append((name, summary.policy, summary.user, *numbers, runs_text(summary.n_runs, summary.agent)))
    print("\n" + md_table(table_columns(rows), lines, "lll" + "r" * 6))
