"""Every model role from the CLI (agent, LLM user, LLM summarizer), recorded and replayed with its provenance.

All against the project's strict local OpenAI-compatible server: a role handler plays the agent
(the scripted agent's decision on what it is shown), the user (a fixed answer) and the summarizer
(``fake_acon_roles``' structured compressor), so each role's calls are real HTTP requests.
"""

from __future__ import annotations

import gzip
import inspect
import json
import re
from pathlib import Path

import pytest
from fake_acon_roles import acon_role_reply
from fake_openai_server import FakeOpenAIServer
from harness_support import recording
from usage_support import usage_error

from erp_sim.agents.command_line import UsageError
from erp_sim.agents.evaluation.episode_row import read_rows
from erp_sim.agents.evaluation.eval_cli import main as eval_main
from erp_sim.agents.evaluation.eval_options import folder_name
from erp_sim.agents.evaluation.sweep import main as sweep_main
from erp_sim.agents.llm_user import END_TOKEN
from erp_sim.agents.models.factory import chat_model
from erp_sim.agents.models.roles import EVAL_ROLES, default_temperature, params_by_role, parse_model_param
from erp_sim.agents.policies import SUMMARIZING_POLICIES, parse_policy
from erp_sim.agents.policies.registry import POLICIES

TASK = "hotel_50:hotel-006"  # the scripted agent asks the user here, so the LLM user is called
USER_ANSWER = "Yes, please add every missing charge as its own itemized line."
# every summarizing policy, with thresholds low enough that one short episode calls the summarizer
SUMMARIZING = [
    "last_n_summary:n=2,w=1",
    "acon_history:t=1500",
    "acon_observation:t=300",
    "acon_observation:t=300+last_n_summary:n=3,w=2",
]


SOP_ANSWER = json.dumps(
    {
        "key": "sop/itemize_hotel_expense",
        "summary": "itemize a hotel line",
        "goal": "itemize {line}",
        "steps": [{"tool": "form_open_menu_item", "arguments": {"name": "TrvExpenses"}}],
    }
)


def role_reply(body):
    """Agent (a request with tools), user (its prompt has the end token), consolidator, else the summarizer."""
    first = body["messages"][0]["content"]
    if not body.get("tools") and END_TOKEN in first:
        return {"role": "assistant", "content": USER_ANSWER}, 20, 12
    if not body.get("tools") and "graded SUCCESSFUL" in first:
        return {"role": "assistant", "content": f"The SOP:\n{SOP_ANSWER}"}, 30, 40
    return acon_role_reply(body)


def roles_server() -> FakeOpenAIServer:
    server = FakeOpenAIServer()
    server.answer_with(role_reply)
    return server


def kinds(server: FakeOpenAIServer) -> list[str]:
    """Which role sent each request the server received."""

    def kind(body):
        if body.get("tools"):
            return "agent"
        return "user" if END_TOKEN in body["messages"][0]["content"] else "summarizer"

    return [kind(body) for body in server.requests]


def without_timing(out: Path) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "timing"} for row in read_rows(out / "results.jsonl")]


def trajectories(out: Path, rows: list[dict]) -> list[bytes]:
    return [(out / row["trajectory"]).read_bytes() for row in rows]


COMMON = ["--tasks", TASK, "--runs", "1", "--quiet", "--concurrency", "1"]


# --- parsing ----------------------------------------------------------------------------------------
def test_model_params_parse_roles_and_json_values():
    assert parse_model_param("agent:tool_choice=auto", EVAL_ROLES) == ("agent", "tool_choice", "auto")
    assert parse_model_param("max_tokens=64", EVAL_ROLES) == (None, "max_tokens", 64)
    assert parse_model_param("temperature=null", EVAL_ROLES) == (None, "temperature", None)
    assert parse_model_param('user:stop=["\\n", "END"]', EVAL_ROLES) == ("user", "stop", ["\n", "END"])
    assert parse_model_param("summarizer:note=a=b:c", EVAL_ROLES) == ("summarizer", "note", "a=b:c")
    assert parse_model_param("temperature=NaN", EVAL_ROLES) == (None, "temperature", "NaN")  # not JSON: text
    items = [(None, "max_tokens", 64), ("agent", "max_tokens", 512), (None, "seed", 1)]
    assert params_by_role(items, EVAL_ROLES) == {
        "agent": {"max_tokens": 512, "seed": 1},
        "user": {"max_tokens": 64, "seed": 1},
        "summarizer": {"max_tokens": 64, "seed": 1},
        "consolidator": {"max_tokens": 64, "seed": 1},
    }


