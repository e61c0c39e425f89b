"""Time to build the visible context per step, per context policy, on long transcripts.

A synthetic transcript of D365-shaped tool calls (each response a distinct form state of
about 1,500 tokens, as in the reference study) grows one unit per step. For each policy
and transcript size, a fresh policy and a cold token counter run through every step up to
the last ``--steps``; those last steps are timed (``act`` through the whole stack, with an
inner agent that does nothing, so the time is the policies' own). A policy that counts
tokens pays, in the step where a message first appears, for tokenizing it once (about
0.3 ms for a 1,500-token form state); the runner's own accounting then hits the cache.
The table shows the median over those steps and ``--repeats`` fresh runs, in CPU time of
the benchmarking thread (``time.thread_time``), so other processes on a shared box inflate
it less. Summarizing policies use the deterministic StructuredSummarizer (no LLM).

    .venv/bin/python scripts/bench_policies.py                 # 10k, 100k, 1M tokens
    .venv/bin/python scripts/bench_policies.py --sizes 100000 --policies last_n budget_eviction
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from erp_sim.agents.policies import wrap
from erp_sim.agents.summarizers import StructuredSummarizer
from erp_sim.agents.tokens import TokenCounter, count_messages
from erp_sim.agents.types import AgentStep, Message

POLICIES = [
    "full",
    "last_n:n=5",
    "last_n_summary:n=5,w=3",
    "fifo:k=5",
    "acon_history:t=4096,k=1",
    "acon_observation:t=1024",
    "head_tail:chars=800",
    "budget_eviction:budget=30000",
    "working_memory_anchor",
    "clear_tool_uses:trigger=30000,keep=3",
    "working_memory_anchor+head_tail+budget_eviction",
]
SIZES = [10_000, 100_000, 1_000_000]


class NullAgent:
    """Answers nothing; keeps what it was shown so the bench can report its size."""

    def __init__(self) -> None:
        self.shown: list[dict] = []

    def reset(self) -> None: ...

    def act(self, transcript, tools) -> AgentStep:
        self.shown = transcript
        return AgentStep(message={"role": "assistant", "content": ""})


def form_response(step: int, rows: int = 14) -> str:
    """A verbose itemization form state, different at every step."""
    grid_rows: list[dict[str, Any]] = [
        {
            "RowNumber": str(r),
            "IsSelected": r == rows,
            "Values": {
                "TrvExpTrans_TransDate": f"2026-08-{(r % 28) + 1:02d}",
                "TrvExpTrans_ExpSubCategory": ["Daily room rate", "Room tax", "Parking", "Breakfast"][r % 4],
                "TrvExpTrans_AmountCurr": f"{(step * 37 + r * 11) % 500 + 0.25:.2f}",
                "TrvExpTrans_LineStatus": "Saved" if r < rows else "New",
            },
        }
        for r in range(1, rows + 1)
    ]
    controls = [
        {
            "Name": name,
            "Label": name[11:],
            "Value": f"{(step * 13) % 900 + 0.5:.2f}",
            "IsEnabled": True,
            "IsEditable": False,
            "HelpText": "Amount of the expense line, itemized so far, and what remains to itemize.",
        }
        for name in ("ItemizationTotal", "ItemizationItemized", "ItemizationRemaining")
    ]
    columns = [{"Name": c, "Label": c, "IsSortable": True} for c in grid_rows[0]["Values"]]
    state = {
        "SessionId": f"session-{step}",
        "Result": f"Step {step}: button NewLine was clicked.",
        "Messages": [{"Level": "Info", "Text": f"Itemized line {step} added."}],
        "FormState": {
            "Name": "TrvItemization",
            "Caption": f"Itemize expense - line 3 (step {step})",
            "Company": "USMF",
            "Form": {
                "Group": [{"Name": "Amounts", "Children": {"RealInput": controls}}],
                "Grid": [
                    {
                        "Name": "ItemizationGrid",
                        "Columns": columns,
                        "Rows": grid_rows,
                        "Pagination": {"HasNextPage": False, "TotalRows": rows},
                    }
                ],
            },
            "Buttons": [
                {"Name": b, "Label": b, "IsEnabled": True} for b in ("NewLine", "DeleteLine", "ViewReceipt", "Close")
            ],
            "Guidance": ["Click NewLine to add a row, then set the subcategory, date and amount, then save."],
        },
        "MCPActivityId": f"activity-{step:08d}",
        "DeepLinks": [],
    }
    return json.dumps(state)


def build_transcript(target_tokens: int) -> tuple[list[dict], list[int]]:
    """Messages of about ``target_tokens`` tokens and the index after each unit."""
    messages: list[Message] = [
        {"role": "system", "content": "You itemize expenses in Dynamics 365 through the tools."},
        {
            "role": "user",
            "content": "Please itemize the Hotel expense on report EXP-699559, line 3, and close the form.",
        },
    ]
    counter = TokenCounter()
    total, boundaries, step = counter.count_messages(messages), [], 0
    while total < target_tokens:
        step += 1
        call = {
            "id": f"call_{step}",
            "type": "function",
            "function": {"name": "form_click_control", "arguments": json.dumps({"controlName": "NewLine"})},
        }
        unit: list[Message] = [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {
                "role": "tool",
                "tool_call_id": f"call_{step}",
                "name": "form_click_control",
                "content": form_response(step),
            },
        ]
        if step % 10 == 0:
            unit.append({"role": "user", "content": f"Any progress? (message {step})"})
        messages.extend(unit)
        total += sum(map(counter.count_message, unit))
        boundaries.append(len(messages))
    return messages, boundaries


def time_policy(
    spec: str, messages: list[dict], boundaries: list[int], steps: int, repeats: int
) -> tuple[list[float], int]:
    samples = []
    shown_tokens = 0
    for _ in range(repeats):
        counter = TokenCounter()  # cold cache: each new unit is really tokenized once
        agent = NullAgent()
        policy = wrap(agent, spec, summarizer=StructuredSummarizer(), counter=counter)
        timed_from = max(len(boundaries) - steps, 0)
        for index, end in enumerate(boundaries):
            prefix = messages[:end]
            if index < timed_from:
                counter.count_messages(prefix[-3:])  # the runner counts each new message once anyway
                policy.act(prefix, [])
                continue
            start = time.thread_time()
            policy.act(prefix, [])
            samples.append(time.thread_time() - start)
        shown_tokens = count_messages(agent.shown)
    return samples, shown_tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    parser.add_argument("--policies", nargs="+", default=POLICIES)
    parser.add_argument("--steps", type=int, default=20, help="timed steps at the end of each transcript")
    parser.add_argument("--repeats", type=int, default=3, help="fresh runs per policy and size")
    args = parser.parse_args()

    transcripts = {size: build_transcript(size) for size in args.sizes}
    for size, (messages, boundaries) in transcripts.items():
        print(
            f"transcript ~{size:,} tokens: {count_messages(messages):,} tokens, "
            f"{len(messages)} messages, {len(boundaries)} steps"
        )
    header = "| policy | " + " | ".join(f"{size:,} tok: ms/step (shown tok)" for size in args.sizes) + " |"
    print()
    print(header)
    print("|" + "---|" * (len(args.sizes) + 1))
    for spec in args.policies:
        cells = []
        for size in args.sizes:
            messages, boundaries = transcripts[size]
            samples, shown = time_policy(spec, messages, boundaries, args.steps, args.repeats)
            cells.append(f"{statistics.median(samples) * 1000:.3f} ({shown:,})")
        print(f"| {spec} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
