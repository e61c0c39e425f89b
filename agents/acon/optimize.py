"""``erp-sim acon optimize``: ACON's guideline optimisation (UT, then CO) on a train split.

Round 0 runs the agent on the train tasks without compression and with compression under
the initial guideline (the prompt files in ``agents/prompts``, or ``--initial-guideline``).
UT: tasks solved without compression but failed with it are the contrastive pairs; for each,
the optimizer compares the full context with the compressed one and writes feedback
(``prompts/feedback.md``); from all feedback it writes k candidate guidelines
(``prompts/update.md``), each scored on the train tasks, and the best is kept (highest
success rate, then lowest mean peak tokens, then the lower candidate number). CO: from the
compressor outputs of episodes that still succeed, the optimizer writes a shorter guideline
(``prompts/shorten.md``), scored again. The chosen guideline is CO's when its train success
is at least UT's, else UT's. Then the no-compression baseline and every round's guideline
run on the test tasks.

Everything lands in OUT: ``config.json``, ``guidelines/*.md`` (every version; ``chosen-*.md``
plugs into ``acon_history:guideline=FILE`` / ``acon_observation:guideline=FILE``),
``feedback/*.md``, ``optimizer/*.md`` (raw answers), ``candidates.json``,
``episodes/LABEL/SPLIT/TASK_SET/TASK.json.gz`` (one per episode, with the compressor's calls for
``export-sft``; keyed by split and task set as well as task id, since task sets share ids such as
``hotel-001``; ``--resume`` moves a run's older ``episodes/LABEL/TASK.json.gz`` into place when the
record's split and task set match), ``report.json`` and ``report.md`` (success, peak tokens, dependency, compressor
calls and tokens, cost per round, train and test), and ``timing.json`` (wall time per phase; the
only file that is not deterministic). Train and test tasks must not overlap (refused at the
start). Every episode and optimizer answer is written as soon as it exists, so ``--resume``
continues a killed run without repeating a finished episode or an optimizer answer; the
episode that was running at the kill is run again from its start. ``--record DIR`` keeps every
model call in ``DIR/cassettes/ROLE.jsonl``; ``--replay DIR`` answers them from there,
offline, and gives the same files.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
from pydantic import BaseModel, Field, PositiveInt

import erp_sim.envs
from erp_sim.agents.acon.files import read_gz_json, write_gz_json, write_json, write_text
from erp_sim.agents.acon.optimize_report import NO_COMPRESSION, report_markdown
from erp_sim.agents.acon.optimizer_requests import (
    extract_guideline,
    feedback_request,
    load_optimizer_prompt,
    shorten_request,
    update_request,
)
from erp_sim.agents.acon.role_models import ROLES, role_models, role_switches
from erp_sim.agents.acon.scoring import cost_usd, score
from erp_sim.agents.acon.task_splits import default_test_tasks, overlap_message, overlapping_tasks
from erp_sim.agents.command_line import PlainHelpFormatter, UsageError, refuse, usage_errors
from erp_sim.agents.evaluation.settings import EpisodeSettings
from erp_sim.agents.model_agent import ModelAgent
from erp_sim.agents.models.roles import add_backend_arguments, add_model_arguments, params_by_role, positive, server_url
from erp_sim.agents.policies import wrap
from erp_sim.agents.policies.spec import format_value
from erp_sim.agents.runner import run_episode
from erp_sim.agents.summarizers import HISTORY_PROMPT, OBSERVATION_PROMPT, LLMSummarizer, SummarizerError, load_prompt
from erp_sim.agents.tokens import get_counter, message_text
from erp_sim.agents.types import ChatResponse, Message, ToolSchema, Usage
from erp_sim.task_sets import resolve_tasks

# compressed kind -> (built-in prompt file, policy)
KINDS = {"history": (HISTORY_PROMPT, "acon_history"), "observation": (OBSERVATION_PROMPT, "acon_observation")}
COMPRESSION = {"history": ("history",), "observation": ("observation",), "both": ("observation", "history")}
CO_EPISODES, CO_OUTPUTS = 5, 3  # successful episodes, and last outputs of each, shown to the shortening step


class Settings(BaseModel):
    """What a run computes (saved as config.json; a resumed run must match it). Endpoints are not in it."""

    agent: str
    compressor: str
    optimizer: str
    tasks: str
    test_tasks: str = Field(description="a --tasks selection, or 'none'")
    compression: Literal["history", "observation", "both"] = "history"
    t_hist: int = 4096
    t_obs: int = 1024
    candidates: int = 5
    steps: list[Literal["ut", "co"]] = ["ut", "co"]
    seed: int = 0
    max_steps: PositiveInt = Field(default_factory=lambda: EpisodeSettings().step_limit())
    initial_guideline: dict[str, str] = Field(description="compressed kind -> guideline text of round 0")
    prices: dict[str, list[float]] = Field(
        default_factory=dict, description="role -> [USD per 1M input, per 1M output]"
    )
    model_params: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="role -> request body keys (--model-param)"
    )


class CallLog:
    """A ChatModel wrapper that counts one role's calls and tokens and keeps its (input, output) pairs.

    Tokens are the server's reported usage, or exact o200k counts when it reports none.
    """

    def __init__(self, inner: Any):
        self.inner = inner
        self.counter = get_counter()
        self.reset()

    def reset(self) -> None:
        self.calls, self.input_tokens, self.output_tokens = 0, 0, 0
        self.pairs: list[dict[str, Any]] = []

    def complete(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> ChatResponse:
        response = self.inner.complete(messages, tools)
        usage = response.usage
        if not usage.input_tokens and not usage.output_tokens:
            usage = Usage(
                input_tokens=self.counter.count_messages(messages) + (self.counter.count_tools(tools) if tools else 0),
                output_tokens=self.counter.count_message(response.message),
            )
        self.calls += 1
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.pairs.append({"messages": list(messages), "output": message_text(response.message.get("content"))})
        return response

    async def acomplete(self, messages: list[Message], tools: list[ToolSchema] | None = None) -> ChatResponse:
        return self.complete(messages, tools)

    def usage(self) -> dict[str, int]:
        return {"calls": self.calls, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens}


def compressor_kind(messages: list[Message]) -> str:
    """Which compressor a summarizer request was for, from the sections LLMSummarizer writes."""
    return "observation" if "# Response to rewrite\n" in message_text(messages[-1].get("content")) else "history"


# --- the run ---------------------------------------------------------------------------------
class Run:
    """One optimisation run in ``out``: the role models, the task lists and the artefacts."""

    def __init__(self, settings: Settings, out: Path, models: dict[str, Any]):
        self.settings, self.out = settings, out
        self.kinds = COMPRESSION[settings.compression]
        self.roles = {role: CallLog(model) for role, model in models.items()}
        self.task_set, self.train = resolve_tasks(settings.tasks)
        no_test: tuple[str, list[str]] = ("", [])  # no test split: no test episode, so no task set either
        self.test_set, self.test = no_test if settings.test_tasks == "none" else resolve_tasks(settings.test_tasks)
        shared = overlapping_tasks(settings.tasks, settings.test_tasks)
        if shared:
            raise ValueError(overlap_message(settings.tasks, settings.test_tasks, shared))
        self.timing: dict[str, float] = {}

    # guidelines
    def guideline_path(self, label: str, kind: str) -> Path:
        return self.out / "guidelines" / f"{label}-{kind}.md"

    def guideline(self, label: str) -> dict[str, str]:
        return {kind: self.guideline_path(label, kind).read_text(encoding="utf-8") for kind in self.kinds}

    def policy_spec(self, label: str, *, relative: bool = False) -> str:
        if label == NO_COMPRESSION:
            return "full"
        layers = []
        for kind in self.kinds:
            path = self.guideline_path(label, kind)
            where = format_value(str(path.relative_to(self.out) if relative else path.resolve()))
            threshold = f"t={self.settings.t_hist},k=1" if kind == "history" else f"t={self.settings.t_obs}"
            layers.append(f"{KINDS[kind][1]}:{threshold},guideline={where}")
        return "+".join(layers)

    # episodes
    def episodes(self, label: str, split: str) -> list[dict[str, Any]]:
        task_set, ids = (self.task_set, self.train) if split == "train" else (self.test_set, self.test)
        return [self.episode(label, task_set, task_id, split) for task_id in ids]

    def episode(self, label: str, task_set: str, task_id: str, split: str) -> dict[str, Any]:
        path = self.out / "episodes" / label / split / task_set / f"{task_id}.json.gz"
        if path.exists():
            return read_gz_json(path)
        legacy = self.out / "episodes" / label / f"{task_id}.json.gz"  # where runs before split/set keys kept it
        if (
            legacy.exists()
            and (record := read_gz_json(legacy)).get("task_set") == task_set
            and record.get("split") == split
        ):
            path.parent.mkdir(parents=True, exist_ok=True)
            legacy.replace(path)  # moved, not copied: export-sft reads every episode file once
            return record
        twin = self.twin(label)
        if twin is None:
            record = self._run_episode(label, task_set, task_id, split)
        else:  # same guideline text, same task and seed: same requests, so the episode is not paid for twice
            record = {
                **self.episode(twin, task_set, task_id, split),
                "label": label,
                "policy": self.policy_spec(label, relative=True),
                "reused_from": twin,
            }
        write_gz_json(path, record)
        return record

    def twin(self, label: str) -> str | None:
        """An earlier guideline version with exactly the same text as ``label``'s, if any."""
        if label == NO_COMPRESSION:
            return None
        mine = self.guideline(label)
        for other in ["v0", *(f"ut-{n}" for n in range(1, self.settings.candidates + 1)), "co"]:
            if other == label:
                return None
            if all(self.guideline_path(other, kind).exists() for kind in self.kinds) and self.guideline(other) == mine:
                return other
        return None

    def _run_episode(self, label: str, task_set: str, task_id: str, split: str) -> dict[str, Any]:
        agent_log, compressor_log = self.roles["agent"], self.roles["compressor"]
        agent_log.reset()
        compressor_log.reset()
        agent = wrap(ModelAgent(agent_log), self.policy_spec(label), summarizer=LLMSummarizer(compressor_log))
        episode_settings = EpisodeSettings(max_steps=self.settings.max_steps)
        env = gym.make(
            erp_sim.envs.DEFAULT_ENV_ID, task_set=task_set, user_model="rule", **episode_settings.env_kwargs()
        )
        record: dict[str, Any] = {
            "task_set": task_set,
            "task_id": task_id,
            "split": split,
            "label": label,
            "policy": self.policy_spec(label, relative=True),
        }
        try:
            trajectory = run_episode(
                env,
                agent,
                task_id=task_id,
                seed=self.settings.seed,
                keep_shown=True,
                policy=record["policy"],
                **episode_settings.run_kwargs(),
            )
        except SummarizerError as exc:  # the compressor gave nothing usable: the episode fails, the run goes on
            trajectory = None
            record.update(
                success=False, termination="compressor_error", error=str(exc), metrics={}, messages=[], shown_last=[]
            )
        finally:
            env.close()
        if trajectory is not None:
            if trajectory.infra_error:
                raise SystemExit(
                    f"{label}/{task_id}: model service failed ({trajectory.infra_error}); "
                    "nothing was saved for this episode: rerun with --resume"
                )
            record.update(
                success=trajectory.grade is not None and trajectory.grade.success,
                termination=trajectory.termination,
                failure_category=trajectory.failure_category,
                metrics=trajectory.metrics.model_dump(mode="json"),
                messages=trajectory.messages,
                shown_last=trajectory.context.shown(len(trajectory.context.steps) - 1)
                if trajectory.context.steps
                else [],
            )
        record["agent_usage"] = agent_log.usage()
        record["compressor_usage"] = compressor_log.usage()
        record["compressor_calls"] = [{"kind": compressor_kind(p["messages"]), **p} for p in compressor_log.pairs]
        return record

    # the optimizer
    def ask(self, name: str, prompt: str, user: str) -> str:
        """One optimizer call, answered from OUT/optimizer/NAME.md when a previous run made it."""
        answer_path = self.out / "optimizer" / f"{name}.md"
        usage_path = self.out / "optimizer" / f"{name}.usage.json"
        if answer_path.exists() and usage_path.exists():
            return answer_path.read_text(encoding="utf-8").strip()  # as first returned: stripped
        log = self.roles["optimizer"]
        log.reset()
        response = log.complete(
            [{"role": "system", "content": load_optimizer_prompt(prompt)}, {"role": "user", "content": user}]
        )
        text = message_text(response.message.get("content")).strip()
        if not text:
            raise SystemExit(f"optimizer step {name}: empty answer; rerun with --resume to ask again")
        write_text(answer_path, text + "\n")
        write_json(usage_path, log.usage())
        return text

    def optimizer_usage(self, prefix: str) -> dict[str, int]:
        total = {"calls": 0, "input_tokens": 0, "output_tokens": 0}
        for path in sorted((self.out / "optimizer").glob(f"{prefix}*.usage.json")):
            for key, value in json.loads(path.read_text()).items():
                total[key] += value
        return total

    # --- the steps ------------------------------------------------------------------------
    def initial(self) -> None:
        for kind in self.kinds:
            if not self.guideline_path("v0", kind).exists():
                write_text(self.guideline_path("v0", kind), self.settings.initial_guideline[kind])
        self.timed(
            "round 0 (train: no compression, v0)",
            lambda: (self.episodes(NO_COMPRESSION, "train"), self.episodes("v0", "train")),
        )

    def ut(self) -> str:
        """UT: feedback per contrastive pair, k candidates from it, each scored on train; the best label."""
        plain = {e["task_id"]: e for e in self.episodes(NO_COMPRESSION, "train")}
        compressed = self.episodes("v0", "train")
        pairs = [e for e in compressed if plain[e["task_id"]]["success"] and not e["success"]]
        write_json(self.out / "contrastive.json", [e["task_id"] for e in pairs])
        if not pairs:
            return "v0"
        current = self.guideline("v0")
        feedback = []
        for episode in pairs:
            text = self.ask(
                f"ut-feedback-{episode['task_id']}",
                "feedback",
                feedback_request(episode, plain[episode["task_id"]], current),
            )
            write_text(self.out / "feedback" / f"{episode['task_id']}.md", text + "\n")
            feedback.append(f"--- task {episode['task_id']} ---\n{text}")
        k = self.settings.candidates
        for number in range(1, k + 1):
            for kind in self.kinds:
                path = self.guideline_path(f"ut-{number}", kind)
                if not path.exists():
                    answer = self.ask(
                        f"ut-update-{number}-{kind}",
                        "update",
                        update_request(kind, current[kind], "\n\n".join(feedback), number, k),
                    )
                    write_text(path, extract_guideline(answer))
        scores: list[dict[str, Any]] = [
            {"label": f"ut-{n}", "train": self.score(f"ut-{n}", "train")} for n in range(1, k + 1)
        ]
        best = max(scores, key=lambda c: (c["train"]["success"], -c["train"]["peak_tokens"], -int(c["label"][3:])))
        write_json(
            self.out / "candidates.json",
            {
                "candidates": scores,
                "best": best["label"],
                "rule": "highest success, then lowest mean peak tokens, then lowest number",
            },
        )
        return best["label"]

    def co(self, base: str) -> str | None:
        """CO: a shorter guideline from the compressor outputs of episodes that still succeed; its label."""
        succeeded = [e for e in self.episodes(base, "train") if e["success"] and e["compressor_calls"]]
        if not succeeded:
            return None
        current = self.guideline(base)
        for kind in self.kinds:
            path = self.guideline_path("co", kind)
            if not path.exists():
                outputs = [
                    (e["task_id"], [c["output"] for c in e["compressor_calls"] if c["kind"] == kind][-CO_OUTPUTS:])
                    for e in succeeded[:CO_EPISODES]
                ]
                answer = self.ask(f"co-shorten-{kind}", "shorten", shorten_request(kind, current[kind], outputs))
                write_text(path, extract_guideline(answer))
        self.episodes("co", "train")
        return "co"

    def score(self, label: str, split: str) -> dict[str, Any]:
        return score(self.episodes(label, split), self.settings.prices)

    def timed(self, phase: str, work) -> Any:
        started = time.perf_counter()
        result = work()
        self.timing[phase] = round(time.perf_counter() - started, 3)
        return result


