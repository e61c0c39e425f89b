"""One evaluation row per episode (configuration x task x run): the typed contract of ``results.jsonl``.

``EpisodeRow`` is written by the evaluator (``evaluate.run_spec``) and read, through the one parse
point :func:`parse_row` (:func:`load_results`), by statistics, the report, costs, the run page,
``show``, ``scale``, ACON and the memory runs: readers use attributes, so renaming a field is an
AttributeError (and a mypy error) where it is read, never a metric that silently turns into NaN.

Reading files written by earlier versions: fields were only ever added, so every field added after
the first results files has a default, and an older row (no ``seed``, ``user``, ``model_error``,
``sampling``, newer ``metrics`` counts...) loads with those defaults. Every model is
``extra="forbid"``: an unknown key is a renamed or misspelt field (or a file from a newer version),
and ignoring it would put the field's default in its place, the silent wrong number this module
exists to prevent; such a line is refused with a one-line message naming it, as a torn line is.

``dump()`` gives back the JSON object the writer produced, key for key and in order (a row without
a grade stores ``"grade": {}``; ``attempt``/``attempts``, ``episode`` and ``memory`` appear only
when set), so rewriting a results file through the model changes no byte.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_serializer, field_validator

from erp_sim.agents.memory.consolidate import Consolidation
from erp_sim.agents.trajectory import EpisodeMetrics, KnownFailure
from erp_sim.agents.types import unset
from erp_sim.outcomes import Termination
from erp_sim.verbosity import Verbosity

TaskKey = tuple[str, str]  # (task_set, task_id)
EpisodeKey = tuple[str, str, str, int]  # (config, task_set, task_id, run)
_FORBID = ConfigDict(extra="forbid")
RESULTS_FILE = "results.jsonl"
UNKNOWN = "unknown field (renamed, misspelt, or from another version)"
#: One literal (not a union), so that a wrong value is one error naming the field.
RowTermination = Literal[Termination, ""]


class RowGrade(BaseModel):
    """The part of the ERP's grade (the workflow's grade model, ``erp_sim.Grade`` for itemization) a results row
    keeps: every workflow's verdicts and collateral changes, and itemization's figures where the grade has them."""

    model_config = _FORBID
    success: bool
    strict_success: bool
    itemized_fraction: float | None = Field(
        None, exclude_if=unset, description="Itemization's (None: not in the grade)."
    )
    remaining_amount: str | None = Field(None, exclude_if=unset, description="Itemization's (None: not in the grade).")
    collateral: list[str] = Field(default_factory=list, description="Collateral changes ([]: none, or not checked).")


#: Grade fields a row keeps, in the grade's order (the writer's ``include``).
GRADE_FIELDS = frozenset(RowGrade.model_fields)


class RowMetrics(EpisodeMetrics):
    """The trajectory's per-episode counts, refusing a key they do not have (see the module docstring)."""

    model_config = _FORBID


class RowSampling(BaseModel):
    """Each model role's settings (``roles.ModelSettings`` as dumped, None where no model plays it),
    the episode's settings (``settings.EpisodeSettings.sampling``: the context window, the env's step limit
    and verbosity; None in rows written before they were stored) and the cassette directory. A role's entry stays a mapping: its request
    params are any ``--model-param`` keys, and rows before the model manifest stored them flat."""

    model_config = _FORBID
    agent: dict[str, Any] | None = None
    user: dict[str, Any] | None = None
    summarizer: dict[str, Any] | None = None
    context_window: int | None = None
    max_steps: int | None = None
    verbosity: Verbosity | None = None
    cassettes: str | None = None
    served_models: dict[str, list[str]] | None = Field(
        None,
        exclude_if=unset,
        description="Role -> the models the services named in their answers (absent: none named, as offline).",
    )


class RowTiming(BaseModel):
    """Wall-clock figures (seconds): never deterministic, left out when rows are compared."""

    model_config = _FORBID
    wall_time_s: float | None = Field(None, exclude_if=unset)
    model_time_s: float | None = Field(None, exclude_if=unset)


