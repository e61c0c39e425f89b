"""``erp-sim acon export-sft DIR``: distillation data for a small compressor, from an optimize run.

ACON distils the compressor that follows the optimised guideline into a small model by
supervised fine-tuning (LoRA) on the teacher's (input, compressed output) pairs from
episodes that still succeeded with compression. This writes those pairs, from the episodes
of DIR's chosen guideline, as chat-format JSONL (one ``{"messages": [system, user,
assistant]}`` per compressor call: the guideline, what the compressor was shown, what it
wrote), the format TRL's SFTTrainer and most LoRA tools read:

- ``train.jsonl``: calls from train-split episodes;
- ``heldout.jsonl``: calls from test-split episodes; when the run has none, the tasks whose
  sha256(task id) falls in the lowest ``--heldout-fraction`` (so a task's calls never sit
  on both sides);
- ``manifest.json``: where every line came from (task set, task, split, kind, call number), counts,
  and a warning for each file that came out empty (also printed).

Then serve the fine-tuned model on any OpenAI-compatible server and evaluate it with the
same guideline: ``erp-sim acon optimize --steps none --initial-guideline DIR/guidelines/chosen-history.md
--compressor openai:SMALL --compressor-base-url URL ...``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from erp_sim.agents.acon.files import read_gz_json, write_json, write_text
from erp_sim.agents.command_line import PlainHelpFormatter


def heldout_by_hash(task_id: str, fraction: float) -> bool:
    return int(hashlib.sha256(task_id.encode()).hexdigest()[:8], 16) / 16**8 < fraction


def export(run_dir: Path, out: Path, *, include_failed: bool = False, heldout_fraction: float = 0.2) -> dict:
    report_path = run_dir / "report.json"
    if not report_path.exists():
        raise SystemExit(f"{report_path} not found: run `erp-sim acon optimize --out {run_dir}` to the end first")
    chosen = json.loads(report_path.read_text(encoding="utf-8"))["chosen"]
    # episodes/LABEL/SPLIT/TASK_SET/TASK.json.gz (runs made before task sets were kept apart: LABEL/TASK.json.gz)
    episodes = [read_gz_json(path) for path in sorted((run_dir / "episodes" / chosen).rglob("*.json.gz"))]
    has_test = any(e["split"] == "test" for e in episodes)
    lines: dict[str, list[str]] = {"train": [], "heldout": []}
    sources: dict[str, list[dict]] = {"train": [], "heldout": []}
    skipped = 0
    for episode in episodes:
        if not episode["success"] and not include_failed:
            skipped += 1
            continue
        held = episode["split"] == "test" if has_test else heldout_by_hash(episode["task_id"], heldout_fraction)
        part = "heldout" if held else "train"
        for number, call in enumerate(episode["compressor_calls"]):
            messages = [*call["messages"], {"role": "assistant", "content": call["output"]}]
            lines[part].append(json.dumps({"messages": messages}, ensure_ascii=False))
            sources[part].append(
                {
                    "task_set": episode.get("task_set"),
                    "task_id": episode["task_id"],
                    "split": episode["split"],
                    "kind": call["kind"],
                    "call": number,
                }
            )
    for part, rows in lines.items():
        write_text(out / f"{part}.jsonl", "".join(row + "\n" for row in rows))
    manifest = {
        "run": str(run_dir),
        "guideline": chosen,
        "only_successful_episodes": not include_failed,
        "skipped_failed_episodes": skipped,
        "heldout_rule": "test-split episodes" if has_test else f"sha256(task id) < {heldout_fraction}",
        "counts": {part: len(rows) for part, rows in lines.items()},
        "sources": sources,
    }
    manifest["warnings"] = empty_split_warnings(manifest, len(episodes))
    write_json(out / "manifest.json", manifest)
    return manifest


def empty_split_warnings(manifest: dict, episodes: int) -> list[str]:
    """One line per output file that came out empty, with the likely reason."""
    warnings = []
    for part, count in manifest["counts"].items():
        if count:
            continue
        if not episodes:
            why = f"the chosen guideline {manifest['guideline']} has no episodes"
        elif manifest["skipped_failed_episodes"] and manifest["only_successful_episodes"]:
            why = (
                f"{manifest['skipped_failed_episodes']} failed episode(s) skipped (--include-failed keeps them), "
                "or no compressor call in the rest"
            )
        else:
            why = "no episode of this split called the compressor"
        if part == "heldout" and not manifest["heldout_rule"].startswith("test"):
            why += f"; held out by {manifest['heldout_rule']} (--heldout-fraction)"
        warnings.append(f"warning: {part}.jsonl is empty: {why}")
    return warnings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="erp-sim acon export-sft", description=__doc__.splitlines()[0], formatter_class=PlainHelpFormatter
    )
    parser.add_argument("run_dir", metavar="DIR", help="an `erp-sim acon optimize --out` directory")
    parser.add_argument("--out", help="where to write (default DIR/sft)")
    parser.add_argument("--include-failed", action="store_true", help="also pairs from episodes that failed")
    parser.add_argument("--heldout-fraction", type=float, default=0.2, help="when the run has no test episodes")
    args = parser.parse_args(argv)
    if not 0 <= args.heldout_fraction < 1:
        parser.error("--heldout-fraction must be in [0, 1)")
    run_dir = Path(args.run_dir)
    manifest = export(
        run_dir,
        Path(args.out) if args.out else run_dir / "sft",
        include_failed=args.include_failed,
        heldout_fraction=args.heldout_fraction,
    )
    print(
        f"guideline {manifest['guideline']}: {manifest['counts']['train']} train and {manifest['counts']['heldout']} "
        f"held-out pairs ({manifest['heldout_rule']}); {manifest['skipped_failed_episodes']} failed episodes skipped"
    )
    for warning in manifest["warnings"]:
        print(warning, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
