"""``erp-sim view RUN_DIR``: one self-contained HTML page for an evaluation run.

The page needs no server and makes no request: CSS, JavaScript, plots and data are inline.
It has three views, addressed by the URL's fragment so they can be linked and bookmarked:

- ``#overview``: the results table with 95% intervals, the plots, the failure taxonomy and a
  filterable list of episodes (configuration, task, outcome or failure category, expense type);
  every number links to the episodes behind it.
- ``#episode/I``: one episode's steps as a timeline (tool calls, user turns, errors) and, for
  the selected model call, what the model was shown: kept messages, pruned ones greyed out,
  summaries and rewritten tool results marked, tokens per message, and what an LLM summarizer
  was sent and answered while building it (folded until opened); charts of the context size
  and of the work left over the calls (the workflow's progress control: itemization's remaining amount, bank
  reconciliation's unreconciled difference); the final grade with its collateral changes.
- ``#compare/I/J``: the same task under two configurations, aligned by model call, with the
  calls where the actions or the contexts diverge marked.

Size: every distinct message of the run is stored once (a deterministic agent repeats whole
episodes across runs, and configurations share most tool results), in gzip-compressed chunks
that the browser inflates with ``DecompressionStream`` only when an episode needs them; each
episode's own record (which messages it was shown at each call) is compressed separately and
inflated when the episode is opened.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import html
import json
import sys
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from itertools import islice
from pathlib import Path
from typing import Any

from erp_sim import formstate, workflows
from erp_sim.agents.command_line import PlainHelpFormatter
from erp_sim.agents.evaluation import statistics as st
from erp_sim.agents.evaluation.attempts import latest_attempts
from erp_sim.agents.evaluation.episode_row import RESULTS_FILE, EpisodeRow, load_results, results_dir
from erp_sim.agents.evaluation.report.formats import success_label
from erp_sim.agents.tokens import count_message, message_text
from erp_sim.response import read_json
from erp_sim.task_sets import get_task, workflow_of

VIEW_FILE = "view.html"
PAGE_DIR = Path(__file__).with_name("viewer")
#: Messages are packed into chunks of about this many characters before compression: small
#: enough that opening one episode inflates little, large enough that gzip sees repetition.
CHUNK_CHARS = 400_000


# --- the run's messages, each stored once ------------------------------------------------------
class MessageTable:
    """Distinct messages of a run, numbered in first-seen order, with their o200k token counts."""

    def __init__(self) -> None:
        self.rows: list[list[Any]] = []
        self._ids: dict[tuple, int] = {}
        self._tool_states: dict[tuple[int, tuple[str, ...]], tuple[bool, str | None]] = {}

    def add(self, message: dict[str, Any], known_tokens: dict[tuple, int] | None = None) -> int:
        """The message's id; a new message's count comes from ``known_tokens`` (by ``row_key``,
        what the trajectory stored) and is only counted here when the trajectory lacks it."""
        row = _message_row(message)
        key = row_key(row)
        found = self._ids.get(key)
        if found is None:
            tokens = (known_tokens or {}).get(key)
            if tokens is None:
                tokens = count_message(message)
            found = self._ids[key] = len(self.rows)
            self.rows.append([*row, tokens])
        return found

    def tool_result_state(self, message_id: int, progress_controls: tuple[str, ...]) -> tuple[bool, str | None]:
        """``_tool_result_state`` of a stored message, parsed once per run: the configurations of a run
        meet the same tool results (a deterministic agent's, on the same task)."""
        state = self._tool_states.get((message_id, progress_controls))
        if state is None:
            state = _tool_result_state(self.rows[message_id][1], progress_controls)
            self._tool_states[message_id, progress_controls] = state
        return state

    def chunks(self) -> tuple[list[str], list[int]]:
        """(compressed base64 chunks, first message id of each chunk)."""
        blobs: list[str] = []
        starts: list[int] = []
        batch: list[list[Any]] = []
        size = 0
        for index, row in enumerate(self.rows):
            if not batch:
                starts.append(index)
            batch.append(row)
            size += len(row[1]) + 64
            if size >= CHUNK_CHARS:
                blobs.append(_pack(batch))
                batch, size = [], 0
        if batch:
            blobs.append(_pack(batch))
        return blobs, starts


def _message_row(message: dict[str, Any]) -> list[Any]:
    """[role, text, tool calls]: the calls of an assistant message as [name, arguments] pairs.

    Call ids are left out: real services make them up at random, and keeping them would store
    the same tool result once per episode instead of once per run.
    """
    calls = [
        [(call.get("function") or {}).get("name", ""), (call.get("function") or {}).get("arguments", "")]
        for call in message.get("tool_calls") or []
    ]
    return [str(message.get("role", "")), message_text(message.get("content")), calls or None]


def row_key(row: list[Any]) -> tuple:
    """What makes two messages the same message on the page (role, text, calls)."""
    return (row[0], row[1], tuple(map(tuple, row[2] or ())))


def _pack(value: Any) -> str:
    raw = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode()


# --- one episode ---------------------------------------------------------------------------------
class _ShownContexts:
    """The stored visible context of an episode (``Trajectory.context``: each distinct message once with its
    origin, transcript, rewritten, summary or inserted, and per call the indices of what it showed), read
    call by call against the transcript so far (``marks``)."""

    def __init__(self, context: dict[str, Any], table: MessageTable, known: dict[tuple, int]) -> None:
        self.messages: list[dict[str, Any]] = context.get("messages") or []
        origins = context.get("origins") or []
        self.origins: list[str | None] = [origins[i] if i < len(origins) else None for i in range(len(self.messages))]
        self.steps: list[list[int]] = context["steps"]
        self.ids = [table.add(m, known) for m in self.messages]  # each distinct message once, not once per call
        self._last_indices: list[int] = []
        self._last_run = 0

    @classmethod
    def of(cls, trajectory: dict[str, Any], table: MessageTable, known: dict[tuple, int]) -> _ShownContexts | None:
        """None when the run did not keep what the model was shown."""
        context = trajectory.get("context")
        if not isinstance(context, dict) or not context.get("steps"):
            return None
        return cls(context, table, known)

    def marks(self, call: int, prefix: _Transcript) -> tuple[int, list[list[Any]], list[list[int]]]:
        """``_marks`` of call ``call``'s context. Its leading run of messages shown as the transcript holds them
        goes on from the last call's where the two calls' lists start alike (full history's calls extend the
        last one's list, and the transcript only grows), so finding it costs the new messages only."""
        indices = self.steps[call]
        run = self._last_run
        if indices[:run] != self._last_indices[:run]:
            run = 0
        ids, origins, standing = self.ids, self.origins, prefix.ids
        while (
            run < len(indices)
            and run < len(standing)
            and ids[indices[run]] == standing[run]
            and origins[indices[run]] in ("transcript", None, "")
        ):
            run += 1
        self._last_indices, self._last_run = indices, run
        rest = [(ids[i], self.messages[i], origins[i]) for i in indices[run:]]
        return _marks(prefix, run, rest)


def _tool_result_state(text: str, progress_controls: tuple[str, ...]) -> tuple[bool, str | None]:
    """(is an error, the work left shown: the value of the first of the workflow's progress controls on the
    form) of a tool result text."""
    parsed = formstate.parse_response(text)
    if parsed is None:
        return False, None
    is_error = bool(parsed.get("Error")) or "InvalidAction" in str(parsed.get("Result", ""))[:40]
    form = (parsed.get("FormState") or {}).get("Form")
    shown = (formstate.find_control(form, name) for name in progress_controls)
    control = next((found for found in shown if found is not None), None)
    return is_error, None if control is None else str(control.get("Value"))


class _Transcript:
    """The transcript up to the current model call, indexed for ``_marks`` and grown one message
    at a time, so an episode is read in time linear in what it stored (not once per call)."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.ids: list[int] = []  # the message id at each position
        self.positions: dict[int, list[int]] = {}  # message id -> its positions (the same message can recur)
        self.by_call: dict[Any, int] = {}  # tool_call_id -> position of its result

    def append(self, message: dict[str, Any], message_id: int) -> None:
        position = len(self.messages)
        self.messages.append(message)
        self.ids.append(message_id)
        self.positions.setdefault(message_id, []).append(position)
        if message.get("tool_call_id"):
            self.by_call[message["tool_call_id"]] = position


def _marks(
    prefix: _Transcript, run: int, rest: list[tuple[int, dict[str, Any], str | None]]
) -> tuple[int, list[list[Any]], list[list[int]]]:
    """A call's context against the transcript so far: how many leading messages were shown as the
    transcript holds them (``run``), each of the others (``rest``: message id, message, origin) as
    [message id, mark, transcript position], and the transcript positions the model did not see, as
    [start, end) ranges.

    The page lists the run again ([transcript id, "kept", position] for each position below it),
    which is what the rule below gives those messages, and the ranges' positions: full history shows
    the whole transcript at every call, and a pruning policy hides most of it, so listing either
    would make the page, and the time to build it, grow with the square of the episode's length.

    Marks are the recorded origins (``kept`` for a transcript message passed on unchanged,
    ``rewritten``, ``summary``, ``inserted``); the position says where a kept or rewritten
    message stands in the transcript, so the page can grey out what was dropped around it.
    """
    used: set[int] = set()  # positions from the run on already given to an earlier copy shown in this call
    seen_positions: set[int] = set()
    last_position = run - 1
    shown: list[list[Any]] = []
    for index, (message_id, message, origin) in enumerate(rest, start=run):
        position = _free_position(prefix.positions.get(message_id, []), used, last_position, run)
        if position is not None:
            used.add(position)
        elif message.get("tool_call_id") in prefix.by_call:
            position = prefix.by_call[message["tool_call_id"]]  # a tool result the policy rewrote
        elif index < 2 and index < len(prefix.messages) and prefix.messages[index].get("role") == message.get("role"):
            position = index  # the system prompt or the instruction with a summary folded into it
        mark = {"transcript": "kept"}.get(origin or "", origin) or (
            "kept" if message_id in prefix.positions else "rewritten"
        )
        if position is not None and mark != "inserted":
            seen_positions.add(position)
            last_position = max(last_position, position)
        shown.append([message_id, mark, position])
    pruned: list[list[int]] = []
    start = run
    for position in sorted(seen_positions):
        if position > start:
            pruned.append([start, position])
        start = max(start, position + 1)
    if start < len(prefix.messages):
        pruned.append([start, len(prefix.messages)])
    return run, shown, pruned


def _free_position(positions: list[int], used: set[int], last_position: int, first_free: int = 0) -> int | None:
    """Where a kept message stands: policies keep the transcript's order, so the first of its
    positions after the last match that no earlier copy in this call took (else the first free one).
    Positions below ``first_free`` are taken (the call's leading run; ``last_position`` is past them)."""
    if len(positions) == 1:  # the usual case: a message stands once in the transcript
        return None if positions[0] < first_free or positions[0] in used else positions[0]
    # positions ascend: the search starts after the last match (a message repeated at every call, e.g. the
    # same page click, has one position per call: scanning them all at each of its showings was cubic)
    after = bisect_right(positions, last_position)
    if after < len(positions) and positions[after] not in used:  # the usual case: the next one along
        return positions[after]
    following = next((p for p in islice(positions, after, None) if p not in used), None)
    if following is not None:
        return following
    return next((p for p in islice(positions, bisect_left(positions, first_free), after) if p not in used), None)


def _stored_tokens(
    trajectory: dict[str, Any], messages: list[dict[str, Any]], steps: list[dict[str, Any]]
) -> dict[tuple, int]:
    """Token counts the trajectory already holds, by ``row_key``: each shown message's
    (``context.tokens``, and ``role_contexts``' for the summarizer's) and each assistant message's (its call's
    ``output_tokens``)."""
    known: dict[tuple, int] = {}
    role_contexts = trajectory.get("role_contexts")
    kept = list(role_contexts.values()) if isinstance(role_contexts, dict) else []
    for context in [trajectory.get("context"), *kept]:
        if isinstance(context, dict) and len(context.get("tokens") or ()) == len(context.get("messages") or ()):
            for message, tokens in zip(context["messages"], context["tokens"]):
                if isinstance(message, dict) and isinstance(tokens, int):
                    known[row_key(_message_row(message))] = tokens
    outputs = iter(step.get("output_tokens") for step in steps if isinstance(step, dict))
    for message in messages:
        if message.get("role") == "assistant":
            tokens = next(outputs, None)
            if isinstance(tokens, int):
                known.setdefault(row_key(_message_row(message)), tokens)
    return known


def episode_record(row: EpisodeRow, trajectory: dict[str, Any] | None, table: MessageTable) -> dict[str, Any]:
    """What the episode view draws: transcript ids, per-call contexts, timeline, charts, grade."""
    record: dict[str, Any] = {
        "grade": row.grade.model_dump(mode="json") if row.grade is not None else {},
        "termination": row.termination,
        "failure_category": row.failure_category,
        "infra_error": row.infra_error,
        "metrics": row.metrics.model_dump(mode="json"),
    }
    face = workflows.harness(workflow_of(row.task_set, fallback=True))
    record["progress_label"] = face.labels.get("progress", "work left")
    if trajectory is None:
        record.update(transcript=[], calls=[], events=[], progress=[])
        return record
    messages = [m for m in trajectory.get("messages") or [] if isinstance(m, dict)]
    steps = trajectory.get("steps") or []
    known = _stored_tokens(trajectory, messages, steps)
    transcript = [table.add(m, known) for m in messages]
    contexts = _ShownContexts.of(trajectory, table, known)
    requests = _RoleRequests.of(trajectory, table, known)
    prefix = _Transcript()
    calls, events, progress = [], [], []
    call = -1
    for position, message in enumerate(messages):
        role, text, tool_calls = _message_row(message)
        if role == "assistant":
            call += 1
            step = steps[call] if call < len(steps) else {}
            entry = {
                "assistant": position,
                "input_tokens": step.get("input_tokens"),
                "output_tokens": step.get("output_tokens"),
                "summarizer_tokens": step.get("summarizer_tokens", 0),
                **_call_costs(step, requests),
            }
            if contexts is not None and call < len(contexts.steps):
                entry["kept"], entry["shown"], entry["pruned_ranges"] = contexts.marks(call, prefix)
            calls.append(entry)
            for name, arguments in tool_calls or []:
                events.append({"call": call, "kind": "tool", "name": name, "text": arguments, "at": position})
            if not tool_calls:
                events.append({"call": call, "kind": "agent", "text": text, "at": position})
        elif role == "tool":
            is_error, shown_left = table.tool_result_state(transcript[position], face.progress_controls)
            if is_error:
                events.append({"call": call, "kind": "error", "text": text[:300], "at": position})
            if shown_left is not None:
                progress.append([call, shown_left])
        elif role == "user" and position > 1:
            events.append({"call": call, "kind": "user", "text": text, "at": position})
        prefix.append(message, transcript[position])
    record.update(transcript=transcript, calls=calls, events=events, progress=progress)
    if isinstance(trajectory.get("grade"), dict) and trajectory["grade"]:
        record["grade"] = trajectory["grade"]  # the full grade; results rows keep a digest
    return record


COST_FIELDS = (
    "cacheable_prefix_tokens",
    "reported_input_tokens",
    "provider_cached_tokens",
    "provider_cache_write_tokens",  # the Messages API's cache writes (absent elsewhere)
    "reasoning_tokens",
)
# a call's fields the page always gets (None: not reported); the others only where a service reported them
REQUIRED_CALL_FIELDS = ("role", "input_tokens", "output_tokens", *COST_FIELDS[:3])


def _call_costs(step: dict[str, Any], requests: _RoleRequests | None = None) -> dict[str, Any]:
    """A model call's cacheable prefix (o200k) and the service's own counts, and the other roles' calls of the
    step, with what a kept role's call was sent and answered (``requests``)."""
    costs = {key: step.get(key) for key in COST_FIELDS if step.get(key) is not None}
    role_calls = [
        {
            **{
                key: call.get(key)
                for key in ("role", "input_tokens", "output_tokens", *COST_FIELDS)
                if key in REQUIRED_CALL_FIELDS or call.get(key) is not None
            },
            **(requests.of_call(call) if requests is not None else {}),
        }
        for call in step.get("role_calls") or []
        if isinstance(call, dict)
    ]
    return {**costs, "role_calls": role_calls} if role_calls else costs


class _RoleRequests:
    """What the kept roles' calls were sent and answered (``Trajectory.role_contexts``: stored as the agent's
    context is), as message ids of the run's table."""

    def __init__(self, contexts: dict[str, dict[str, Any]], table: MessageTable, known: dict[tuple, int]) -> None:
        self.ids = {role: [table.add(m, known) for m in c.get("messages") or []] for role, c in contexts.items()}
        self.steps = {role: c.get("steps") or [] for role, c in contexts.items()}

    @classmethod
    def of(cls, trajectory: dict[str, Any], table: MessageTable, known: dict[tuple, int]) -> _RoleRequests | None:
        """None when no role's calls were kept (offline summaries, an older trajectory)."""
        contexts = trajectory.get("role_contexts")
        if not isinstance(contexts, dict) or not contexts:
            return None
        return cls({role: c for role, c in contexts.items() if isinstance(c, dict)}, table, known)

    def of_call(self, call: dict[str, Any]) -> dict[str, Any]:
        """``{"sent": [message ids], "answer": message id}`` of a kept call, else nothing."""
        role, request, answer = call.get("role"), call.get("request"), call.get("answer")
        if role not in self.ids or not isinstance(request, int) or not isinstance(answer, int):
            return {}
        ids = self.ids[role]
        return {"sent": [ids[i] for i in self.steps[role][request]], "answer": ids[answer]}


def _episode_record_despite_its_file(
    row: EpisodeRow, trajectory: dict[str, Any] | None, table: MessageTable
) -> dict[str, Any]:
    """``episode_record``; for a trajectory file that is JSON but not as erp-sim writes it (edited or mixed by
    hand), the record without it, said on stderr: one broken file does not cost the page its other episodes."""
    try:
        return episode_record(row, trajectory, table)
    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as error:
        print(
            f"erp-sim view: {row.trajectory} is not a trajectory as erp-sim writes it "
            f"({type(error).__name__}: {error}); its episode is shown without it",
            file=sys.stderr,
        )
        return episode_record(row, None, table)


def _read_trajectory(run_dir: Path, row: EpisodeRow) -> dict[str, Any] | None:
    if not row.trajectory:
        return None
    path = run_dir / row.trajectory
    try:
        with gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8") as stream:
            loaded = read_json(stream.read())
    except (OSError, ValueError, RecursionError):
        return None
    return loaded if isinstance(loaded, dict) else None


# --- the overview ----------------------------------------------------------------------------------
#: The task facts the page's columns and filters show, where the task's workflow logs them (``info["task"]``).
PAGE_TASK_FACTS = ("expense_type", "difficulty")


def _task_facts(task_set: str, task_id: str) -> dict[str, str]:
    try:
        task = get_task(task_set, task_id)
        fields = workflows.of_task(task).task_info(task)
    except Exception:  # a results file from another fixture version: show the row without facts
        return {}
    return {name: str(fields[name]) for name in PAGE_TASK_FACTS if name in fields}


def _estimate(estimate: st.Estimate) -> list[float | None]:
    def finite(value: float) -> float | None:
        return value if value == value and abs(value) != float("inf") else None

    return [finite(estimate.mean), finite(estimate.low), finite(estimate.high)]


def overview(rows: list[EpisodeRow], run_dir: Path) -> dict[str, Any]:
    summaries = st.summarize(rows)
    metrics = [
        {
            "key": m.key,
            "label": f"{success_label(row.task_set for row in rows)} rate" if m.key == "success" else m.label,
            "per_benchmark": m.per_benchmark,
            "percent": m.upper == 1.0 or m.key == "itemized_amount",
        }
        for m in st.METRICS
        if any(m.key in s.estimates for s in summaries.values())
    ]
    configs = [
        {
            "config": s.config,
            "policy": s.policy,
            "agent": s.agent,
            "user": s.user,
            "n_runs": s.n_runs,
            "n_episodes": s.n_episodes,
            "n_infra_errors": s.n_infra_errors,
            "interval": s.interval_method,
            "estimates": {key: _estimate(e) for key, e in s.estimates.items()},
        }
        for s in summaries.values()
    ]
    facts: dict[tuple[str, str], dict[str, str]] = {}
    episodes = []
    for index, row in enumerate(rows):
        key = st.task_key(row)
        if key not in facts:
            facts[key] = _task_facts(*key)
        outcome = (
            "infra_error"
            if st.is_infra_error(row)
            else ("success" if st.succeeded(row) else row.failure_category or "failure")
        )
        episodes.append(
            {
                "i": index,
                "config": row.config,
                "task_set": key[0],
                "task_id": key[1],
                "run": row.run,
                **facts[key],
                "outcome": outcome,
                "strict": row.grade is not None and row.grade.strict_success,
                "steps": row.metrics.steps,
                "input_tokens": row.metrics.input_tokens,
                "peak_tokens": row.metrics.peak_tokens,
            }
        )
    agents = {row.agent for row in rows}
    plots = [
        {
            "name": path.stem.replace("_", " "),
            "data": "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode(),
        }
        for path in sorted(run_dir.glob("*.png"))
    ]
    return {
        "title": run_dir.resolve().name,
        "metrics": metrics,
        "configs": configs,
        "episodes": episodes,
        "plots": plots,
        "scripted": all(agent.startswith("scripted") for agent in agents),
        "agents": sorted(agents),
    }


# --- the page ----------------------------------------------------------------------------------------
def _script(element_id: str, payload: str, kind: str = "application/json") -> str:
    safe = payload.replace("</", "<\\/")  # JSON inside <script> must not close the element early
    return f'<script type="{kind}" id="{element_id}">{safe}</script>'


def build_page(run_dir: str | Path, rows: Iterable[EpisodeRow] | None = None) -> str:
    run_dir = Path(run_dir)
    rows = st.canonical_order(rows if rows is not None else latest_attempts(load_results(run_dir).rows))
    table = MessageTable()
    records = [_pack(_episode_record_despite_its_file(row, _read_trajectory(run_dir, row), table)) for row in rows]
    chunks, starts = table.chunks()
    data = overview(rows, run_dir)
    data["chunk_starts"] = starts
    parts = [_script("overview-data", json.dumps(data, ensure_ascii=False, separators=(",", ":")))]
    parts += [_script(f"chunk-{i}", blob, "application/gzip-base64") for i, blob in enumerate(chunks)]
    parts += [_script(f"episode-{i}", blob, "application/gzip-base64") for i, blob in enumerate(records)]
    page = (PAGE_DIR / "page.html").read_text(encoding="utf-8")
    return (
        page.replace("{{title}}", html.escape(f"erp-sim run: {data['title']}"))
        .replace("{{style}}", (PAGE_DIR / "page.css").read_text(encoding="utf-8"))
        .replace("{{script}}", (PAGE_DIR / "page.js").read_text(encoding="utf-8"))
        .replace("{{data}}", "\n".join(parts))
    )


def write_view(run_dir: str | Path, out: str | Path | None = None, rows: Iterable[EpisodeRow] | None = None) -> Path:
    """Write the page (default ``RUN_DIR/view.html``) and return its path."""
    run_dir = Path(run_dir)
    path = Path(out) if out else run_dir / VIEW_FILE
    path.write_text(build_page(run_dir, rows), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="erp-sim view", description=__doc__.split("\n\n")[0], formatter_class=PlainHelpFormatter
    )
    parser.add_argument(
        "run_dir",
        type=results_dir,
        help="a directory with results.jsonl (written by erp-sim eval or sweep), or the file",
    )
    parser.add_argument("--out", help=f"the HTML file to write (default RUN_DIR/{VIEW_FILE})")
    args = parser.parse_args(argv)
    if not (Path(args.run_dir) / RESULTS_FILE).is_file():
        print(f"erp-sim view: no {RESULTS_FILE} in {args.run_dir}", file=sys.stderr)
        return 2
    read = load_results(args.run_dir)
    for problem in read.refused:
        print(f"erp-sim view: skipped {problem}", file=sys.stderr)
    if not read.rows:
        print(f"erp-sim view: no results in {args.run_dir}/{RESULTS_FILE}", file=sys.stderr)
        return 2
    rows = latest_attempts(read.rows)
    path = write_view(args.run_dir, args.out, rows)  # the rows read above, not the results file read again
    print(f"{len(rows)} episodes; wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
