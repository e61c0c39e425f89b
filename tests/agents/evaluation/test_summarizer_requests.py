"""What an LLM summarizer was sent and answered is kept in the trajectory, once per distinct message, and shown.

One C4 episode (last_n_summary:n=5,w=3) of the scripted agent with ``--summarizer openai:fake-sum`` against
the fake OpenAI server (``fake_acon_roles``: the structured summary of the steps it is sent): the requests the
server received are exactly the trajectory's ``role_contexts["summarizer"]`` steps, its answers the messages
each summarizer call points at; the file round-trips through ``Trajectory``; ``erp-sim show`` prints both at the
summary steps, and the run page carries them (and, in a browser, draws them). The same episode with the offline
structured summarizer keeps nothing of the kind (the eval digests hold its bytes).
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from fake_acon_roles import acon_role_reply
from fake_openai_server import FakeOpenAIServer
from view_support import page_payloads

from erp_sim.agents.evaluation import show
from erp_sim.agents.evaluation.episode_row import read_rows
from erp_sim.agents.evaluation.eval_cli import main as eval_main
from erp_sim.agents.evaluation.report import view
from erp_sim.agents.trajectory import Trajectory

TASK = "hotel-024"  # 13 receipt items: C4 folds history several times
COMMON = ["--configs", "C4", "--tasks", f"hotel_50:{TASK}", "--runs", "1", "--quiet", "--concurrency", "1"]


@pytest.fixture(scope="module")
def summarized(tmp_path_factory) -> tuple[Path, list[dict]]:
    """The run directory and the summarizer requests the server received."""
    out = tmp_path_factory.mktemp("summarized")
    with FakeOpenAIServer() as server:
        server.answer_with(acon_role_reply)
        argv = [*COMMON, "--summarizer", "openai:fake-sum", "--base-url", server.base_url, "--out", str(out)]
        assert eval_main(argv) == 0
        received = list(server.requests)
    return out, received


def _trajectory(out: Path) -> dict:
    (row,) = read_rows(out / "results.jsonl")
    with gzip.open(out / row["trajectory"], "rt", encoding="utf-8") as stream:
        return json.load(stream)


def test_the_summarizers_requests_and_answers_are_kept_once_per_distinct_message(summarized):
    out, received = summarized
    data = _trajectory(out)
    kept = data["role_contexts"]["summarizer"]
    calls = [call for step in data["steps"] for call in step["role_calls"] if call["role"] == "summarizer"]
    assert len(received) == len(calls) == len(kept["steps"]) == data["metrics"]["summarizer_calls"] >= 3
    # what was sent, call by call, in order, and the answer each call points at
    assert [call["request"] for call in calls] == list(range(len(calls)))
    assert [[kept["messages"][i] for i in kept["steps"][call["request"]]] for call in calls] == [
        body["messages"] for body in received
    ]
    answers = [kept["messages"][call["answer"]] for call in calls]
    assert all(a["role"] == "assistant" and a["content"].startswith("## Task") for a in answers)
    assert [kept["origins"][call["answer"]] for call in calls] == ["answer"] * len(calls)
    # the instruction is the same at every call: stored once, as the agent's repeated messages are
    assert len({kept["steps"][call["request"]][0] for call in calls}) == 1
    assert len(kept["messages"]) == 1 + 2 * len(calls)
    assert set(kept["origins"]) == {"request", "answer"} and len(kept["tokens"]) == len(kept["messages"])
    # the folded summary the agent was shown is the summarizer's answer
    assert any(answers[0]["content"] in (m.get("content") or "") for m in data["context"]["messages"])


def test_a_trajectory_with_summarizer_messages_round_trips(summarized):
    data = _trajectory(summarized[0])
    loaded = Trajectory.model_validate(data)
    assert loaded.role_contexts["summarizer"].steps and loaded.deterministic_dump() == data
    again = Trajectory.model_validate_json(json.dumps(data))
    assert json.dumps(again.deterministic_dump()) == json.dumps(data)


def test_offline_summaries_keep_no_summarizer_messages(tmp_path):
    assert eval_main([*COMMON, "--out", str(tmp_path)]) == 0
    data = _trajectory(tmp_path)
    assert "role_contexts" not in data and data["metrics"]["summarizer_calls"] > 0
    assert all("request" not in call for step in data["steps"] for call in step["role_calls"])


def test_show_prints_what_the_summarizer_was_sent_and_answered(summarized, capsys):
    out, received = summarized
    assert show.main([str(out), TASK, "--width", "80"]) == 0
    text = capsys.readouterr().out
    assert text.count("  summarizer was sent: s#0, ") == len(received)
    assert text.count("      s#0 system (") == 1  # printed once, then referred to by number
    answers = re.findall(r"^    summarizer answered s#(\d+) \([\d,]+ tok\): ## Task", text, re.MULTILINE)
    assert len(answers) == len(received)
    # --step K prints the whole request and answer of that step's summarizer call, unabridged
    data = _trajectory(out)
    step = next(k for k, s in enumerate(data["steps"]) if s["role_calls"])
    assert show.main([str(out), TASK, "--step", str(step)]) == 0
    whole = capsys.readouterr().out
    assert received[0]["messages"][1]["content"].replace("\n", "⏎ ") in whole
    assert data["role_contexts"]["summarizer"]["messages"][2]["content"].replace("\n", "⏎ ") in whole


def test_the_run_page_carries_what_the_summarizer_was_sent_and_answered(summarized):
    out, received = summarized
    page = view.build_page(out)
    (record,), table = page_payloads(page, "episode"), [row for chunk in page_payloads(page, "chunk") for row in chunk]
    calls = [c for call in record["calls"] for c in call.get("role_calls", []) if c["role"] == "summarizer"]
    assert len(calls) == len(received)
    for call, body in zip(calls, received):
        assert [table[i][:2] for i in call["sent"]] == [[m["role"], m["content"]] for m in body["messages"]]
        role, text = table[call["answer"]][:2]
        assert role == "assistant" and text.startswith("## Task")


@pytest.mark.extras
def test_the_run_page_draws_what_the_summarizer_was_sent_and_answered(summarized, browser_page):
    out = summarized[0]
    page_file = view.write_view(out)
    data = _trajectory(out)
    step = next(k for k, s in enumerate(data["steps"]) if s["role_calls"])
    browser_page.goto(page_file.as_uri() + f"#episode/0/{step}")
    browser_page.wait_for_selector("#context details.role-request")
    browser_page.locator("#context details.role-request summary").first.click()
    request = browser_page.locator('#context details.role-request .msg[data-mark="request"]')
    assert request.count() == 2 and "the summarizer was sent (2 messages)" in browser_page.inner_text("#context")
    answer = browser_page.locator('#context details.role-request .msg[data-mark="answer"]').first
    assert answer.inner_text().split("\n")[0].startswith("assistant") and "## Task" in answer.inner_text()