def build_report(run: Run, rounds: list[tuple[str, str, str]], chosen: str) -> dict[str, Any]:
    """rounds: (round name, label, optimizer-usage prefix)."""
    rows = []
    for name, label, prefix in [("no compression", NO_COMPRESSION, ""), *rounds]:
        row = {
            "round": name,
            "label": label,
            "policy": run.policy_spec(label, relative=True),
            "train": run.score(label, "train"),
            "test": run.score(label, "test") if run.test else None,
            "optimizer": run.optimizer_usage(prefix) if prefix else None,
            "guideline_tokens": {k: get_counter().count_text(t) for k, t in run.guideline(label).items()}
            if label != NO_COMPRESSION
            else None,
        }
        rows.append(row)
    optimizer = run.optimizer_usage("")
    return {
        "settings": run.settings.model_dump(mode="json", exclude={"initial_guideline"}),
        # each role's sampling params as sent ({}: the server's defaults); a replay reads them from its cassette
        "sampling": {
            role: dict(getattr(log.inner, "sampling_params", {}) or {}) for role, log in sorted(run.roles.items())
        },
        "train_tasks": run.train,
        "test_tasks": run.test,
        "rounds": rows,
        "chosen": chosen,
        "chosen_guidelines": {kind: f"guidelines/chosen-{kind}.md" for kind in run.kinds},
        "optimizer_total": {**optimizer, "cost_usd": cost_usd(optimizer, run.settings.prices.get("optimizer"))},
    }


