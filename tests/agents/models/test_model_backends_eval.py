"""The issue's acceptance commands, against the strict fakes: every backend, every role, to scored rows.

``erp-sim eval --configs C2,C4`` with the agent, the LLM user and the LLM summarizer on Claude (the
Messages API), on ``openai-responses:gpt-5`` and on an Azure deployment, each role's calls real HTTP
requests to a fake that refuses what its API refuses (``test_model_roles``' role handler plays the
roles: the scripted agent's decision on what it is shown, a fixed user answer, the structured
compressor). Then, on Claude: the provider's cache figures in the rows and the report, record and replay
(rows identical but for timing, with no ``anthropic`` package importable), resume after an outage, the
ACON optimizer's three roles and the memory consolidator.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from fake_acon_roles import acon_role_reply
from fake_anthropic_server import FakeAnthropicServer
from fake_azure_server import API_VERSION, FakeAzureServer
from fake_responses_server import FakeResponsesServer
from test_model_roles import role_reply, without_timing

from erp_sim.agents.acon.optimize import main as optimize_main
from erp_sim.agents.evaluation.eval_cli import main as eval_main

TASK = "hotel_50:hotel-006"  # the scripted agent asks the user, and C4 folds six times
COMMON = ["--configs", "C2,C4", "--tasks", TASK, "--runs", "1", "--quiet", "--concurrency", "1"]
CLAUDE = [
    "--agent",
    "anthropic:claude-sonnet-4-5",
    "--user",
    "anthropic:claude-haiku-4-5",
    "--summarizer",
    "anthropic:claude-haiku-4-5",
]
PRICE = ["--price", "agent=3,0.3,15,3.75"]


def scored(out: Path) -> list[dict]:
    rows = without_timing(out)
    assert [row["config"] for row in rows] == ["C2", "C4"]
    for row in rows:
        assert row["infra_error"] is None and row["termination"] == "success", row
        assert row["grade"]["success"], row["config"]
    c4 = rows[1]["metrics"]
    assert c4["summarizer_calls"] > 0 and rows[0]["metrics"]["user_model_calls"] > 0
    return rows


def claude_server() -> FakeAnthropicServer:
    server = FakeAnthropicServer()
    server.answer_with(role_reply)
    return server


def test_claude_runs_to_scored_rows_with_its_own_cache_figures(tmp_path):
    with claude_server() as server:
        assert eval_main([*COMMON, *CLAUDE, "--base-url", server.base_url, "--out", str(tmp_path), *PRICE]) == 0
        assert not server.rejections
        models = {body["model"] for body in server.requests}
    assert models == {"claude-sonnet-4-5", "claude-haiku-4-5"}
    rows = scored(tmp_path)
    for row in rows:
        metrics = row["metrics"]
        assert metrics["provider_cached_tokens"] > 0 and metrics["provider_cache_write_tokens"] > 0
        assert row["sampling"]["agent"]["api"] == "anthropic"
        assert row["sampling"]["agent"]["params"]["max_tokens"] == 4096
        assert row["sampling"]["user"]["params"]["max_tokens"] == 1024
    # full history rereads nearly all of every request; C4 between folds too, but less
    share = {
        row["config"]: row["metrics"]["provider_cached_tokens"] / row["metrics"]["reported_input_tokens"]
        for row in rows
    }
    assert share["C2"] > share["C4"] > 0.3
    report = (tmp_path / "report.md").read_text()
    assert "cache writes / benchmark (service-reported)" in report
    costs = json.loads((tmp_path / "report.json").read_text())["cost"]["configs"]
    assert costs["C2"]["provider_cache_write_tokens_per_benchmark"]["agent"] > 0
    assert costs["C2"]["cost_per_benchmark_service_counts_and_cached"]["mean"] > 0


def test_breakpoints_none_caches_nothing(tmp_path):
    with claude_server() as server:
        argv = [*COMMON, *CLAUDE, "--base-url", server.base_url, "--out", str(tmp_path), "--cache-breakpoints", "none"]
        assert eval_main(argv) == 0
        assert "cache_control" not in json.dumps(server.requests)
    for row in scored(tmp_path):
        assert row["metrics"]["provider_cached_tokens"] == 0 and row["metrics"]["provider_cache_write_tokens"] == 0
        assert row["sampling"]["agent"]["params"]["cache_breakpoints"] == "none"


def test_openai_responses_runs_to_scored_rows_with_reasoning_counted_apart(tmp_path):
    with FakeResponsesServer() as server:
        server.answer_with(role_reply)
        roles = [
            "--agent",
            "openai-responses:gpt-5",
            "--user",
            "openai-responses:gpt-5",
            "--summarizer",
            "openai-responses:gpt-5",
        ]
        assert eval_main([*COMMON, *roles, "--base-url", server.base_url, "--out", str(tmp_path)]) == 0
        assert not server.rejections
        assert all(body["store"] is False for body in server.requests)
        reasoning_sent = sum(item.get("type") == "reasoning" for body in server.requests for item in body["input"])
    assert reasoning_sent > 0
    for row in scored(tmp_path):
        assert row["metrics"]["reasoning_tokens"] > 0 and row["metrics"]["provider_cached_tokens"] > 0
        assert row["sampling"]["agent"]["api"] == "openai-responses"


def test_an_azure_deployment_runs_to_scored_rows(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_VERSION", API_VERSION)  # the standard variable; the endpoint by flag
    with FakeAzureServer(("chat-deployment",)) as azure:
        azure.chat.answer_with(role_reply)
        roles = [
            "--agent",
            "azure:chat-deployment",
            "--user",
            "azure:chat-deployment",
            "--summarizer",
            "azure:chat-deployment",
        ]
        assert eval_main([*COMMON, *roles, "--azure-endpoint", azure.endpoint, "--out", str(tmp_path)]) == 0
        assert not azure.chat.rejections
        assert set(azure.paths) == {"/openai/deployments/chat-deployment/chat/completions"}
    for row in scored(tmp_path):
        sampling = row["sampling"]["agent"]
        assert (sampling["model"], sampling["api"], sampling["base_url"], sampling["api_version"]) == (
            "chat-deployment",
            "azure",
            azure.endpoint,
            API_VERSION,
        )


def test_azure_needs_its_endpoint(tmp_path, monkeypatch):
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    with pytest.raises(SystemExit, match="AZURE_OPENAI_ENDPOINT"):
        eval_main([*COMMON, "--agent", "azure:d", "--api-version", API_VERSION, "--out", str(tmp_path)])


def test_a_claude_recording_replays_without_the_sdk(tmp_path, monkeypatch):
    with claude_server() as server:
        live = [
            *COMMON,
            *CLAUDE,
            "--base-url",
            server.base_url,
            "--out",
            str(tmp_path / "live"),
            "--record",
            str(tmp_path / "rec"),
        ]
        assert eval_main(live) == 0
    monkeypatch.setitem(sys.modules, "anthropic", None)  # `import anthropic` raises ImportError from here on
    replay = [*COMMON, "--agent", f"replay:{tmp_path / 'rec'}", "--user", "anthropic:claude-haiku-4-5"]
    replay += ["--summarizer", "anthropic:claude-haiku-4-5", "--out", str(tmp_path / "replay")]
    assert eval_main(replay) == 0

    def comparable(rows):
        return [{k: v for k, v in row.items() if k != "sampling"} | {"cassettes": None} for row in rows]

    live_rows, replayed = without_timing(tmp_path / "live"), without_timing(tmp_path / "replay")
    assert comparable(live_rows) == comparable(replayed)
    assert [row["agent"] for row in replayed] == ["anthropic:claude-sonnet-4-5"] * 2
    wrong = [*replay[:-2], "--out", str(tmp_path / "wrong")]
    wrong[wrong.index("anthropic:claude-haiku-4-5")] = "openai:claude-haiku-4-5"
    with pytest.raises(SystemExit, match="whose user is anthropic:claude-haiku-4-5"):
        eval_main(wrong)


def test_an_outage_leaves_resumable_rows(tmp_path):
    with claude_server() as server:
        server.fail_always(529)
        argv = [*COMMON, *CLAUDE, "--base-url", server.base_url, "--out", str(tmp_path), "--max-retries", "1"]
        assert eval_main(argv) == 1
        rows = without_timing(tmp_path)
        assert all(row["termination"] == "infra_error" and "Overloaded" in row["infra_error"] for row in rows)
        server.stop_failing()
        assert eval_main([*argv, "--resume"]) == 0
    scored(tmp_path)


def test_the_acon_optimizer_runs_on_claude(tmp_path):
    guideline = tmp_path / "guideline.md"
    guideline.write_text("Summarize the agent's progress.\nKeep the receipt items.\n", encoding="utf-8")
    with FakeAnthropicServer() as server:
        server.answer_with(acon_role_reply)
        argv = ["--agent", "anthropic:claude-sonnet-4-5", "--compressor", "anthropic:claude-haiku-4-5"]
        argv += ["--optimizer", "anthropic:claude-sonnet-4-5", "--tasks", "hotel_50:hotel-000", "--test-tasks", "none"]
        argv += [
            "--initial-guideline",
            str(guideline),
            "--candidates",
            "2",
            "--steps",
            "ut",
            "--out",
            str(tmp_path / "acon"),
        ]
        assert optimize_main([*argv, "--base-url", server.base_url]) == 0
        assert not server.rejections
        budgets = {body["max_tokens"] for body in server.requests}
    assert budgets == {4096, 2048}  # the agent's and the optimizer's, the compressor's
    assert (tmp_path / "acon" / "report.json").exists()


def test_the_memory_consolidator_runs_on_claude(tmp_path):
    with claude_server() as server:
        argv = [
            "--policy",
            "ga_memory",
            "--sequential",
            "--quiet",
            "--concurrency",
            "1",
            "--tasks",
            "hotel_50:hotel-000,hotel-001",
        ]
        argv += ["--memory", str(tmp_path / "memory"), "--agent", "anthropic:claude-sonnet-4-5"]
        argv += [
            "--consolidator",
            "anthropic:claude-haiku-4-5",
            "--base-url",
            server.base_url,
            "--out",
            str(tmp_path / "run"),
        ]
        assert eval_main(argv) == 0
        assert not server.rejections
    consolidated = [row for row in without_timing(tmp_path / "run") if row["config"] == "with_memory"]
    assert consolidated and all(row["memory"]["consolidator"]["model"]["api"] == "anthropic" for row in consolidated)
    assert "`anthropic:claude-haiku-4-5`" in (tmp_path / "run" / "report.md").read_text()
