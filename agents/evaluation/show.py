"""``erp-sim show RUN_DIR TASK``: what the model was shown, step by step, what it did, and the tokens.

Reads ``RUN_DIR/results.jsonl`` to find the episode and its trajectory file, then prints the
trajectory's visible context (see ``erp_sim.agents.trajectory``). Without ``--step`` every
step lists the messages it showed by number, prints each message the first time it is
shown (cut to ``--width`` characters), marks messages a policy rewrote, summarized or
inserted, and ends with the action and its tokens. ``--step K`` prints step K's whole input
unabridged. At a step where an LLM summarizer built the context, its call follows: what it was
sent (its messages numbered ``s#N``, each printed the first time, as the agent's are) and what it
answered.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any

from erp_sim.agents.command_line import PlainHelpFormatter
from erp_sim.agents.evaluation.episode_row import RESULTS_FILE, EpisodeRow, load_results, results_dir
from erp_sim.agents.tokens import get_counter
from erp_sim.agents.tokens.prompt_cache import ModelCall
from erp_sim.agents.trajectory import Trajectory

MARKS = {
    "transcript": "",
    "rewritten": " [REWRITTEN by the policy]",
    "summary": " [SUMMARY written by the policy]",
    "inserted": " [INSERTED by the policy]",
}


class ShowError(Exception):
    """A one-line reason the episode cannot be shown."""


def find_episode(run_dir: Path, task: str, config: str | None, run: int | None) -> tuple[EpisodeRow, Trajectory]:
    if not (run_dir / RESULTS_FILE).is_file():
        raise ShowError(f"{run_dir} has no {RESULTS_FILE}: not an erp-sim eval directory")
    rows = [r for r in load_results(run_dir).rows if r.task_id == task]
    if not rows:
        raise ShowError(f"no episode of task {task!r} in {run_dir / RESULTS_FILE}")
    if config is not None:
        chosen = [r for r in rows if r.config.upper() == config.upper() or r.policy == config]
        if not chosen:  # say what there is, so the next try is right
            raise ShowError(
                f"{task} did not run in configuration {config!r}; it ran in "
                f"{', '.join(sorted({r.config for r in rows}))}"
            )
        rows = chosen
    if run is not None:
        chosen = [r for r in rows if r.run == run]
        if not chosen:
            raise ShowError(
                f"{task} has no run {run}{f' in {config}' if config else ''}; its runs: "
                f"{', '.join(str(n) for n in sorted({r.run for r in rows}))}"
            )
        rows = chosen
    choices = sorted({(r.config, r.run) for r in rows})
    if len({c for c, _ in choices}) > 1:
        raise ShowError(
            f"{task} ran in several configurations ({', '.join(sorted({c for c, _ in choices}))}): "
            "choose one with --config"
        )
    row = [r for r in rows if (r.config, r.run) == choices[0]][-1]
    path = run_dir / row.trajectory
    if not path.is_file():
        raise ShowError(f"trajectory file missing: {path}")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return row, Trajectory.model_validate(json.load(handle))


def render(row: EpisodeRow, trajectory: Trajectory, step: int | None = None, width: int = 300) -> str:
    counter = get_counter()
    context = trajectory.context
    outputs = [m for m in trajectory.messages if m.get("role") == "assistant"]
    succeeded = trajectory.grade is not None and trajectory.grade.success
    lines = [
        f"{trajectory.task_id} · config {row.config} (policy {trajectory.policy}) · run {row.run} · "
        f"agent {row.agent or '?'} · {'success' if succeeded else 'failure'} "
        f"({trajectory.failure_category or trajectory.termination}) · {len(trajectory.steps)} model calls"
    ]
    if not context.steps:
        lines.append("This trajectory has no visible context stored (it was run with keep_shown=False).")
        return "\n".join(lines) + "\n"
    if step is not None and not 0 <= step < len(context.steps):
        raise ShowError(f"--step {step} is out of range: this episode has steps 0-{len(context.steps) - 1}")
    printed: set[int] = set()
    printed_by_role: dict[str, set[int]] = {}
    for k in [step] if step is not None else range(len(context.steps)):
        record = trajectory.steps[k] if k < len(trajectory.steps) else None
        indices = context.steps[k]
        head = f"\n=== step {k}: shown {len(indices)} messages"
        if record is not None:
            head += f", {record.input_tokens:,} input tokens (o200k, messages + tool schemas)" + _call_costs(record)
        lines.append(head + " ===")
        lines.append("shown: " + _ranges(indices, context.origins))
        for index in indices:
            if step is None and index in printed:
                continue
            printed.add(index)
            message = context.messages[index]
            lines.append(
                f"  #{index} {message.get('role')}{MARKS.get(context.origins[index], '')} "
                f"({counter.count_message(message):,} tok): {_cut(_text(message), width if step is None else None)}"
            )
        if k < len(outputs):
            tokens = f" ({record.output_tokens:,} output tokens)" if record else ""
            lines.append(f"  → did{tokens}: {_text(outputs[k])}")
        for call in record.role_calls if record is not None else ():
            lines.append(
                f"  {call.role} model call: {call.input_tokens:,} input tokens (o200k){_call_costs(call)}, "
                f"{call.output_tokens:,} output"
            )
            seen = printed_by_role.setdefault(call.role, set())
            lines += _sent_and_answered(
                trajectory, call, seen if step is None else set(), width if step is None else None
            )
    if step is None:
        m = trajectory.metrics
        lines.append(
            f"\ntotal: {m.input_tokens:,} input tokens, {m.output_tokens:,} output tokens, peak {m.peak_tokens:,}"
            f", cacheable prefix {m.cacheable_prefix_tokens:,}{_share(m.cacheable_prefix_tokens, m.input_tokens)}"
            f"; summarizer {m.summarizer_calls} calls / {m.summarizer_tokens:,} tokens"
            f"; LLM user {m.user_model_calls} calls / {m.user_input_tokens + m.user_output_tokens:,} tokens"
            " (o200k counts throughout)"
        )
    return "\n".join(lines) + "\n"


def _sent_and_answered(trajectory: Trajectory, call: ModelCall, printed: set[int], width: int | None) -> list[str]:
    """What a kept role's call was sent and answered (``Trajectory.role_contexts``), its messages numbered
    ``s#N`` (the role's initial) and each printed in full once (cut to ``width``); none for a call not kept."""
    context = trajectory.role_contexts.get(call.role)
    if context is None or call.request is None or call.answer is None:
        return []
    mark = f"{call.role[:1]}#"
    sent = context.steps[call.request]
    lines = [f"    {call.role} was sent: " + ", ".join(f"{mark}{index}" for index in sent)]
    for index in sent:
        if index not in printed:
            printed.add(index)
            message = context.messages[index]
            lines.append(
                f"      {mark}{index} {message.get('role')} ({context.tokens[index]:,} tok): {_cut(_text(message), width)}"
            )
    answer = f"    {call.role} answered {mark}{call.answer}"
    if call.answer in printed:  # the same answer as an earlier call's
        return [*lines, answer + " (printed above)"]
    printed.add(call.answer)
    text = _cut(_text(context.messages[call.answer]), width)
    return [*lines, f"{answer} ({context.tokens[call.answer]:,} tok): {text}"]


