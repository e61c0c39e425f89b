"""What ACON's optimizer is asked (its prompt files, the feedback, update and shorten requests) and
the guideline read back from its answer."""

from __future__ import annotations

import re
from pathlib import Path

from erp_sim.agents.summarizers import render_transcript
from erp_sim.agents.tokens import message_text

PROMPTS_DIR = Path(__file__).parent / "prompts"


def load_optimizer_prompt(name: str) -> str:
    return (PROMPTS_DIR / f"{name}.md").read_text(encoding="utf-8")


def extract_guideline(text: str) -> str:
    """The text between <guideline> tags if the optimizer used them, else its whole answer."""
    match = re.search(r"<guideline>\s*(.*?)\s*</guideline>", text, re.DOTALL)
    return (match.group(1) if match else text).strip() + "\n"


def feedback_request(compressed: dict, plain: dict, guideline: dict[str, str]) -> str:
    parts = [f"=== Task ===\n{message_text(plain['messages'][1].get('content')) if len(plain['messages']) > 1 else ''}"]
    parts += [f"=== Current guideline ({kind}) ===\n{text}" for kind, text in guideline.items()]
    parts.append(f"=== Uncompressed context (succeeded) ===\n{render_transcript(plain['messages'])}")
    parts.append(f"=== Compressed context (failed) ===\n{render_transcript(compressed['shown_last'])}")
    parts.append(
        f"=== How the compressed run ended ===\n{compressed.get('termination')}; "
        f"failure: {compressed.get('failure_category')}"
    )
    return "\n\n".join(parts)


def update_request(kind: str, guideline: str, feedback: str, number: int, k: int) -> str:
    what = "history summaries" if kind == "history" else "rewritten tool responses (observations)"
    return (
        f"=== Compressor ===\n{kind}: writes {what}\n\n=== Current guideline ===\n{guideline}\n\n"
        f"=== Feedback ===\n{feedback}\n\n=== Candidate ===\n{number} of {k}"
    )


def shorten_request(kind: str, guideline: str, outputs: list[tuple[str, list[str]]]) -> str:
    shown = "\n\n".join(f"--- task {task_id} ---\n" + "\n\n".join(texts) for task_id, texts in outputs)
    return (
        f"=== Compressor ===\n{kind}\n\n=== Current guideline ===\n{guideline}\n\n=== Compressed outputs ===\n{shown}"
    )
