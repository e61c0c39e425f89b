"""Regenerate the task fixtures under fixtures/ from their seeds (and sample responses from them).

python scripts/generate_fixtures.py           # write fixtures/*.jsonl and oracle_steps.json
python scripts/generate_fixtures.py --check   # exit 1 if a checked-in file differs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from erp_sim.task_sets import FIXTURES_DIR
from erp_sim.workflows import task_sets


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
    """Every workflow's fixture files, the oracle's call count of each of their tasks, the sample responses."""
    from erp_sim.oracle import ORACLE_STEPS_FILE, oracle_steps_cache

    files, tasks = {}, []
    for sets in task_sets().values():
        for name, filename in sets.files.items():
            lines = sets.generate(name)
            files[filename] = "".join(line + "\n" for line in lines)
            tasks += [(line, sets.parse(line)) for line in lines]
    return {**files, ORACLE_STEPS_FILE: oracle_steps_cache(tasks), **sample_responses()}


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
