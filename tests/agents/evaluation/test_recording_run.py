"""Which run a recording belongs to: only the run that made it records into it again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from erp_sim.agents.evaluation.recording_run import RUN_NOTE, note_recording_run, recording_run_refusal


def test_a_recording_is_its_runs_once_it_holds_a_call(tmp_path):
    cassettes = tmp_path / "rec" / "cassettes"
    note_recording_run(cassettes, tmp_path / "A")
    assert json.loads((cassettes / RUN_NOTE).read_text()) == {"out": str((tmp_path / "A").resolve())}
    assert recording_run_refusal(cassettes, tmp_path / "B") is None  # no call recorded yet: nothing to lose
    (cassettes / "C2").mkdir()
    (cassettes / "C2" / "hotel-000-run0.jsonl").write_text("{}\n")
    assert recording_run_refusal(cassettes, tmp_path / "A") is None
    assert recording_run_refusal(cassettes, tmp_path / "sub" / ".." / "A") is None  # the same directory
    refusal = recording_run_refusal(cassettes, tmp_path / "B")
    assert refusal is not None and refusal.startswith(
        f"{tmp_path / 'rec'} holds the recording of the run in {(tmp_path / 'A').resolve()}"
    )


def test_a_recording_made_before_runs_were_noted_is_the_run_whose_rows_name_it(tmp_path):
    cassettes = tmp_path / "rec" / "cassettes"
    (cassettes / "C2").mkdir(parents=True)
    (cassettes / "C2" / "hotel-000-run0.jsonl").write_text("{}\n")
    row = {"config": "C2", "policy": "full", "user": "rule", "agent": "openai:m", "task_set": "hotel_50"}
    row |= {"task_id": "hotel-000", "run": 0, "seed": 0, "sampling": {"cassettes": str(tmp_path / "rec")}}
    (tmp_path / "A").mkdir()
    (tmp_path / "A" / "results.jsonl").write_text(json.dumps(row) + "\n")
    assert recording_run_refusal(cassettes, tmp_path / "A") is None
    refusal = recording_run_refusal(cassettes, tmp_path / "B")
    assert refusal is not None and "recorded before runs were noted" in refusal


def test_a_relative_name_in_the_rows_is_the_same_recording_resumed_from_elsewhere(tmp_path, monkeypatch):
    """Rows keep --record as it was typed: "rec", relative to where the run started (beside its --out); a resume
    started in another directory naming the recording as it sees it ("work/rec") is the same run."""
    work = tmp_path / "work"
    cassettes = work / "rec" / "cassettes"
    (cassettes / "C2").mkdir(parents=True)
    (cassettes / "C2" / "hotel-000-run0.jsonl").write_text("{}\n")
    row = {"config": "C2", "policy": "full", "user": "rule", "agent": "openai:m", "task_set": "hotel_50"}
    row |= {"task_id": "hotel-000", "run": 0, "seed": 0, "sampling": {"cassettes": "rec"}}
    (work / "A").mkdir()
    (work / "A" / "results.jsonl").write_text(json.dumps(row) + "\n")
    monkeypatch.chdir(tmp_path)
    assert recording_run_refusal(Path("work/rec/cassettes"), Path("work/A")) is None
    monkeypatch.chdir(work)
    assert recording_run_refusal(Path("rec/cassettes"), Path("A")) is None
    refusal = recording_run_refusal(Path("rec/cassettes"), Path("B"))  # another run's --out: still refused
    assert refusal is not None and "recorded before runs were noted" in refusal


def test_a_note_that_is_not_one_is_a_one_line_error(tmp_path):
    cassettes = tmp_path / "cassettes"
    (cassettes / "C2").mkdir(parents=True)
    (cassettes / "C2" / "x.jsonl").write_text("{}\n")
    for text in ("{", '{"out": 3}', "[]"):
        (cassettes / RUN_NOTE).write_text(text)
        with pytest.raises(ValueError, match=rf"{RUN_NOTE}: not a note of the run that recorded"):
            recording_run_refusal(cassettes, tmp_path / "A")


def test_two_processes_cannot_record_into_one_directory_at_once(tmp_path):
    """Both found it empty and both wrote: their cassettes mixed into one recording that replays neither run."""
    import subprocess
    import sys

    from erp_sim.agents.evaluation.recording_run import hold_recording

    cassettes = tmp_path / "rec" / "cassettes"
    hold_recording(cassettes)
    hold_recording(cassettes)  # this process again: already its own
    other = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from erp_sim.agents.evaluation.recording_run import hold_recording\n"
            "try:\n    hold_recording(Path(sys.argv[1]))\nexcept ValueError as e:\n    print(e)",
            str(cassettes),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert other.stdout.strip() == (
        f"{tmp_path / 'rec'} is being recorded into by another run right now; record into another directory"
    )