class AttemptSummary(BaseModel):
    """What an earlier attempt of the episode leaves in the row that counts."""

    model_config = _FORBID
    attempt: int
    termination: RowTermination | None = None
    infra_error: str | None = None
    model_error: str | None = None


class EpisodeRow(BaseModel):
    """One line of ``results.jsonl``: an episode's identity, grade, costs, ending and provenance."""

    model_config = _FORBID
    config: str
    policy: str
    user: str = ""
    agent: str = ""
    task_set: str = ""
    split: str | None = Field(
        None,
        exclude_if=unset,
        description="The split --tasks selected (train, test; SET:SPLIT), absent otherwise and in rows written "
        "before it was kept.",
    )
    task_id: str
    run: int = 0
    seed: int | None = None
    grade: RowGrade | None = Field(None, description="None (stored as {}): no grade, e.g. an unscored episode.")
    metrics: RowMetrics = Field(default_factory=RowMetrics)
    termination: RowTermination = Field("", description="How the episode ended; empty only in rows of unfinished runs.")
    failure_category: KnownFailure | None = None
    infra_error: str | None = Field(None, description="Set: the episode is not scored; --resume runs it again.")
    model_error: str | None = None
    trajectory: str = Field("", description="The gzipped trajectory, relative to the run directory.")
    sampling: RowSampling = Field(default_factory=RowSampling)
    timing: RowTiming = Field(default_factory=RowTiming)
    episode: int | None = Field(None, exclude_if=unset, description="Position in a --sequential run.")
    memory: Consolidation | None = Field(None, exclude_if=unset, description="--sequential: the consolidation.")
    attempts: list[AttemptSummary] = Field(
        default_factory=list, exclude_if=lambda attempts: not attempts, description="Earlier attempts, oldest first."
    )
    attempt: int | None = Field(None, exclude_if=unset, description="Its own number (None: not yet numbered).")

    @field_validator("grade", mode="before")
    @classmethod
    def _no_grade(cls, value: Any) -> Any:
        return None if value == {} else value

    @field_serializer("grade")
    def _grade_or_empty(self, grade: RowGrade | None) -> dict[str, Any]:
        return {} if grade is None else grade.model_dump(mode="json")

    def dump(self) -> dict[str, Any]:
        """The JSON object of this row, as written to ``results.jsonl``."""
        return self.model_dump(mode="json")

    def json_line(self) -> str:
        return json.dumps(self.dump(), ensure_ascii=False) + "\n"

    @property
    def episode_key(self) -> EpisodeKey:
        """What makes a row one episode of a plan."""
        return (self.config, self.task_set, self.task_id, self.run)

    @property
    def task_selection(self) -> str:
        """The tasks as ``--tasks`` named them: ``hotel_50:test`` for a split, else the task set."""
        return f"{self.task_set}:{self.split}" if self.split else self.task_set

    @property
    def attempt_number(self) -> int:
        return self.attempt or 1


