"""ACON's three model roles played deterministically, for the fake OpenAI-compatible server.

``acon_role_reply(request body)`` answers from what the request shows, so a whole
``erp-sim acon optimize`` loop runs offline and gives the same artefacts every time:

- **agent** (requests with tools): the scripted agent's decision on the messages shown
  (``erp_sim.agents.scripted``), so compression changes what it can do, as for an LLM;
- **compressor** (the summarizer's requests; the system prompt is the guideline): the
  structured summary / refined observation of the steps shown (``erp_sim.agents.facts``);
  a new history summary merges the previous one by carrying over its receipt items and what
  the user said when the new steps do not show them (an LLM merges; nesting whole summaries
  would make them grow with every compression).
  One failure mode depends on the guideline, the one ACON's feedback typically finds: unless
  the guideline asks for exact values ("exact", "verbatim", "digit for digit", "never round"),
  it rounds every amount to whole units, and an agent that reads the receipt from the
  summary then itemizes wrong amounts;
- **optimizer** (system prompt = one of ``agents/acon/prompts``): *feedback* lists amounts of
  the full context that the compressed one rounded or lost, with a lesson for each kind of
  loss; *update* writes candidate ``i`` as the current guideline plus the subset of lessons
  given by the bits of ``i`` (so the k candidates differ and scoring has something to pick);
  *shorten* keeps the guideline lines that share a word of five or more letters with the
  compressor outputs shown, and every line about exact values.

This is a test double with documented rules, not a model of any LLM. Run it as a server for
a manual offline run: ``python tests/fake_acon_roles.py`` prints its base URL (``--help``: the
flags that make it behave like a local model server, see ``fake_openai_server``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))  # fake_openai_server, when run as a script

from erp_sim.agents.facts import render_observation
from erp_sim.agents.scripted import ScriptedAgent
from erp_sim.agents.summarizers import StructuredSummarizer
from erp_sim.agents.tokens import get_counter

EXACT = re.compile(r"\b(exact|exactly|verbatim|digit for digit|never round)\b", re.IGNORECASE)
AMOUNT = re.compile(r"(?<![\d.])(\d+)\.(\d{2})(?![\d])")
SUMMARIZER_SECTION = re.compile(
    r"^# (Task|Previous summary|Steps to fold in|Recent steps|Response to rewrite)$", re.MULTILINE
)
OPTIMIZER_SECTION = re.compile(r"^=== (.+) ===$", re.MULTILINE)
RESULT_LINE = re.compile(r"^\[result of ([^\]]+)\] (.*)$", re.MULTILINE)
RECEIPT_BLOCK = re.compile(r"^Receipt items \(\d+\):\n(?:[ \t]+\d+\..*\n?)+", re.MULTILINE)
USER_SECTION = re.compile(r"^## User said\n(?:- .*\n?)+", re.MULTILINE)
LESSON = re.compile(r"^- Lesson: (.+)$", re.MULTILINE)
ROUNDED_LESSON = "Copy every amount exactly, digit for digit; never round or drop the cents."
LOST_LESSON = "Keep every receipt item with its date, description and amount in the summary."


def acon_role_reply(body: dict[str, Any]) -> tuple[dict[str, Any], int, int]:
    """The fake server's role handler: (assistant message, prompt tokens, completion tokens)."""
    messages, tools = body["messages"], body.get("tools")
    counter = get_counter()
    if tools:
        message = ScriptedAgent().act(messages, tools).message
    else:
        system, user = messages[0]["content"], messages[-1]["content"]
        step = {
            "# ACON optimizer: feedback": feedback,
            "# ACON optimizer: update": update,
            "# ACON optimizer: shorten": shorten,
        }.get(system.splitlines()[0].strip())
        text = step(sections(OPTIMIZER_SECTION, user)) if step else compress(system, user)
        message = {"role": "assistant", "content": text}
    prompt_tokens = counter.count_messages(messages) + (counter.count_tools(tools) if tools else 0)
    return message, prompt_tokens, counter.count_message(message)


def sections(pattern: re.Pattern[str], text: str) -> dict[str, str]:
    parts = pattern.split(text)
    return {parts[i].strip(): parts[i + 1].strip("\n") for i in range(1, len(parts) - 1, 2)}


