"""Which run a recording belongs to, so that a second run cannot take over its cassettes.

``--record DIR`` notes in ``DIR/cassettes/run.json`` the ``--out`` of the run recording into it
(resolved). A ``--resume`` of that run (the same ``--out``) records into DIR again, an interrupted
attempt's cassette kept as ``NAME.attemptK.jsonl``. Another run is refused before any episode:
moving the first run's cassettes aside would leave its rows (``sampling.cassettes`` = DIR) without
the recording that replays them. A DIR without a recorded call yet is anyone's. A recording made
before runs were noted is taken as the run's whose results name DIR as their cassettes (the resume
of the run that made it); any other run is refused, since it cannot be told from the one that made
them. Replay does not read the note.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TextIO

from erp_sim.agents.evaluation.episode_row import RESULTS_FILE, read_results
from erp_sim.agents.evaluation.output_lock import LockHeld, hold_lock

RUN_NOTE = "run.json"
LOCK = ".recording.lock"
_held: dict[Path, TextIO] = {}  # recordings this process records into: their locks, held until it exits


def hold_recording(cassettes: Path) -> None:
    """Take the recording for this process (``output_lock.hold_lock``, kept until it exits), or refuse in one
    line (ValueError) while another process records into it: two runs checking and writing at once mixed their
    cassettes into one recording that replays neither."""
    key = cassettes.resolve()
    if key in _held:
        return
    cassettes.mkdir(parents=True, exist_ok=True)
    try:
        _held[key] = hold_lock(cassettes / LOCK)
    except LockHeld:
        raise ValueError(
            f"{cassettes.parent} is being recorded into by another run right now; record into another directory"
        ) from None


def recording_run_refusal(cassettes: Path, out_dir: str | Path) -> str | None:
    """Why the run writing into ``out_dir`` may not record into ``cassettes`` (None: it may), in one line."""
    out = Path(out_dir).resolve()
    made_by = recorded_run(cassettes)
    directory = cassettes.parent
    if not any(cassettes.glob("**/*.jsonl")):  # no call recorded yet (a run stopped before its first): nothing to lose
        return None
    if made_by is not None:
        if made_by == out:
            return None
        return (
            f"{directory} holds the recording of the run in {made_by}, whose rows replay from it; "
            f"record into another directory (a --resume of that run records into it again)"
        )
    if _rows_recorded_into(out, directory):
        return None
    return (
        f"{directory} holds cassettes of an earlier run (recorded before runs were noted) and no row in "
        f"{out} was recorded into it; record into another directory"
    )


def recorded_run(cassettes: Path) -> Path | None:
    """The ``--out`` of the run that made the recording (None: not noted)."""
    path = cassettes / RUN_NOTE
    if not path.exists():
        return None
    try:
        out = json.loads(path.read_text(encoding="utf-8"))["out"]
        if not isinstance(out, str):
            raise TypeError(type(out).__name__)
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: not a note of the run that recorded ({type(error).__name__}: {error})") from None
    return Path(out)


def note_recording_run(cassettes: Path, out_dir: str | Path) -> None:
    cassettes.mkdir(parents=True, exist_ok=True)
    tmp = cassettes / (RUN_NOTE + ".tmp")
    tmp.write_text(json.dumps({"out": str(Path(out_dir).resolve())}, indent=1) + "\n", encoding="utf-8")
    tmp.replace(cassettes / RUN_NOTE)


def _rows_recorded_into(out: Path, directory: Path) -> bool:
    """Whether a row in ``out`` says its model calls went to ``directory`` (relative names: from here)."""
    target = directory.resolve()
    rows = read_results(out / RESULTS_FILE).rows
    # a relative name was relative to where that run started: here, or (resumed from elsewhere) most likely
    # where its --out lies too
    return any(
        row.sampling.cassettes
        and target in {Path(row.sampling.cassettes).resolve(), (out.parent / row.sampling.cassettes).resolve()}
        for row in rows
    )