def parse_row(line: str) -> EpisodeRow:
    """One results line as a row; ValueError with a one-line reason (not JSON, a missing, unknown
    or mistyped field)."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON ({error.msg})") from None
    except RecursionError:
        raise ValueError("not JSON (nested too deeply)") from None
    if not isinstance(data, dict):
        raise ValueError(f"not a JSON object but {type(data).__name__}")
    try:
        return EpisodeRow.model_validate(data)
    except ValidationError as error:
        raise ValueError(_problems(error)) from None


def _problems(error: ValidationError, shown: int = 3) -> str:
    """The first problems of a row in one line: a renamed field shows as its old name missing and its new
    name unknown."""
    problems = error.errors(include_url=False)
    texts = []
    for problem in problems[:shown]:
        where = _printable(".".join(str(part) for part in problem["loc"])) or "row"
        unknown = problem["type"] == "extra_forbidden"
        texts.append(f"{where}: {UNKNOWN if unknown else problem['msg']}")
    more = f" (and {len(problems) - shown} more)" if len(problems) > shown else ""
    return "; ".join(texts) + more


def _printable(key: str, limit: int = 80) -> str:
    """A key from the file as one short line: a hostile key may hold newlines or be a megabyte long."""
    text = " ".join(key.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- the results file: rows, and the lines that are not rows ---------------------------------------


@dataclass(frozen=True)
class RefusedLine:
    """A line of a results file that is not a row: kept whole so that nothing is lost (``canonicalize``)."""

    name: str
    number: int
    text: str
    reason: str

    def __str__(self) -> str:
        return f"{self.name} line {self.number}: {self.reason}"


class ResultsRead(NamedTuple):
    """The rows of a results file and the lines refused."""

    rows: list[EpisodeRow]
    refused: list[RefusedLine]


def load_results(results_dir: str | Path, name: str = RESULTS_FILE) -> ResultsRead:
    """Rows of ``results.jsonl``, each parsed as an :class:`EpisodeRow` (the one parse point), and
    the lines refused: a truncated last line (a run killed while writing), or a line that is not a
    row of this version (an unknown or renamed field, a wrong type). The report lists refused
    lines instead of failing, and ``--resume`` re-runs their episodes.
    """
    rows, refused = [], []
    with open(Path(results_dir) / name, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rows.append(parse_row(line))
            except ValueError as error:
                refused.append(RefusedLine(name, number, line, str(error)))
    return ResultsRead(rows, refused)


def results_dir(path: str) -> str:
    """An argparse type for a results directory, which also takes the results file itself (``runs/eval/results.jsonl``
    for ``runs/eval``): every command that reads results names the directory, and a user points at the file."""
    given = Path(path)
    return str(given.parent) if given.is_file() and given.suffix == ".jsonl" else path


def read_results(path: Path) -> ResultsRead:
    """Rows of a results file (none if it does not exist yet) and its refused lines (a torn last line...)."""
    return load_results(path.parent, path.name) if path.exists() else ResultsRead([], [])


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a results file as their JSON objects, each checked as an ``EpisodeRow`` (for tests and tools
    that look at the file's content)."""
    return [row.dump() for row in read_results(path).rows]


# --- keys, order and groups -----------------------------------------------------------------------


def natural_key(text: str) -> tuple[int | str, ...]:
    """Sort key that puts C2 before C10 and n=3 before n=11."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def task_key(row: EpisodeRow) -> TaskKey:
    return (row.task_set, row.task_id)


def _episode_key(row: EpisodeRow) -> tuple[Any, ...]:
    return (natural_key(row.config), natural_key(row.task_set), natural_key(row.task_id), row.run)


def is_infra_error(row: EpisodeRow) -> bool:
    return bool(row.infra_error)


def succeeded(row: EpisodeRow) -> bool:
    """The full-itemization outcome; a row without a grade counts as a failure."""
    return row.grade is not None and row.grade.success


def canonical_order(rows: Iterable[EpisodeRow]) -> list[EpisodeRow]:
    """Rows sorted by (config, task, run): results do not depend on the order episodes finished in."""
    return sorted(rows, key=_episode_key)


def scored_rows(rows: Iterable[EpisodeRow]) -> list[EpisodeRow]:
    """The rows the agent is scored on: no infrastructure error, one row per episode.

    A resumed run may append an episode again; the last row of an episode wins.
    """
    latest: dict[tuple[Any, ...], EpisodeRow] = {}
    for row in rows:
        if not is_infra_error(row):
            latest[_episode_key(row)] = row
    return canonical_order(latest.values())


def duplicate_count(rows: Iterable[EpisodeRow]) -> int:
    """How many scored rows repeat an episode already seen (a runner bug worth showing)."""
    keys = [_episode_key(row) for row in rows if not is_infra_error(row)]
    return len(keys) - len(set(keys))


def infra_error_rows(rows: Iterable[EpisodeRow]) -> list[EpisodeRow]:
    return canonical_order(row for row in rows if is_infra_error(row))


def by_config(rows: Iterable[EpisodeRow]) -> dict[str, list[EpisodeRow]]:
    """Rows grouped by configuration, configurations in natural order."""
    groups: dict[str, list[EpisodeRow]] = defaultdict(list)
    for row in rows:
        groups[row.config].append(row)
    return {name: canonical_order(groups[name]) for name in sorted(groups, key=natural_key)}