def test_one_token_limit_per_request():
    """OpenAI refuses max_tokens with max_completion_tokens: a role's own limit replaces an unprefixed one of the
    other name, and both at one level is a usage error before any episode (every request would be refused)."""
    items = [(None, "max_completion_tokens", 900), ("summarizer", "max_tokens", 300)]
    params = params_by_role(items, EVAL_ROLES)
    assert params["summarizer"] == {"max_tokens": 300} and params["agent"] == {"max_completion_tokens": 900}
    assert params_by_role([*items, (None, "max_tokens", None)], EVAL_ROLES)["user"] == {
        "max_completion_tokens": 900,
        "max_tokens": None,  # null: not sent
    }
    for both in (
        [(None, "max_tokens", 5), (None, "max_completion_tokens", 9)],
        [*items, ("summarizer", "max_completion_tokens", 9)],
    ):
        with pytest.raises(UsageError, match="both max_tokens and max_completion_tokens"):
            params_by_role(both, EVAL_ROLES)


def test_reasoning_models_get_no_temperature_by_default():
    """o-series and gpt-5 models refuse temperature 0 (HTTP 400): it is not sent unless asked for."""
    for name in ("gpt-5", "gpt-5-mini", "gpt-5.1", "o3", "o4-mini", "openai/o1-preview", "GPT-5"):
        assert default_temperature(name) is None, name
        assert "temperature" not in chat_model(name, "http://127.0.0.1:9/v1").sampling_params
    for name in ("gpt-4.1", "gpt-4o-mini", "gpt-oss-20b", "openai/gpt-oss-120b", "qwen3-8b", "gpt-50", "osmosis"):
        assert default_temperature(name) == 0.0, name
        assert chat_model(name, "http://127.0.0.1:9/v1").sampling_params["temperature"] == 0.0
    asked = chat_model("gpt-5", "http://127.0.0.1:9/v1", params={"temperature": 1.0}).sampling_params
    assert asked["temperature"] == 1.0


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("compressor:max_tokens=5", "unknown role 'compressor' (roles: agent, user, summarizer, consolidator)"),
        ("max_tokens", "expected [ROLE:]KEY=VALUE"),
        ("agent:=5", "'' is not a request key"),
        ("agent:model=gpt-x", "'model' is set by the harness, not by --model-param"),
        ("timeout=30", "use --timeout, which sets the client of every role"),
    ],
)
def test_a_bad_model_param_is_a_one_line_usage_error(item, message, capsys, tmp_path):
    for main in (eval_main, sweep_main):
        with pytest.raises(SystemExit) as stop:
            main(["--model-param", item, "--out", str(tmp_path)])
        assert stop.value.code == 2
        error = capsys.readouterr().err.strip().splitlines()[-1]
        assert error.endswith(message) and "--model-param" in error
    assert not any(tmp_path.iterdir())


def test_every_summarizing_policy_is_known_as_one():
    """The policies that call self.summarizer are exactly the ones eval gives an LLM summarizer to."""
    calling = {
        name
        for name, cls in POLICIES.items()
        if any("self.summarizer." in inspect.getsource(k) for k in cls.__mro__ if k.__module__.startswith("erp_sim"))
    }
    assert calling == SUMMARIZING_POLICIES