def optimize(settings: Settings, out: Path, models: dict[str, Any]) -> dict[str, Any]:
    run = Run(settings, out, models)
    run.initial()
    rounds = [("0: initial guideline", "v0", "")]
    best = "v0"
    if "ut" in settings.steps:
        best = run.timed("UT (feedback, candidates, scoring)", run.ut)
        rounds.append(("1: UT", best, "ut-"))
    chosen = best
    if "co" in settings.steps:
        shorter = run.timed("CO (shorten, scoring)", lambda: run.co(best))
        if shorter:
            rounds.append(("2: CO", shorter, "co-"))
            if run.score(shorter, "train")["success"] >= run.score(best, "train")["success"]:
                chosen = shorter
    for kind in run.kinds:
        write_text(run.guideline_path("chosen", kind), run.guideline(chosen)[kind])
    if run.test:
        run.timed(
            "test (every round)",
            lambda: [run.episodes(label, "test") for label in dict.fromkeys([NO_COMPRESSION, *(r[1] for r in rounds)])],
        )
    report = build_report(run, rounds, chosen)
    write_json(out / "report.json", report)
    write_text(out / "report.md", report_markdown(report))
    write_json(out / "timing.json", run.timing)  # wall-clock: the one file that differs between runs
    return report


# --- command line ----------------------------------------------------------------------------------
def initial_guidelines(values: list[str], kinds: tuple[str, ...]) -> dict[str, str]:
    """``--initial-guideline [KIND=]FILE`` (repeatable); unnamed applies to every kind; default: the prompt files."""
    texts = {kind: load_prompt(KINDS[kind][0]) for kind in kinds}
    for value in values:
        kind, sep, file = value.partition("=")
        targets = [kind] if sep and kind in KINDS else list(kinds)
        path = Path(file if sep and kind in KINDS else value)
        if not path.is_file() or not path.read_text(encoding="utf-8").strip():
            raise UsageError(f"--initial-guideline {value}: not a file with text")
        for target in targets:
            texts[target] = path.read_text(encoding="utf-8")
    return {kind: texts[kind] for kind in kinds}


