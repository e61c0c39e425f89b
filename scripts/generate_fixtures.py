"""Regenerate the task fixtures under fixtures/ from their seeds (and sample responses from them).

python scripts/generate_fixtures.py           # write fixtures/*.jsonl
python scripts/generate_fixtures.py --check   # exit 1 if a checked-in file differs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from erp_sim.task_sets import FIXTURES_DIR, TASK_SET_FILES
from erp_sim.taskgen import TASK_SETS
from erp_sim.tasks import task_to_json


def render(name: str) -> str:
    return "".join(task_to_json(task) + "\n" for task in TASK_SETS[name]())


def sample_responses() -> dict[str, str]:
    """One response per form and verbosity from the oracle's run on hotel-007, for docs and parser tests."""
    from erp_sim import ErpSession, get_task, run_oracle

    samples: dict[str, str] = {}
    for verbosity in ("default", "compact"):
        for response in run_oracle(ErpSession(get_task("hotel_50", "hotel-007"), verbosity=verbosity)):
            if response.form_state is not None:
                samples.setdefault(f"samples/{response.form_state['Name']}.{verbosity}.json", response.text + "\n")
    return samples


def outputs() -> dict[str, str]:
    files = {filename: render(name) for name, filename in TASK_SET_FILES.items()}
    return {**files, **sample_responses()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--out", type=Path, default=FIXTURES_DIR)
    args = parser.parse_args(argv)
    stale = []
    for filename, text in outputs().items():
        path = args.out / filename
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    if stale:
        print("stale fixtures: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