# --- request settings reach the server and the row ------------------------------------------------
def test_model_params_timeout_and_retries_reach_every_request_and_the_row(tmp_path):
    with roles_server() as server:
        roles = "--policy last_n_summary:n=2,w=1 --agent openai:fake-agent --user openai:fake-user --summarizer openai:fake-sum"
        params = "--model-param max_tokens=400 --model-param agent:tool_choice=auto --model-param user:temperature=0.7 --summarizer-seed 11 --summarizer-max-tokens 300 --timeout 45 --max-retries 2"
        assert eval_main([*COMMON, *roles.split(), *params.split(), *recording(server.base_url, tmp_path)]) == 0
        sent = list(zip(kinds(server), server.requests))
        assert not server.rejections
    assert {kind for kind, _ in sent} == {"agent", "user", "summarizer"}
    for kind, body in sent:
        assert body["model"] == f"fake-{kind.replace('summarizer', 'sum')}"
        expected = {
            "agent": {"max_tokens": 400, "tool_choice": "auto", "temperature": 0.0},
            "user": {"max_tokens": 400, "temperature": 0.7},
            "summarizer": {"max_tokens": 300, "seed": 11, "temperature": 0.0},
        }[kind]
        assert {key: body.get(key) for key in expected} == expected
        assert "tool_choice" not in body or kind == "agent"
    [row] = read_rows(tmp_path / "run" / "results.jsonl")
    assert row["grade"]["success"] and row["metrics"]["summarizer_calls"] == kinds(server).count("summarizer")
    assert row["metrics"]["user_model_calls"] == kinds(server).count("user")
    assert row["sampling"] == {
        "agent": {
            "model": "fake-agent",
            "params": {"temperature": 0.0, "max_tokens": 400, "tool_choice": "auto"},
            "timeout": 45.0,
            "max_retries": 2,
            "base_url": server.base_url,  # where the requests went: provenance
        },
        "user": {
            "model": "fake-user",
            "params": {"temperature": 0.7, "max_tokens": 400},
            "timeout": 45.0,
            "max_retries": 2,
            "base_url": server.base_url,  # where the requests went: provenance
        },
        "summarizer": {
            "model": "fake-sum",
            "params": {"temperature": 0.0, "max_tokens": 300, "seed": 11},
            "timeout": 45.0,
            "max_retries": 2,
            "base_url": server.base_url,  # where the requests went: provenance
        },
        "context_window": None,
        "max_steps": 200,
        "verbosity": "default",
        "cassettes": str(tmp_path / "rec"),
        # the server answers as its own model, whatever was asked: each role's served name, for provenance
        "served_models": {"agent": ["fake-model"], "user": ["fake-model"], "summarizer": ["fake-model"]},
    }
    report = (tmp_path / "run" / "report.md").read_text()
    assert "**Models that answered**" in report and "agent: `fake-model` (asked for `fake-agent`)" in report
    manifest = json.loads((tmp_path / "rec" / "cassettes" / "models.json").read_text())
    assert manifest == {role: row["sampling"][role] for role in ("agent", "summarizer", "user")}
    episode = tmp_path / "rec" / "cassettes" / folder_name(row["config"])  # the spec's ':' is '_' in a folder
    for role, suffix in (("agent", ""), ("user", ".user"), ("summarizer", ".summarizer")):
        lines = [json.loads(line) for line in (episode / f"hotel-006-run0{suffix}.jsonl").read_text().splitlines()]
        assert len(lines) == kinds(server).count(role)
        assert all(line["request"]["params"] == row["sampling"][role]["params"] for line in lines)


# --- record every role, replay offline ----------------------------------------------------------
@pytest.mark.parametrize("policy", SUMMARIZING)
def test_a_recording_of_every_role_replays_identically_with_the_server_stopped(policy, tmp_path):
    roles = ["--user", "openai:fake-user", "--summarizer", "openai:fake-sum"]
    with roles_server() as server:
        argv = [*COMMON, "--configs", "C1", "--policy", policy, "--agent", "openai:fake-agent", *roles]
        assert eval_main([*argv, *recording(server.base_url, tmp_path)]) == 0
        assert not server.rejections and {"user", "summarizer"} <= set(kinds(server))
    recorded = without_timing(tmp_path / "run")
    assert [r["config"] for r in recorded] == ["C1", parse_policy(policy).spec] and all(
        r["infra_error"] is None for r in recorded
    )
    assert recorded[1]["metrics"]["summarizer_calls"] > 0 and recorded[1]["metrics"]["user_model_calls"] > 0
    assert (
        recorded[0]["sampling"]["user"] is None and recorded[0]["sampling"]["summarizer"] is None
    )  # C1: no user, no summary
    # the server is stopped: anything not in the cassettes would fail the episode
    assert (
        eval_main(
            [
                *COMMON,
                *"--configs C1 --policy".split(),
                policy,
                "--agent",
                f"replay:{tmp_path / 'rec'}",
                *roles,
                "--out",
                str(tmp_path / "replay"),
            ]
        )
        == 0
    )
    replayed = without_timing(tmp_path / "replay")
    assert json.dumps(replayed) == json.dumps(recorded)  # byte for byte, key order included
    assert trajectories(tmp_path / "replay", replayed) == trajectories(tmp_path / "run", recorded)