def compress(guideline: str, request: str) -> str:
    shown = sections(SUMMARIZER_SECTION, request)
    if "Response to rewrite" in shown:
        text = render_observation(shown["Response to rewrite"])
    else:
        steps = [
            {"role": "tool", "name": name, "content": content}
            for name, content in RESULT_LINE.findall(shown.get("Steps to fold in", ""))
        ]
        text = merge(
            StructuredSummarizer().summarize_history(shown.get("Task", ""), steps).text,
            shown.get("Previous summary", ""),
        )
    if not EXACT.search(guideline):
        text = AMOUNT.sub(lambda m: f"{m.group(1)}.00", text)
    return text


def merge(summary: str, previous: str) -> str:
    """The new summary, with the previous one's receipt items and user messages where it has none."""
    block = RECEIPT_BLOCK.search(previous)
    if block and not RECEIPT_BLOCK.search(summary):
        summary = summary.replace("\n\n## Completed", "\n" + block.group(0).rstrip("\n") + "\n\n## Completed", 1)
    said = USER_SECTION.search(previous)
    if said and not USER_SECTION.search(summary):
        summary = summary.replace("\n\n## To-do", "\n\n" + said.group(0).rstrip("\n") + "\n\n## To-do", 1)
    return summary


def feedback(shown: dict[str, str]) -> str:
    full, compressed = shown.get("Uncompressed context (succeeded)", ""), shown.get("Compressed context (failed)", "")
    kept = set(AMOUNT.findall(compressed))
    kept_text = {f"{a}.{c}" for a, c in kept}
    rounded: list[str] = []
    lost: list[str] = []
    for whole, cents in dict.fromkeys(AMOUNT.findall(full)):
        value = f"{whole}.{cents}"
        if cents == "00" or value in kept_text:
            continue
        (rounded if (whole, "00") in kept else lost).append(value)
    lines = []
    if rounded:
        lines.append(f"- Amounts rounded in the compressed context: {', '.join(rounded[:8])}.")
        lines.append(f"- Lesson: {ROUNDED_LESSON}")
    if lost:
        lines.append(f"- Amounts of the full context missing from the compressed one: {', '.join(lost[:8])}.")
        lines.append(f"- Lesson: {LOST_LESSON}")
    return "\n".join(lines) or "- No value of the full context is missing from the compressed one."


def update(shown: dict[str, str]) -> str:
    current = shown.get("Current guideline", "").rstrip()
    number = int(shown.get("Candidate", "1").split()[0])
    lessons = list(dict.fromkeys(LESSON.findall(shown.get("Feedback", ""))))
    chosen = [lesson for j, lesson in enumerate(lessons) if number >> j & 1]
    rules = "".join(f"\n- {lesson}" for lesson in chosen)
    return (
        f"<guideline>\n{current}\n\nRules learned from failures:{rules}\n</guideline>"
        if chosen
        else f"<guideline>\n{current}\n</guideline>"
    )


def shorten(shown: dict[str, str]) -> str:
    used = {word.lower() for word in re.findall(r"[A-Za-z]{5,}", shown.get("Compressed outputs", ""))}
    kept = [
        line
        for line in shown.get("Current guideline", "").splitlines()
        if line.strip() and (EXACT.search(line) or used & {w.lower() for w in re.findall(r"[A-Za-z]{5,}", line)})
    ]
    return "<guideline>\n" + "\n".join(kept) + "\n</guideline>"


def serve(argv: list[str] | None = None) -> None:
    """Serve the roles until Ctrl-C; the flags switch on the fake server's local-server modes."""
    import argparse

    from fake_openai_server import FakeOpenAIServer

    parser = argparse.ArgumentParser(description="ACON's roles on the fake OpenAI-compatible server")
    parser.add_argument(
        "--tools-need-tool-choice", action="store_true", help="tools ignored unless tool_choice is sent"
    )
    parser.add_argument(
        "--null-content-500", action="store_true", help="HTTP 500 to an assistant message without content"
    )
    parser.add_argument("--runaway-seconds", type=float, help="without max_tokens: answer this late, cut at the length")
    parser.add_argument("--own-token-counts", action="store_true", help="usage in the server's own tokens, not o200k")
    parser.add_argument(
        "--cached-tokens", action="store_true", help="and report usage.prompt_tokens_details.cached_tokens"
    )
    parser.add_argument("--pinned-model", help="as transformers serve pinned to one model: HTTP 400 for any other")
    parser.add_argument(
        "--malformed-call-500",
        action="store_true",
        help="a bare HTTP 500 once an earlier call's arguments are not JSON",
    )
    args = parser.parse_args(argv)
    with FakeOpenAIServer(**vars(args)) as server:
        server.answer_with(acon_role_reply)
        print(f"base_url: {server.base_url}", flush=True)
        try:
            server._thread.join()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    serve()