def parse_prices(values: list[str]) -> dict[str, list[float]]:
    prices = {}
    for value in values:
        role, _, pair = value.partition("=")
        try:
            price = [float(p) for p in pair.split(",")]
        except ValueError:
            price = []
        if role not in ROLES or len(price) != 2 or min(price) < 0:
            raise UsageError(
                f"--price {value!r}: use ROLE=IN,OUT with ROLE one of {', '.join(ROLES)} (USD per 1M tokens)"
            )
        prices[role] = price
    return prices


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="erp-sim acon optimize", description=__doc__.splitlines()[0], formatter_class=PlainHelpFormatter
    )
    for role in ROLES:
        parser.add_argument(
            f"--{role}", required=True, help="API:MODEL as erp-sim eval's --agent (with --replay: the names recorded)"
        )
    parser.add_argument("--base-url", type=server_url, help="the server of every role (default: the API's own)")
    parser.add_argument(
        "--compressor-base-url",
        type=server_url,
        help="endpoint of the compressor alone (e.g. a local vLLM/Ollama model)",
    )
    parser.add_argument("--optimizer-base-url", type=server_url, help="endpoint of the optimizer alone")
    parser.add_argument("--tasks", required=True, help="train tasks: SET:train, SET or SET:id1,id2")
    parser.add_argument("--test-tasks", help="test tasks (default SET:test when --tasks is SET:train, else none)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--compression", choices=sorted(COMPRESSION), default="history")
    parser.add_argument("--t-hist", type=int, default=4096, help="T_hist, history tokens (default 4096, as in ACON)")
    parser.add_argument("--t-obs", type=int, default=1024, help="T_obs, observation tokens (default 1024, as in ACON)")
    parser.add_argument("--candidates", type=int, default=5, help="k candidate guidelines in UT (default 5)")
    parser.add_argument(
        "--steps", default="ut,co", help="ut,co (default), ut, co or none (evaluate the initial guideline)"
    )
    parser.add_argument("--initial-guideline", action="append", default=[], metavar="[KIND=]FILE")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--max-steps", type=positive(int), metavar="N", help=EpisodeSettings.model_fields["max_steps"].description
    )
    parser.add_argument("--price", action="append", default=[], metavar="ROLE=IN,OUT", help="USD per 1M tokens")
    parser.add_argument("--record", metavar="DIR", help="keep every model call in DIR/cassettes/ROLE.jsonl")
    parser.add_argument(
        "--replay",
        metavar="DIR",
        help="answer every model call from DIR/cassettes, offline (the role "
        "names and any model setting given must be the recorded ones)",
    )
    add_model_arguments(parser, ROLES)
    add_backend_arguments(parser)
    parser.add_argument("--resume", action="store_true", help="continue the run in --out")
    args = parser.parse_args(argv)
    if args.record and args.replay:
        parser.error("--record and --replay exclude each other")
    if args.candidates < 1:
        parser.error("--candidates must be at least 1")
    steps = [s.strip() for s in args.steps.split(",") if s.strip() and s.strip() != "none"]
    if any(s not in ("ut", "co") for s in steps):
        parser.error(f"--steps {args.steps!r}: use ut,co, ut, co or none")
    test_tasks = args.test_tasks or default_test_tasks(args.tasks)
    try:
        for selection in (args.tasks, test_tasks):
            if selection != "none":
                resolve_tasks(selection)
    except KeyError as exc:
        parser.error(exc.args[0])
    shared = overlapping_tasks(args.tasks, test_tasks)
    if shared:
        refuse(parser, overlap_message(args.tasks, test_tasks, shared))
    with usage_errors(parser):
        return _optimize_from_args(args, test_tasks, steps)


