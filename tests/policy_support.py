"""Shared helpers for the context-policy tests: a recording fake agent, transcript builders,
D365-shaped responses and hypothesis strategies for random transcripts."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from erp_sim.agents.types import AgentStep, Message, ToolSchema

SYSTEM = {"role": "system", "content": "You itemize expenses in D365 through tools."}
INSTRUCTION = {"role": "user", "content": "Itemize the hotel expense on report EXP-000123, line 2."}


class RecordingAgent:
    """A tiny inner agent: remembers what it was shown, answers with a fixed text."""

    def __init__(self) -> None:
        self.shown: list[list[Message]] = []
        self.resets = 0

    def reset(self) -> None:
        self.resets += 1
        self.shown.clear()

    def act(self, transcript: list[Message], tools: list[ToolSchema]) -> AgentStep:
        self.shown.append(transcript)
        return AgentStep(message={"role": "assistant", "content": "ok"}, shown=transcript)


def call(call_id: str, name: str = "form_click_control", **arguments: Any) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def tool_unit(*results: tuple[str, str, str]) -> list[Message]:
    """An assistant message calling each (id, tool name, result text), then the results."""
    assistant = {"role": "assistant", "content": None, "tool_calls": [call(i, name) for i, name, _ in results]}
    return [assistant] + [
        {"role": "tool", "tool_call_id": i, "name": name, "content": text} for i, name, text in results
    ]


def step(call_id: str, text: str, name: str = "form_click_control") -> list[Message]:
    return tool_unit((call_id, name, text))


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def assistant(text: str) -> Message:
    return {"role": "assistant", "content": text}


def transcript(*parts: Message | list[Message]) -> list[Message]:
    out = [SYSTEM, INSTRUCTION]
    for part in parts:
        out.extend(part if isinstance(part, list) else [part])
    return out


def contents(messages: list[Message]) -> list[str]:
    return [m.get("content") or "" for m in messages]


def call_ids(messages: list[Message]) -> list[str]:
    return [m["tool_call_id"] for m in messages if m.get("role") == "tool"]


# -- D365-shaped responses -------------------------------------------------------------------
def envelope(form_state: dict | None, result: str = "Done.", messages: list[dict] | None = None) -> str:
    return json.dumps(
        {
            "SessionId": "s-1",
            "Result": result,
            "Messages": messages or [],
            "FormState": form_state,
            "MCPActivityId": "a-1",
            "DeepLinks": [],
        }
    )


def grid(name: str, columns: list[str], rows: list[dict[str, str]], selected: int | None = None) -> dict:
    return {
        "Name": name,
        "Columns": [{"Name": c, "Label": c} for c in columns],
        "Rows": [
            {"RowNumber": str(i), "IsSelected": i == selected, "Values": values}
            for i, values in enumerate(rows, start=1)
        ],
        "Pagination": {"HasNextPage": False},
    }


def report_list_response(number: str = "EXP-000123") -> str:
    rows = [{"TrvExpTable_ExpNumber": "EXP-000122"}, {"TrvExpTable_ExpNumber": number}]
    form = {"Grid": [grid("ExpenseReportsGrid", ["TrvExpTable_ExpNumber"], rows, selected=2)]}
    return envelope({"Name": "TrvExpenses", "Caption": "Expense reports", "Form": form})


def report_response(number: str = "EXP-000123") -> str:
    lines = grid(
        "ExpenseLinesGrid",
        ["TrvExpTrans_LineNum", "TrvExpTrans_CostType", "TrvExpTrans_AmountCurr"],
        [
            {"TrvExpTrans_LineNum": "1", "TrvExpTrans_CostType": "Meals", "TrvExpTrans_AmountCurr": "42.00"},
            {"TrvExpTrans_LineNum": "2", "TrvExpTrans_CostType": "Hotel", "TrvExpTrans_AmountCurr": "360.00"},
        ],
        selected=2,
    )
    form = {
        "Group": [{"Name": "Header", "Children": {"Input": [{"Name": "TrvExpTable_ExpNumber", "Value": number}]}}],
        "Tab": [{"Name": "Tabs", "Children": {"TabPage": [{"Name": "Lines", "Children": {"Grid": [lines]}}]}}],
    }
    return envelope({"Name": "TrvExpenseReport", "Caption": f"Expense report {number}", "Form": form})


RECEIPT = [
    ("2024-03-01", "Room charge", "300.00"),
    ("2024-03-01", "City tax", "45.00"),
    ("2024-03-02", "Minibar", "15.00"),
]


def receipt_response(items=RECEIPT) -> str:
    rows = [{"ReceiptItem_Date": d, "ReceiptItem_Description": t, "ReceiptItem_Amount": a} for d, t, a in items]
    columns = ["ReceiptItem_Date", "ReceiptItem_Description", "ReceiptItem_Amount"]
    return envelope(
        {"Name": "TrvReceiptViewer", "Caption": "Receipt", "Form": {"Grid": [grid("ReceiptItemsGrid", columns, rows)]}}
    )


def itemization_response(lines: list[tuple[str, str, str, str]], total="360.00", warning: str | None = None) -> str:
    itemized = sum(float(a) for _, _, a, s in lines if s == "Saved")
    remaining = float(total) - itemized
    rows = [
        {
            "TrvExpTrans_TransDate": d,
            "TrvExpTrans_ExpSubCategory": c,
            "TrvExpTrans_AmountCurr": a,
            "TrvExpTrans_LineStatus": s,
        }
        for d, c, a, s in lines
    ]
    columns = [
        "TrvExpTrans_TransDate",
        "TrvExpTrans_ExpSubCategory",
        "TrvExpTrans_AmountCurr",
        "TrvExpTrans_LineStatus",
    ]
    form = {
        "Group": [
            {
                "Name": "Amounts",
                "Children": {
                    "RealInput": [
                        {"Name": "ItemizationTotal", "Value": total},
                        {"Name": "ItemizationItemized", "Value": f"{itemized:.2f}"},
                        {"Name": "ItemizationRemaining", "Value": f"{remaining:.2f}"},
                    ]
                },
            }
        ],
        "Grid": [grid("ItemizationGrid", columns, rows)],
    }
    messages = [{"Level": "Warning", "Text": warning}] if warning else []
    return envelope({"Name": "TrvItemization", "Caption": "Itemize", "Form": form}, messages=messages)


# -- random transcripts ----------------------------------------------------------------------
TOOL_NAMES = ["form_open_menu_item", "form_click_control", "form_find_controls", "data_find_entities"]

_short_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=60)
_long_text = st.builds(
    lambda word, n: (word + " ") * n,
    st.sampled_from(["lorem", "ItemizationRemaining", "東京", '{"x": 1}']),
    st.integers(50, 3000),
)
_result_text = st.one_of(
    _short_text,
    _long_text,
    st.just(receipt_response()),
    st.just(report_response()),
    st.builds(
        lambda n: itemization_response([("2024-03-01", "Daily room rate", "300.00", "Saved")] * n), st.integers(0, 12)
    ),
    st.just(envelope(None, "Error", [{"Level": "Error", "Text": "Form is busy."}])),
    st.just("Error: the form is busy"),
)


@st.composite
def units(draw, max_units: int = 14) -> list[list[Message]]:
    """A list of units: tool calls (1-3 parallel) with results, user messages, assistant text."""
    out: list[list[Message]] = []
    for index in range(draw(st.integers(0, max_units))):
        kind = draw(st.sampled_from(["tool", "tool", "tool", "user", "assistant"]))
        if kind == "tool":
            count = draw(st.integers(1, 3))
            results = [
                (f"call_{index}_{j}", draw(st.sampled_from(TOOL_NAMES)), draw(_result_text)) for j in range(count)
            ]
            out.append(tool_unit(*results))
        elif kind == "user":
            out.append([user(draw(_short_text))])
        else:
            out.append([assistant(draw(_short_text) or "thinking")])
    return out


def flatten(unit_list: list[list[Message]]) -> list[Message]:
    return [m for unit in unit_list for m in unit]


# -- a summarizer whose output says exactly what it was given ---------------------------------
class LabelSummarizer:
    """Summaries like ``sum[c1,c2]<-sum[c0]``: which results were folded, onto which summary."""

    def __init__(self, fail: bool = False) -> None:
        from erp_sim.agents.summarizers import SummaryResult
        from erp_sim.agents.types import Usage

        self._result, self._usage = SummaryResult, Usage
        self.history_calls: list[tuple[list[str], str | None]] = []
        self.observation_calls: list[tuple[str, list[str]]] = []
        self.fail = fail

    def summarize_history(self, task, messages, previous=None):
        from erp_sim.agents.summarizers import SummarizerError

        if self.fail:
            raise SummarizerError("summarizer down")
        ids = labels(messages, with_head=False)
        self.history_calls.append((ids, previous))
        text = f"sum[{','.join(ids)}]" + (f"<-{previous}" if previous else "")
        return self._result(text=text, usage=self._usage(input_tokens=10, output_tokens=2))

    def refine_observation(self, task, observation, history):
        self.observation_calls.append((observation["tool_call_id"], labels(history, with_head=False)))
        return self._result(
            text=f"refined({observation['tool_call_id']})", usage=self._usage(input_tokens=5, output_tokens=1)
        )


def labels(messages: list[Message], with_head: bool = True) -> list[str]:
    """Short names: S (system), I (instruction; I+... with a block appended), c1 (result of call c1), u:text, a:text, [c1,c2] (a call)."""
    out = []
    for m in messages:
        role = m.get("role")
        content = m.get("content")
        text = content if isinstance(content, str) else ""
        if with_head and role == "system":
            out.append("S")
        elif with_head and role == "user" and text == INSTRUCTION["content"]:
            out.append("I")
        elif with_head and role == "user" and text.startswith(INSTRUCTION["content"]):
            out.append("I+" + text[len(INSTRUCTION["content"]) :].strip())
        elif role == "tool":
            out.append(m["tool_call_id"])
        elif role == "assistant" and m.get("tool_calls"):
            continue
        elif role == "assistant":
            out.append(f"a:{text}")
        elif role == "user" and text.startswith("<"):
            out.append(text.split(">", 1)[0] + ">")
        elif role == "user":
            out.append(f"u:{text}")
    return out


def run(policy, messages: list[Message]) -> list[Message]:
    """Act at every unit boundary of ``messages`` (as a runner would); return the last context shown."""
    from erp_sim.agents.policies import split_transcript

    split = split_transcript(messages)
    head = split.head
    prefix = list(head)
    for unit in split.units:
        prefix = prefix + list(unit.messages)
        policy.act(prefix, [])
    if not split.units:
        policy.act(prefix, [])
    return policy.unwrapped.shown[-1]
