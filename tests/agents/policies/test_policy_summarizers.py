"""Summarizers: structured facts from D365-shaped responses, and the LLM summarizer's contract."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from policy_support import (
    INSTRUCTION,
    RecordingAgent,
    envelope,
    itemization_response,
    receipt_response,
    report_list_response,
    report_response,
    step,
    transcript,
    user,
)

from erp_sim.agents.facts import facts_from_messages, render_observation
from erp_sim.agents.policies import wrap
from erp_sim.agents.summarizers import PROMPTS_DIR, LLMSummarizer, StructuredSummarizer, SummarizerError, load_prompt
from erp_sim.agents.tokens import count_text
from erp_sim.agents.types import ChatResponse, InfrastructureError, ModelRequestError, Usage
from erp_sim.workflows.itemization.facts import (
    ExpenseFacts,
    ItemizedLine,
    ReceiptItem,
    RowsMemo,
    RowsText,
    _amount,
    missing_receipt_items,
)

TASK = INSTRUCTION["content"]
SECTIONS = ("## Task", "## Key variables", "## Completed", "## To-do", "## Guardrails")


def erp_steps():
    lines = [("2024-03-01", "Daily room rate", "300.00", "Saved"), ("2024-03-01", "City tax", "45.00", "New")]
    return [
        *step("c1", report_list_response(), "form_open_menu_item"),
        *step("c2", report_response()),
        *step("c3", receipt_response()),
        *step("c4", itemization_response(lines, warning="Remaining amount is not zero.")),
    ]


# -- structured facts ----------------------------------------------------------------------
def test_facts_from_d365_responses():
    facts = facts_from_messages(erp_steps(), TASK)
    assert facts.task.report == "EXP-000123"
    assert (
        facts.task.line["TrvExpTrans_LineNum"] == "2" and facts.task.line["TrvExpTrans_AmountCurr"] == "360.00"
    )  # nested in Tab/TabPage
    assert [(i.date, i.description, i.amount) for i in facts.task.receipt_items.values()] == [
        ("2024-03-01", "Room charge", "300.00"),
        ("2024-03-01", "City tax", "45.00"),
        ("2024-03-02", "Minibar", "15.00"),
    ]
    assert (facts.task.itemization_total, facts.task.itemization_itemized, facts.task.itemization_remaining) == (
        "360.00",
        "300.00",
        "60.00",
    )
    assert [(line.subcategory, line.status) for line in facts.task.itemized_lines.values()] == [
        ("Daily room rate", "Saved"),
        ("City tax", "New"),
    ]
    assert [i.description for i in missing_receipt_items(facts.task)] == [
        "City tax",
        "Minibar",
    ]  # City tax is not saved yet
    assert facts.notes == ["Warning: Remaining amount is not zero."]
    assert facts.current_form == "TrvItemization"
    assert len(facts.actions) == 4 and facts.actions[0].startswith("form_open_menu_item() -> Done. | form TrvExpenses")


def _greedy_missing(facts: ExpenseFacts) -> list[ReceiptItem]:
    """The multiset match as written before it was made incremental: each charge takes a saved line of its amount."""
    saved: dict = {}
    for line in facts.itemized_lines.values():
        if line.status.lower() in ("saved", ""):
            saved[_amount(line.amount)] = saved.get(_amount(line.amount), 0) + 1
    missing = []
    for item in facts.receipt_items.values():
        amount = _amount(item.amount)
        if amount is not None and saved.get(amount, 0) > 0:
            saved[amount] -= 1
        else:
            missing.append(item)
    return missing


def _render(number: str, row) -> str:
    return f"{number}:{row.amount}:{row.status}"


@pytest.mark.parametrize("seed", range(6))
def test_row_memos_give_what_a_full_pass_gives_through_every_kind_of_edit(seed):
    """RowsMemo, RowsText and the charges still to itemize, after appends, a row replaced by an equal copy or by
    other values, rows deleted at the end or in the middle, a reset, and two episodes' rows in turn: each time
    what a pass over all rows gives (so a memo that kept a stale row fails)."""
    rng = random.Random(seed)
    amounts = ["10.00", "15.00", "15.00", "n/a", "7.5", "300.00"]
    memo, text = RowsMemo(_render), RowsText(_render)
    episodes = [ExpenseFacts(), ExpenseFacts()]
    for step_number in range(120):
        facts = episodes[rng.random() < 0.2]
        rows = facts.itemized_lines
        edit = rng.random()
        numbers = list(rows)
        if edit < 0.4 or not numbers:
            rows[str(len(rows) + 1)] = ItemizedLine(amount=rng.choice(amounts), status=rng.choice(["Saved", "New", ""]))
        elif edit < 0.55:
            number = rng.choice(numbers)
            rows[number] = ItemizedLine(**rows[number].__dict__)  # equal values, another object
        elif edit < 0.75:
            rows[rng.choice(numbers)] = ItemizedLine(
                amount=rng.choice(amounts), status=rng.choice(["Saved", "Modified"])
            )
        elif edit < 0.85:
            del rows[numbers[-1]]
        elif edit < 0.95:
            del rows[rng.choice(numbers)]
        else:
            rows.clear()
        if rng.random() < 0.3:
            facts.receipt_items[str(len(facts.receipt_items) + 1)] = ReceiptItem(amount=rng.choice(amounts))
        assert memo(rows) == [_render(n, r) for n, r in rows.items()], step_number
        assert text(rows) == "\n".join(_render(n, r) for n, r in rows.items()), step_number
        assert missing_receipt_items(facts) == _greedy_missing(facts), step_number


def test_a_summary_folded_batch_by_batch_is_the_summary_of_everything_at_once():
    """The running summary, built fold by fold (its rows rendered from what the fold before rendered), is the
    text a summary of the whole history at once has: through an itemized line edited after it was saved, an
    error result and a reread receipt."""
    lines = [("2024-03-01", "Room", "300.00", "Saved"), ("2024-03-01", "Tax", "45.00", "New")]
    batches = [
        [*step("c1", report_list_response(), "form_open_menu_item"), *step("c2", report_response())],
        [*step("c3", receipt_response()), *step("c4", itemization_response(lines[:1]))],
        [*step("c5", itemization_response(lines)), *step("c6", "Error: the row is locked")],
        [*step("c7", itemization_response([lines[0], ("2024-03-01", "Tax", "40.00", "Saved")]))],
        [*step("c8", receipt_response()), *step("c9", itemization_response(lines[:1]))],
    ]
    summarizer = StructuredSummarizer()
    previous = None
    for end, batch in enumerate(batches, start=1):
        previous = summarizer.summarize_history(TASK, batch, previous).text
        everything = [message for earlier in batches[:end] for message in earlier]
        assert previous == StructuredSummarizer().summarize_history(TASK, everything).text
        if end == 4:  # the edited line, as the page showed it last
            assert "Tax | 40.00 | Saved" in previous and "Tax | 45.00" not in previous
    assert "Tax | 40.00" not in previous and "Seen: Error: the row is locked" in previous


def test_structured_history_summary_has_the_acon_sections():
    text = StructuredSummarizer().summarize_history(TASK, erp_steps()).text
    for section in SECTIONS:
        assert section in text
    for fact in (
        "Report: EXP-000123",
        "2024-03-02 | Minibar | 15.00",
        "remaining 60.00",
        "Save itemized rows 2.",
        "Seen: Warning",
    ):
        assert fact in text


def test_structured_summary_continues_from_its_own_previous_summary():
    summarizer = StructuredSummarizer()
    steps = erp_steps()
    first = summarizer.summarize_history(TASK, steps[:6])  # report list, report, receipt
    second = summarizer.summarize_history(TASK, steps[6:], previous=first.text)
    assert "Minibar" in second.text  # the receipt was only in the first batch
    assert "remaining 60.00" in second.text
    assert second.text == summarizer.summarize_history(TASK, steps).text  # same as summarizing all at once
    foreign = summarizer.summarize_history(TASK, steps[6:], previous="An LLM wrote this.")
    assert foreign.text.startswith("## Earlier summary\nAn LLM wrote this.")


def test_structured_summarizer_is_robust_to_odd_responses():
    odd = [
        "not json at all",
        "[1, 2, 3]",
        "{broken json",
        json.dumps({"Result": "ok"}),
        json.dumps({"FormState": {"Name": "TrvItemization", "Form": {"Grid": "oops", "RealInput": [None, 3]}}}),
        json.dumps(
            {
                "FormState": {
                    "Name": "TrvReceiptViewer",
                    "Form": {"Grid": [{"Name": "ReceiptItemsGrid", "Rows": [1, {"Values": None}]}]},
                }
            }
        ),
        envelope(None, "Error", [{"Level": "Error", "Text": "Form is busy."}]),
        "",
    ]
    messages = [m for i, text in enumerate(odd) for m in step(f"c{i}", text)] + [user("are you done?")]
    summarizer = StructuredSummarizer()
    text = summarizer.summarize_history(TASK, messages).text
    assert "Seen: Error: Form is busy." in text and "## User said\n- are you done?" in text
    for message in messages:
        if message["role"] == "tool":
            assert summarizer.refine_observation(TASK, message, []).text.strip()


def test_refined_observation_keeps_values_and_drops_noise():
    original = itemization_response([("2024-03-01", "Daily room rate", "300.00", "Saved")], warning="Check the amount.")
    refined = render_observation(original)
    assert "SessionId" not in refined and "MCPActivityId" not in refined
    for fact in (
        "Form TrvItemization",
        "ItemizationRemaining = 60.00",
        "1: 2024-03-01 | Daily room rate | 300.00 | Saved",
        "Warning: Check the amount.",
    ):
        assert fact in refined
    assert count_text(refined) < count_text(original)
    compact = json.loads(original)
    compact["FormState"]["Form"]["Grid"][0]["Columns"] = ["TrvExpTrans_TransDate", "TrvExpTrans_AmountCurr"]
    assert "1: 2024-03-01 | 300.00" in render_observation(json.dumps(compact))  # compact verbosity: column names only


def test_real_erp_transcript_if_the_simulator_is_available():
    """Against the simulator's own responses (an oracle run), when erp_sim is importable."""
    try:
        from erp_sim.erp_session import ErpSession
        from erp_sim.oracle import oracle_calls
        from erp_sim.task_sets import get_task
    except Exception as exc:  # the simulator is developed in parallel; this test follows it
        pytest.skip(f"erp_sim not importable: {exc}")
    task = get_task("hotel_50", 0)
    session = ErpSession(task)
    calls = oracle_calls(task)
    messages, index = [], 0
    name, arguments = next(calls)
    try:
        while True:
            index += 1
            call = {
                "id": f"call_{index}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            text = session.call(name, arguments).text
            messages.append({"role": "tool", "tool_call_id": f"call_{index}", "name": name, "content": text})
            name, arguments = calls.send(text)
    except StopIteration:
        pass
    facts = facts_from_messages(messages, task.instruction())
    assert facts.task.report == task.report_number
    assert sorted(i.amount for i in facts.task.receipt_items.values()) == sorted(r.amount for r in task.receipt_items)
    assert facts.task.itemization_remaining == "0.00"
    assert facts.task.receipt["document"] == task.document_number
    assert (
        f"Receipt: document {task.document_number}"
        in StructuredSummarizer().summarize_history(task.instruction(), messages).text
    )
    assert sorted(line.amount for line in facts.task.itemized_lines.values()) == sorted(
        r.amount for r in task.receipt_items
    )
    assert not missing_receipt_items(facts.task)


SAMPLES = sorted((Path(__file__).resolve().parents[3] / "fixtures" / "samples").glob("*"))


@pytest.mark.skipif(not SAMPLES, reason="no sample responses under fixtures/samples yet")
@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_sample_responses(path):
    """The simulator's sample responses (both verbosities): facts found, observation compacted."""
    text = path.read_text(encoding="utf-8")
    form = json.loads(text)["FormState"]["Name"]
    messages = step("c1", text)
    facts = facts_from_messages(messages)
    assert facts.current_form == form
    if form == "TrvExpenseReport":
        assert facts.task.report.startswith("EXP-") and facts.task.report in text
    elif form == "TrvReceiptViewer":
        assert len(facts.task.receipt_items) == text.count('"ReceiptItem_Amount":') > 0
        assert facts.task.receipt["document"] in text
    elif form == "TrvItemization":
        assert facts.task.itemization_total and facts.task.itemization_remaining
        assert f"Total {facts.task.itemization_total}" in json.loads(text)["FormState"]["Summary"]
    summarizer = StructuredSummarizer()
    refined = summarizer.refine_observation(TASK, messages[1], []).text
    assert count_text(refined) < count_text(text)
    for item in facts.task.receipt_items.values():
        assert item.amount in refined
    assert summarizer.summarize_history(TASK, messages).text.strip()


# -- the LLM summarizer --------------------------------------------------------------------
class FakeChatModel:
    def __init__(
        self,
        answer: str | None = "## Task\nshort",
        usage: Usage | None = None,
        error: Exception | None = None,
        refusal: str | None = None,
    ):
        self.answer, self.usage, self.error, self.refusal = answer, usage or Usage(), error, refusal
        self.requests: list[list[dict]] = []

    def complete(self, messages, tools=None):
        self.requests.append(messages)
        if self.error:
            raise self.error
        refused = {"refusal": self.refusal} if self.refusal else {}
        return ChatResponse(message={"role": "assistant", "content": self.answer, **refused}, usage=self.usage)

    async def acomplete(self, messages, tools=None):
        return self.complete(messages, tools)


def test_prompt_files_have_the_acon_sections():
    history = load_prompt("summarize_history.md")
    for section in SECTIONS:
        assert section in history
    for word in ("report number", "receipt item", "remaining"):
        assert word in history.lower()
    assert (PROMPTS_DIR / "refine_observation.md").read_text().strip()


def test_llm_summarizer_sends_prompt_task_previous_and_steps():
    model = FakeChatModel(usage=Usage(input_tokens=120, output_tokens=30))
    result = LLMSummarizer(model).summarize_history(TASK, erp_steps()[:2], previous="earlier")
    system, request = model.requests[0]
    assert system == {"role": "system", "content": load_prompt("summarize_history.md")}
    assert request["content"].startswith(f"# Task\n{TASK}\n\n# Previous summary\nearlier\n\n# Steps to fold in\n")
    assert "[assistant calls form_open_menu_item] {}" in request["content"]
    assert "TrvExpenses" in request["content"]
    assert (result.text, result.usage, result.calls) == ("## Task\nshort", Usage(input_tokens=120, output_tokens=30), 1)


def test_llm_summarizer_usage_is_the_services_and_its_o200k_counts_go_to_the_episode_meter():
    from erp_sim.agents.tokens.prompt_cache import EpisodeMeter

    model = FakeChatModel(answer="refined text")
    meter = EpisodeMeter().start()
    try:
        result = LLMSummarizer(model).refine_observation(TASK, erp_steps()[1], erp_steps()[:0])
    finally:
        meter.stop()
    assert result.usage == Usage()  # the model reported nothing: 0, never our count in its place
    (call,) = meter.drain()
    assert call.role == "summarizer" and call.input_tokens > 100 and call.reported_input_tokens == 0
    assert call.output_tokens == count_text("refined text") + count_text("assistant") + 3
    assert model.requests[0][0]["content"] == load_prompt("refine_observation.md")


def test_llm_summarizer_failures_raise():
    with pytest.raises(SummarizerError, match="summarizer model failed: bad gateway"):
        LLMSummarizer(FakeChatModel(error=ValueError("bad gateway"))).summarize_history(TASK, erp_steps())


@pytest.mark.parametrize(
    "model,error",
    [
        (FakeChatModel(answer="   "), "summarizer: history summary: the model answered with no text"),
        (
            FakeChatModel(answer=None, refusal="I can't help."),
            "summarizer: history summary: the model refused: I can't",
        ),
    ],
)
def test_an_llm_summary_without_text_is_the_model_s_scored_failure(model, error):
    """An empty or refused answer is what the model did (a scored failure named as the summarizer's), not a bug
    of the harness (an unscored row that --resume would run again and again)."""
    with pytest.raises(ModelRequestError, match=error) as failed:
        LLMSummarizer(model).summarize_history(TASK, erp_steps())
    assert not isinstance(failed.value, SummarizerError)


def test_a_failed_llm_summary_is_counted_as_a_call_with_its_tokens():
    """It was in the summarizer's tokens but not its call count (the policy counts a summary once it is made)."""
    import gymnasium as gym

    import erp_sim.envs  # noqa: F401  (registers the ids)
    from erp_sim.agents.runner import run_episode
    from erp_sim.agents.scripted import ScriptedAgent

    policy = wrap(ScriptedAgent(), "last_n_summary:n=1,w=1", summarizer=LLMSummarizer(FakeChatModel(answer="")))
    trajectory = run_episode(gym.make("erp_sim/ExpenseItemization-v0"), policy, task_id="hotel-000")
    assert trajectory.model_error == "summarizer: history summary: the model answered with no text"
    assert trajectory.metrics.summarizer_calls == 1 and trajectory.metrics.summarizer_input_tokens > 100
    last = trajectory.steps[-1]
    assert last.summarizer_calls == 1 and last.role_calls[-1].role == "summarizer"
    assert last.summarizer_tokens == trajectory.metrics.summarizer_tokens > 100  # the step's figure as the episode's


def test_infrastructure_errors_pass_through():
    with pytest.raises(InfrastructureError):
        LLMSummarizer(FakeChatModel(error=InfrastructureError("429 after retries"))).summarize_history(TASK, [])


def test_an_empty_llm_summary_is_never_cached_by_a_policy():
    model = FakeChatModel(answer="")
    policy = wrap(RecordingAgent(), "last_n_summary:n=1,w=1", summarizer=LLMSummarizer(model))
    messages = transcript(step("c1", "a"), step("c2", "b"))
    with pytest.raises(ModelRequestError, match="no text"):
        policy.act(messages, [])
    model.answer = "## Task\nsummary of c1"
    result = policy.act(messages, [])
    assert result.summarizer_calls == 1 and len(model.requests) == 2
    assert "summary of c1" in policy.unwrapped.shown[-1][2]["content"]