def test_a_replay_that_contradicts_the_recording_is_refused_in_one_line(tmp_path, capsys):
    with roles_server() as server:
        roles = "--configs C4 --agent openai:fake-agent --user openai:fake-user --summarizer openai:fake-sum"
        argv = [*COMMON, *roles.split(), "--model-param", "summarizer:max_tokens=300"]
        assert eval_main([*argv, *recording(server.base_url, tmp_path)]) == 0
    rec = tmp_path / "rec"
    replay = [*COMMON, "--configs", "C4", "--agent", f"replay:{rec}", "--out", str(tmp_path / "replay")]
    refusals = {
        (
            "--user",
            "openai:other",
            "--summarizer",
            "openai:fake-sum",
        ): f"--user openai:other contradicts the recording in {rec}, whose user is openai:fake-user",
        (
            "--user",
            "rule",
            "--summarizer",
            "openai:fake-sum",
        ): f"the recording in {rec} has a user model, openai:fake-user; pass --user openai:fake-user to replay it",
        (
            "--user",
            "openai:fake-user",
        ): f"the recording in {rec} has a summarizer model, openai:fake-sum; pass --summarizer openai:fake-sum to replay it",
        (
            "--user",
            "openai:fake-user",
            "--summarizer",
            "openai:fake-sum",
            "--summarizer-max-tokens",
            "99",
        ): f"--model-param summarizer:max_tokens=99 contradicts the recording in {rec} (summarizer max_tokens: 300)",
        (
            "--user",
            "openai:fake-user",
            "--summarizer",
            "openai:fake-sum",
            "--max-retries",
            "0",
        ): f"--max-retries 0 contradicts the recording in {rec} (agent: 5)",
        # a replay sends nothing: a server other than the recorded one can only be a mistake
        (
            "--user",
            "openai:fake-user",
            "--summarizer",
            "openai:fake-sum",
            "--base-url",
            "http://user:key@10.9.9.9/other/v1?api-key=k",
        ): f"--base-url http://10.9.9.9/other/v1 contradicts the recording in {rec} (agent's server: {server.base_url})",
        (
            "--user",
            "openai:fake-user",
            "--summarizer",
            "openai:fake-sum",
            "--base-url",
            server.base_url,
            "--summarizer-base-url",
            "http://10.8.8.8/v1",
        ): f"--summarizer-base-url http://10.8.8.8/v1 contradicts the recording in {rec} "
        f"(summarizer's server: {server.base_url})",
    }
    for named, message in refusals.items():
        assert usage_error(capsys, eval_main, [*replay, *named]) == message
    assert not (tmp_path / "replay").exists()
    # what is named as recorded, or not named at all, replays
    assert (
        eval_main(
            [
                *replay,
                *("--user", "openai:fake-user", "--summarizer", "openai:fake-sum", "--summarizer-max-tokens", "300"),
                *("--base-url", server.base_url),  # the recorded server: no contradiction
            ]
        )
        == 0
    )
    assert without_timing(tmp_path / "replay") == without_timing(tmp_path / "run")
    # recording into the same folder with another model, or from another server, is refused too
    recorded_url = server.base_url  # the server is gone: refused before any request
    for summarizer, url, refused in (
        ("other-sum", recorded_url, "summarizer is openai:fake-sum"),
        ("fake-sum", "http://127.0.0.1:9/v1", f'agent is openai:fake-agent {{"base_url": "{recorded_url}"'),
    ):
        message = usage_error(
            capsys,
            eval_main,
            [
                *COMMON,
                *f"--configs C4 --agent openai:fake-agent --user openai:fake-user --summarizer openai:{summarizer} --out".split(),
                str(tmp_path / "run2"),
                "--base-url",
                url,
                "--record",
                str(rec),
            ],
        )
        assert re.search(rf"--record .* whose {re.escape(refused)}.* record into another", message)


def test_sweep_takes_the_summarizer_and_model_params(tmp_path):
    with roles_server() as server:
        assert (
            sweep_main(
                [
                    *"--family last_n_summary --grid n=2 --grid w=1,2 --tasks".split(),
                    TASK,
                    *"--quiet --concurrency 1 --agent openai:fake-agent --summarizer openai:fake-sum --summarizer-temperature 0.3 --model-param seed=5 --base-url".split(),
                    server.base_url,
                    "--out",
                    str(tmp_path),
                ]
            )
            == 0
        )
        summaries = [body for kind, body in zip(kinds(server), server.requests) if kind == "summarizer"]
    assert summaries and all(b["model"] == "fake-sum" and b["temperature"] == 0.3 and b["seed"] == 5 for b in summaries)
    rows = read_rows(tmp_path / "results.jsonl")
    assert [r["sampling"]["summarizer"]["params"] for r in rows] == [{"temperature": 0.3, "seed": 5}] * 2
    assert sum(r["metrics"]["summarizer_calls"] for r in rows) == len(summaries)


