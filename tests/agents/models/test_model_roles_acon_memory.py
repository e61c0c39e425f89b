"""Model roles beyond eval: acon optimize's agent, compressor and optimizer, the sequential run's LLM consolidator, and recordings made before manifests."""

from __future__ import annotations

import json
import re

import pytest
from fake_acon_roles import acon_role_reply
from fake_openai_server import FakeOpenAIServer
from harness_support import recording
from test_model_roles import COMMON, roles_server, without_timing
from usage_support import usage_error

from erp_sim.agents.evaluation.eval_cli import main as eval_main

# --- acon optimize: compressor and optimizer roles ---------------------------------------------------
ACON = [
    *"--agent openai:fake-agent --compressor openai:fake-compressor --optimizer openai:fake-optimizer --tasks hotel_50:hotel-006 --test-tasks none --steps none".split()
]


def test_acon_optimize_sends_each_roles_params_and_its_replay_checks_them(tmp_path, capsys):
    from erp_sim.agents.acon.optimize import main as optimize_main

    with FakeOpenAIServer() as server:
        server.answer_with(acon_role_reply)
        assert (
            optimize_main(
                [
                    *ACON,
                    "--base-url",
                    server.base_url,
                    "--out",
                    str(tmp_path / "run"),
                    "--record",
                    str(tmp_path / "run"),
                    *"--model-param compressor:max_tokens=300 --model-param agent:tool_choice=auto --model-param seed=3 --timeout 30 --max-retries 1".split(),
                ]
            )
            == 0
        )
        assert not server.rejections
    agent = [body for body in server.requests if body.get("tools")]
    compressor = [body for body in server.requests if not body.get("tools")]
    assert agent and compressor
    assert all(body["tool_choice"] == "auto" and body["seed"] == 3 and "max_tokens" not in body for body in agent)
    assert all(body["max_tokens"] == 300 and body["seed"] == 3 and "tool_choice" not in body for body in compressor)
    manifest = json.loads((tmp_path / "run" / "cassettes" / "models.json").read_text())
    assert manifest["compressor"] == {
        "model": "fake-compressor",
        "params": {"temperature": 0.0, "max_tokens": 300, "seed": 3},
        "timeout": 30.0,
        "max_retries": 1,
        "base_url": server.base_url,
    }
    assert manifest["optimizer"]["params"] == {"seed": 3}  # the optimizer samples at the server's temperature
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["settings"]["model_params"]["compressor"] == {"max_tokens": 300, "seed": 3}

    replay = [*ACON, "--out", str(tmp_path / "replay"), "--replay", str(tmp_path / "run")]
    rec = tmp_path / "run"
    for extra, message in [
        (
            ["--compressor", "openai:other"],
            f"--compressor openai:other contradicts the recording in {rec}, whose compressor is openai:fake-compressor",
        ),
        (
            ["--model-param", "optimizer:temperature=0.5"],
            f"--model-param optimizer:temperature=0.5 contradicts the "
            f"recording in {rec} (optimizer temperature: not sent)",
        ),
        (["--timeout", "31"], f"--timeout 31.0 contradicts the recording in {rec} (agent: 30.0)"),
        (
            ["--optimizer-base-url", "http://10.7.7.7/v1"],
            f"--optimizer-base-url http://10.7.7.7/v1 contradicts the recording in {rec} "
            f"(optimizer's server: {server.base_url})",
        ),
    ]:
        assert usage_error(capsys, optimize_main, [*replay, *extra]) == message
        assert not (tmp_path / "replay").exists()
    # the replay's settings must also be the recording's (--model-param is in config.json)
    assert (
        optimize_main(
            [
                *replay,
                "--model-param",
                "compressor:max_tokens=300",
                "--model-param",
                "agent:tool_choice=auto",
                "--model-param",
                "seed=3",
            ]
        )
        == 0
    )
    assert (tmp_path / "replay" / "report.json").read_text() == (tmp_path / "run" / "report.json").read_text()


# --- the GenericAgent memory consolidator -----------------------------------------------------------
def test_a_sequential_run_records_its_llm_consolidator_and_replays_offline(tmp_path, capsys):
    import shutil

    memory = tmp_path / "memory"
    argv = [
        *"--policy ga_memory --memory".split(),
        str(memory),
        *"--sequential --quiet --concurrency 1 --tasks hotel_50:hotel-000,hotel-001 --consolidator openai:fake-cons".split(),
    ]
    with roles_server() as server:
        agent = ["--agent", "openai:fake-agent", "--model-param", "consolidator:max_tokens=800"]
        assert eval_main([*argv, *agent, *recording(server.base_url, tmp_path)]) == 0
        asked = [body for body in server.requests if "graded SUCCESSFUL" in body["messages"][0]["content"]]
        assert not server.rejections
    assert len(asked) == 2 and all(body["model"] == "fake-cons" and body["max_tokens"] == 800 for body in asked)
    recorded = without_timing(tmp_path / "run")
    assert [row["memory"]["promoted"] for row in recorded if row["config"] == "with_memory"] == [
        ["sop/itemize_hotel_expense"]
    ] * 2
    cassette = tmp_path / "rec" / "cassettes" / "with_memory" / "hotel-000-run0.consolidator.jsonl"
    assert len(cassette.read_text().splitlines()) == 1
    manifest = json.loads((tmp_path / "rec" / "cassettes" / "models.json").read_text())
    assert manifest["consolidator"]["params"] == {"temperature": 0.0, "max_tokens": 800}
    shutil.rmtree(memory)  # the replay starts from the same empty memory, with the server gone
    replay = [*argv[:-2], "--agent", f"replay:{tmp_path / 'rec'}", "--out", str(tmp_path / "replay")]
    assert re.search(
        "the recording in .* has a consolidator model, openai:fake-cons", usage_error(capsys, eval_main, replay)
    )
    assert eval_main([*argv, "--agent", f"replay:{tmp_path / 'rec'}", "--out", str(tmp_path / "replay")]) == 0
    assert json.dumps(without_timing(tmp_path / "replay")) == json.dumps(recorded)
    # a consolidator cassette cut short stops the run naming it, not taken for a failed consolidation
    shutil.rmtree(memory)
    cassette.write_bytes(cassette.read_bytes()[:-50])
    with pytest.raises(SystemExit, match=f"consolidator: cassette unreadable: {cassette}: line 1: not JSON"):
        eval_main([*argv, "--agent", f"replay:{tmp_path / 'rec'}", "--out", str(tmp_path / "cut")])


def test_a_recording_made_before_manifests_still_replays_its_agent(tmp_path):
    with roles_server() as server:
        argv = [*COMMON, "--configs", "C3", "--agent", "openai:fake-agent"]
        assert eval_main([*argv, *recording(server.base_url, tmp_path)]) == 0
    (tmp_path / "rec" / "cassettes" / "models.json").unlink()
    assert (
        eval_main(
            [*COMMON, "--configs", "C3", "--agent", f"replay:{tmp_path / 'rec'}", "--out", str(tmp_path / "replay")]
        )
        == 0
    )
    [recorded], [replayed] = without_timing(tmp_path / "run"), without_timing(tmp_path / "replay")
    assert replayed["grade"] == recorded["grade"] and replayed["metrics"] == recorded["metrics"]
    # without the manifest only the params are known (from the cassette), and the row says it was a replay
    assert replayed["sampling"]["agent"] == {"params": {"temperature": 0.0}}
    assert replayed["agent"] == f"replay:{tmp_path / 'rec'}"