def _optimize_from_args(args: argparse.Namespace, test_tasks: str, steps: list[str]) -> int:
    model_params = params_by_role(args.model_param, ROLES)
    settings = Settings(
        agent=args.agent,
        compressor=args.compressor,
        optimizer=args.optimizer,
        tasks=args.tasks,
        test_tasks=test_tasks,
        compression=args.compression,
        t_hist=args.t_hist,
        t_obs=args.t_obs,
        candidates=args.candidates,
        steps=steps,
        seed=args.seed,
        max_steps=EpisodeSettings(max_steps=args.max_steps).step_limit(),
        initial_guideline=initial_guidelines(args.initial_guideline, COMPRESSION[args.compression]),
        prices=parse_prices(args.price),
        model_params=role_switches(model_params, args),
    )
    out = Path(args.out)
    config = out / "config.json"
    if config.exists():
        if not args.resume:
            raise UsageError(f"{config} exists: pass --resume to continue that run, or choose another --out")
        if Settings.model_validate_json(config.read_text(encoding="utf-8")) != settings:
            raise UsageError(f"{config} records other settings than these; --resume needs the same ones")
    models = role_models(args, settings.model_params)  # a refused replay or recording leaves no file behind
    write_text(config, settings.model_dump_json(indent=1) + "\n")
    started = time.perf_counter()
    report = optimize(settings, out, models)
    print(report_markdown(report))
    print(f"artefacts in {out}; {time.perf_counter() - started:.1f}s wall time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
