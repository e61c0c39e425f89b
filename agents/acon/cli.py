"""``erp-sim acon``: ``optimize`` (the guideline loop) and ``export-sft`` (distillation data)."""

from __future__ import annotations

import importlib
import sys

SUBCOMMANDS = {
    "optimize": ("erp_sim.agents.acon.optimize", "Optimise the compression guideline (UT, then CO) on a train split."),
    "export-sft": ("erp_sim.agents.acon.export_sft", "Write the compressor's (input, output) pairs as chat JSONL."),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in SUBCOMMANDS:
        print("usage: erp-sim acon {optimize,export-sft} ...\n")
        for name, (_, help_text) in SUBCOMMANDS.items():
            print(f"  {name:<11} {help_text}")
        return 0 if argv[:1] in ([], ["-h"], ["--help"]) else 2
    return int(importlib.import_module(SUBCOMMANDS[argv[0]][0]).main(argv[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