def _cut(text: str, width: int | None) -> str:
    return text if width is None or len(text) <= width else text[:width] + f"… ({len(text):,} chars)"


def _share(part: int, whole: int) -> str:
    return f" ({part / whole:.0%})" if whole else ""


def _call_costs(call) -> str:
    """The cacheable prefix of a call (a StepRecord or a ModelCall) and the service's own figures beside ours."""
    text = (
        f", cacheable prefix {call.cacheable_prefix_tokens:,}{_share(call.cacheable_prefix_tokens, call.input_tokens)}"
    )
    if call.reported_input_tokens:
        spread = call.reported_input_tokens / call.input_tokens - 1 if call.input_tokens else 0.0
        text += f"; the service reported {call.reported_input_tokens:,} input ({spread:+.1%} vs o200k)"
    if call.provider_cached_tokens is not None:
        text += f", {call.provider_cached_tokens:,} cached"
    written = getattr(call, "provider_cache_write_tokens", None)
    if written is not None:  # a service that bills cache writes (the Messages API)
        text += f", {written:,} written to its cache"
    reasoning = getattr(call, "reasoning_tokens", None)
    if reasoning is not None:
        text += f", {reasoning:,} reasoning tokens"
    return text


def _ranges(indices: list[int], origins: list[str]) -> str:
    """``#0-#7, #9 (summary), #12 (rewritten)``: runs of transcript messages collapsed."""
    parts: list[str] = []
    start = prev = None
    for index in [*indices, None]:
        plain = index is not None and origins[index] == "transcript"
        if plain and prev is not None and index == prev + 1:
            prev = index
            continue
        if start is not None:
            parts.append(f"#{start}" if start == prev else f"#{start}-#{prev}")
            start = prev = None
        if index is None:
            break
        if plain:
            start = prev = index
        else:
            parts.append(f"#{index} ({origins[index]})")
    return ", ".join(parts)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False) if content else ""
    calls = [
        f"{c['function']['name']}({c['function'].get('arguments') or ''})" for c in message.get("tool_calls") or []
    ]
    if message.get("role") == "tool":
        text = f"[{message.get('name')} {message.get('tool_call_id')}] {text}"
    return " ".join(part for part in (text.replace("\n", "⏎ "), "; ".join(calls)) if part)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="erp-sim show", description=__doc__.splitlines()[0], formatter_class=PlainHelpFormatter
    )
    parser.add_argument(
        "run_dir", metavar="RUN_DIR", type=results_dir, help="an erp-sim eval --out directory (or its results.jsonl)"
    )
    parser.add_argument("task", metavar="TASK", help="task id, e.g. hotel-003")
    parser.add_argument("--config", help="configuration or policy spec (needed when the task ran in several)")
    parser.add_argument("--run", type=int, help="run number (default: the first)")
    parser.add_argument("--step", type=int, help="print only step K, unabridged (default: every step, messages cut)")
    parser.add_argument("--width", type=int, default=300, help="characters of each message printed (default 300)")
    args = parser.parse_args(argv)
    try:
        row, trajectory = find_episode(Path(args.run_dir), args.task, args.config, args.run)
        sys.stdout.write(render(row, trajectory, args.step, args.width))
    except ShowError as error:
        print(f"erp-sim show: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