# --- the summarizer's failures follow the agent's table ------------------------------------------
@pytest.mark.parametrize("policy", SUMMARIZING)
def test_a_summarizer_outage_is_an_unscored_row_that_resume_runs_again_and_replays(policy, tmp_path):
    with roles_server() as server, FakeOpenAIServer() as summarizer:
        summarizer.answer_with(role_reply)
        summarizer.fail_always(503)
        roles = ["--agent", "openai:fake-agent", "--summarizer", "openai:fake-sum", "--max-retries", "0"]
        argv = [*COMMON, "--policy", policy, *roles, "--summarizer-base-url", summarizer.base_url]
        argv += recording(server.base_url, tmp_path)
        assert eval_main(argv) == 1  # nothing scored
        [row] = read_rows(tmp_path / "run" / "results.jsonl")
        assert row["termination"] == "infra_error" and row["infra_error"].startswith("summarizer: fake-sum at ")
        assert "HTTP 503" in row["infra_error"]
        summarizer.stop_failing()
        assert eval_main([*argv, "--resume"]) == 0
        [row] = read_rows(tmp_path / "run" / "results.jsonl")
        assert row["infra_error"] is None and row["attempt"] == 2 and row["metrics"]["summarizer_calls"] > 0
        assert row["metrics"]["summarizer_calls"] == sum(b["model"] == "fake-sum" for b in summarizer.requests) - 1
        assert not server.rejections and not summarizer.rejections
    names = sorted(p.name for p in (tmp_path / "rec" / "cassettes" / folder_name(parse_policy(policy).spec)).iterdir())
    assert names == ["hotel-006-run0.attempt1.jsonl", "hotel-006-run0.jsonl", "hotel-006-run0.summarizer.jsonl"]
    assert (
        eval_main(
            [
                *COMMON,
                "--policy",
                policy,
                "--agent",
                f"replay:{tmp_path / 'rec'}",
                *"--summarizer openai:fake-sum --out".split(),
                str(tmp_path / "replay"),
            ]
        )
        == 0
    )
    assert [r | {"attempt": 0, "attempts": []} for r in without_timing(tmp_path / "replay")] == [
        r | {"attempt": 0, "attempts": []} for r in without_timing(tmp_path / "run")
    ]


def refused_row(argv: list[str], tmp_path: Path) -> dict:
    """The one row of an eval (``COMMON`` and ``argv``, into ``tmp_path``) whose model request was refused: a scored
    model_error, not an infrastructure error."""
    assert eval_main([*COMMON, *argv, "--out", str(tmp_path)]) == 0
    [row] = read_rows(tmp_path / "results.jsonl")
    assert row["termination"] == "model_error" and row["failure_category"] == "model_request_refused"
    return row


def test_a_refused_summarizer_request_is_a_scored_failure_named_as_the_summarizers(tmp_path):
    with roles_server() as server, FakeOpenAIServer() as summarizer:
        summarizer.fail_always(400, message="Your request was flagged by the content filter.")
        roles = "--configs C4 --agent openai:fake-agent --summarizer openai:fake-sum"
        urls = ["--base-url", server.base_url, "--summarizer-base-url", summarizer.base_url]
        row = refused_row([*roles.split(), *urls], tmp_path)
    assert row["model_error"].startswith("summarizer: fake-sum at ") and "content filter" in row["model_error"]
    assert row["infra_error"] is None and row["grade"]["success"] is False
    with gzip.open(tmp_path / row["trajectory"], "rt") as handle:
        assert json.load(handle)["model_error"] == row["model_error"]


def test_a_refused_user_model_request_is_a_scored_failure_named_as_the_users(tmp_path):
    def refuse_the_user(body):
        if not body.get("tools") and END_TOKEN in body["messages"][0]["content"]:
            raise ValueError("the user model's request was refused")
        return role_reply(body)

    with FakeOpenAIServer() as server:
        server.answer_with(refuse_the_user)
        roles = "--configs C2 --agent openai:fake-agent --user openai:fake-user"
        row = refused_row([*roles.split(), "--base-url", server.base_url], tmp_path)
    assert (
        row["model_error"].startswith("user: fake-user at ")
        and "the user model's request was refused" in row["model_error"]
    )
