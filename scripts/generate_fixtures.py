"""Regenerate the task fixtures under fixtures/ from their seeds.

    python scripts/generate_fixtures.py           # write fixtures/*.jsonl
    python scripts/generate_fixtures.py --check   # exit 1 if a checked-in file differs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from erp_sim.taskgen import TASK_SETS
from erp_sim.tasks import FIXTURES_DIR, TASK_SET_FILES, task_to_json


def render(name: str) -> str:
    return "".join(task_to_json(task) + "\n" for task in TASK_SETS[name]())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--out", type=Path, default=FIXTURES_DIR)
    args = parser.parse_args(argv)
    stale = []
    for name, filename in TASK_SET_FILES.items():
        text, path = render(name), args.out / filename
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path} ({text.count(chr(10))} tasks)")
    if stale:
        print("stale fixtures: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
