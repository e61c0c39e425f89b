"""``erp-sim eval --resume`` continues a configuration only with the model settings its rows were made with.

Every role (agent, LLM user, LLM summarizer) against the project's strict local server; a command that
would pool another model, server, request param, timeout or retry count (or another env step limit or
verbosity) into a configuration's statistics is refused in one line before any request, and what a row
does not say (rows from before ``sampling``, or before ``ModelSettings``) does not block a resume.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_openai_server import FakeOpenAIServer
from test_model_roles import role_reply, roles_server
from usage_support import usage_error

from erp_sim.agents.evaluation.episode_row import read_rows
from erp_sim.agents.evaluation.eval_cli import main as eval_main

FIRST, BOTH = "hotel_50:hotel-006", "hotel_50:hotel-006,hotel-007"
NOWHERE = "http://127.0.0.1:9/v1"  # no server: a refused resume sends nothing


def command(url: str, out: Path, tasks: str, *extra: str) -> list[str]:
    return [
        *"--configs C4 --runs 1 --quiet --concurrency 1 --agent openai:fake-agent --user openai:fake-user --summarizer openai:fake-sum --tasks".split(),
        tasks,
        "--base-url",
        url,
        "--out",
        str(out),
        *extra,
    ]


def test_a_resume_that_would_pool_other_model_settings_is_refused_in_one_line(tmp_path, capsys):
    out = tmp_path / "run"
    results = out / "results.jsonl"
    with roles_server() as server:
        assert eval_main(command(server.base_url, out, FIRST)) == 0
        url, before, sent = server.base_url, results.read_bytes(), len(server.requests)
        refusals = {
            ("--agent", "openai:other-agent"): "agent openai:fake-agent, this command openai:other-agent",
            ("--base-url", NOWHERE): f"agent base_url {url}, this command {NOWHERE}",
            ("--model-param", "temperature=0.9"): "agent request param temperature 0.0, this command 0.9",
            ("--timeout", "30"): "agent timeout 300.0, this command 30.0",
            ("--max-retries", "0"): "agent max_retries 5, this command 0",
            ("--user", "rule"): "user openai:fake-user, this command rule",
            ("--model-param", "user:seed=3"): "user request param seed (not sent), this command 3",
            ("--summarizer", "structured"): "summarizer model openai:fake-sum, this command no model",
            ("--summarizer-max-tokens", "99"): "summarizer request param max_tokens (not sent), this command 99",
            ("--summarizer-base-url", NOWHERE): f"summarizer base_url {url}, this command {NOWHERE}",
            ("--context-window", "100000"): "context window none (no limit), this command 100000",
            ("--seed", "5"): "seed (run 0) 0, this command 5",
            ("--max-steps", "50"): "max steps 200, this command 50",
            ("--verbosity", "compact"): "verbosity default, this command compact",
        }
        for extra, difference in refusals.items():
            argv = command(url, out, BOTH, "--resume")
            if extra[0] == "--base-url":
                argv[argv.index(url)] = NOWHERE
            else:
                argv += extra
            assert usage_error(capsys, eval_main, argv) == (
                f"--resume: the rows of C4 in {results} have {difference}; "
                "resume with the same settings, or choose another --out"
            )
        assert len(server.requests) == sent and results.read_bytes() == before  # nothing ran, nothing changed
        # the same settings resume, and a configuration without rows may take others
        assert eval_main([*command(url, out, BOTH, "--resume")]) == 0
        assert eval_main([*command(url, out, BOTH, "--resume", "--configs", "C2", "--max-retries", "2")]) == 0
    rows = read_rows(results)
    assert sorted((r["config"], r["task_id"]) for r in rows) == [
        ("C2", "hotel-006"),
        ("C2", "hotel-007"),
        ("C4", "hotel-006"),
        ("C4", "hotel-007"),
    ]
    assert {r["sampling"]["agent"]["max_retries"] for r in rows} == {5, 2}


def test_an_episode_that_failed_on_the_server_resumes_with_a_corrected_base_url(tmp_path):
    """An infrastructure error runs again anyway: fixing a wrong --base-url (or model name) and resuming works."""
    out = tmp_path / "run"
    with FakeOpenAIServer() as broken, roles_server() as server:
        broken.fail_always(404)
        assert eval_main(command(broken.base_url, out, FIRST, "--max-retries", "0")) == 1
        [row] = read_rows(out / "results.jsonl")
        assert row["infra_error"] and row["sampling"]["agent"]["base_url"] == broken.base_url
        assert eval_main(command(server.base_url, out, FIRST, "--max-retries", "0", "--resume")) == 0
    [row] = read_rows(out / "results.jsonl")
    assert (
        row["infra_error"] is None and row["attempt"] == 2 and row["sampling"]["agent"]["base_url"] == server.base_url
    )


@pytest.mark.parametrize("era", ["before sampling", "before ModelSettings"])
def test_rows_that_name_fewer_settings_still_resume(era, tmp_path, capsys):
    out = tmp_path / "run"
    results = out / "results.jsonl"
    with FakeOpenAIServer() as server:
        server.answer_with(role_reply)
        argv = [*command(server.base_url, out, FIRST), "--configs", "C2", "--user", "rule"]
        assert eval_main(argv) == 0
        [row] = read_rows(results)
        if era == "before sampling":
            del row["sampling"]
        else:  # the model and its request params side by side, no client settings
            row["sampling"]["agent"] = {"model": "fake-agent", "temperature": 0.0}
        results.write_text(json.dumps(row) + "\n")
        if era == "before ModelSettings":  # what such a row does say is still held to
            message = usage_error(capsys, eval_main, [*argv, "--resume", "--model-param", "temperature=0.5"])
            assert "agent request param temperature 0.0, this command 0.5" in message
        argv[argv.index(FIRST)] = BOTH
        assert eval_main([*argv, "--resume", "--max-retries", "1"]) == 0
    assert [r["task_id"] for r in read_rows(results)] == ["hotel-006", "hotel-007"]


def test_the_server_named_by_openai_base_url_is_the_rows_and_a_trailing_slash_names_the_same(
    tmp_path, monkeypatch, capsys
):
    """OPENAI_BASE_URL picks the server when --base-url is left out (the client's own default): the rows name that
    server, so a resume pointed elsewhere by the variable is refused; "URL/" and "URL" are one server."""
    out = tmp_path / "run"
    argv = [*command("x", out, FIRST)]
    del argv[argv.index("--base-url") : argv.index("--base-url") + 2]
    with roles_server() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        assert eval_main(argv) == 0
        [row] = read_rows(out / "results.jsonl")
        assert row["sampling"]["agent"]["base_url"] == server.base_url
        assert eval_main(command(server.base_url + "/", out, BOTH, "--resume")) == 0  # the same server
        monkeypatch.setenv("OPENAI_BASE_URL", NOWHERE)
        resumed = [*argv[: argv.index("--tasks") + 1], BOTH, *argv[argv.index("--tasks") + 2 :], "--resume"]
        assert f"agent base_url {server.base_url}, this command {NOWHERE}" in usage_error(capsys, eval_main, resumed)
