"""One row per episode from a results file that may hold several attempts of it.

``erp-sim eval --resume`` appends a new row for every episode it runs again (an infrastructure
error, a killed run) and, when it finishes, rewrites the file with one row per episode
(``canonicalize``). A run killed during ``--resume`` leaves the appended rows in place, so the
report, the run page and ``canonicalize`` all read rows through :func:`latest_attempts`: the
last row of each episode wins and carries the earlier ones under ``attempts``.
"""

from __future__ import annotations

from collections.abc import Iterable

from erp_sim.agents.evaluation.episode_row import AttemptSummary, EpisodeKey, EpisodeRow


def attempt_summary(row: EpisodeRow) -> AttemptSummary:
    """What an earlier attempt leaves in the last row: its number, termination and error."""
    return AttemptSummary(
        attempt=row.attempt_number,
        termination=row.termination,
        infra_error=row.infra_error,
        model_error=row.model_error,
    )


def latest_attempts(rows: Iterable[EpisodeRow]) -> list[EpisodeRow]:
    """The last row of each episode, in first-seen order, with ``attempts`` (earlier ones, oldest
    first) and ``attempt`` (its own number) set; rows are copied, the input is left as it was.

    A scored row is never displaced by a later infrastructure error (only files joined by hand
    have one: ``--resume`` never runs a scored episode again); that row becomes an attempt.
    """
    latest: dict[EpisodeKey, EpisodeRow] = {}
    for row in rows:
        key, earlier = row.episode_key, latest.get(row.episode_key)
        if earlier is None:
            latest[key] = row.model_copy(update={"attempt": len(row.attempts) + 1})
            continue
        displaced = not (row.infra_error and not earlier.infra_error)
        kept, other = (row, earlier) if displaced else (earlier, row)
        history = [*earlier.attempts, attempt_summary(other)]
        # numbered by position, so that the rows' order in the file (concurrency) does not change the result
        numbered = [attempt.model_copy(update={"attempt": number}) for number, attempt in enumerate(history, 1)]
        latest[key] = kept.model_copy(update={"attempts": numbered, "attempt": len(history) + 1})
    return list(latest.values())
