"""docs/envs.md's scaling tables are scripts/horizon_docs.py's output: a rerun on the 10-charge rung prints the
doc's 10-charge rows as they stand (so the doc cannot drift from the code), and the script writes only between
the doc's markers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "horizon_docs.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("horizon_docs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows_at(block: str, charges: int) -> list[str]:
    return [line for line in block.splitlines() if line.startswith("| C") and f" | {charges} | " in line]


def test_the_docs_small_rung_rows_are_what_a_rerun_prints(script, capsys):
    assert script.main(["--rungs", "10"]) == 0
    printed = _rows_at(capsys.readouterr().out, 10)
    assert [row.split(" | ")[0] for row in printed] == ["| C2 full", "| C3 last_n:n=5", "| C4 last_n_summary:n=5,w=3"]
    documented = _rows_at(script.doc_block(script.DOC.read_text(encoding="utf-8")), 10)
    assert documented == printed, "docs/envs.md is stale: rerun scripts/horizon_docs.py --write"


def test_the_summary_rows_come_from_the_same_study(script):
    """The summary's ends are the per-rung rows' first and last rung, as documented."""
    block = script.doc_block(script.DOC.read_text(encoding="utf-8"))
    summary = [line for line in block.split(script.RUNG_HEADER)[0].splitlines() if line.startswith("| C")]
    rungs = [line.split(" | ") for line in block.split(script.RUNG_HEADER)[1].splitlines() if line.startswith("| C")]
    for row in summary:
        config = row.split(" | ")[0].lstrip("| ")
        own = [cells for cells in rungs if cells[0].lstrip("| ") == config]
        steps = row.split(" | ")[5]
        assert steps == f"{own[0][4]} → {own[-1][4]}", row


def test_writing_replaces_only_what_stands_between_the_markers(script):
    text = f"before\n{script.BEGIN}\nold table\n{script.END}\nafter\n"
    written = script.with_block(text, "| new |\n")
    assert written.startswith("before\n") and written.endswith(f"{script.END}\nafter\n")
    assert script.doc_block(written) == "| new |\n" and "old table" not in written
    with pytest.raises(ValueError, match="markers"):
        script.doc_block("no markers here")
