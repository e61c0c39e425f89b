"""Issue 39, points 2 and 9: a wrong URL, key or model name costs seconds, not a run.

Every model role's URL is checked when the command line is read (a malformed one is a usage error naming it),
each live role gets one cheap request before the first episode (``OpenAIChatModel.probe``: a model lookup, else
a one-token completion; ``--no-probe`` skips it), and a server that answers a wrong model name with a 400
(``transformers serve``: "Server is pinned to ...") leaves an unscored, resumable row, as a 404 does.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest
from fake_acon_roles import acon_role_reply
from fake_openai_server import FakeOpenAIServer
from usage_support import usage_error

import erp_sim.envs  # noqa: F401  (registers the ids)
from erp_sim.agents.evaluation.episode_row import load_results
from erp_sim.agents.evaluation.eval_cli import main as eval_main
from erp_sim.agents.models.backend import PROBE_TOKENS
from erp_sim.agents.models.openai_chat import OpenAIChatModel

COMMON = ["--configs", "C2", "--tasks", "hotel_50:hotel-003", "--runs", "1", "--quiet", "--concurrency", "1"]


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens there once the socket is closed


@pytest.mark.parametrize("flag", ["--base-url", "--summarizer-base-url"])
@pytest.mark.parametrize("url", ["localhost:9999", "htp://localhost:9999/v1", "http:///v1", "http://host:99999/v1"])
def test_a_malformed_url_is_a_usage_error_naming_it(tmp_path, capsys, flag, url):
    with pytest.raises(SystemExit) as stop:
        eval_main([*COMMON, "--agent", "openai:m", flag, url, "--out", str(tmp_path / "out")])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"erp-sim eval: error: argument {flag}: {url!r}: expected an http:// or https:// URL with a host" in err
    assert not (tmp_path / "out").exists()


def test_a_server_that_is_not_there_stops_the_run_before_the_first_episode(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(SystemExit) as stop:
        eval_main([*COMMON, "--agent", "openai:m", "--base-url", url, "--out", str(tmp_path / "out")])
    message = str(stop.value)
    assert message.startswith(f"erp-sim: the agent's model does not answer before the first episode: m at {url}: ")
    assert "no answer (APIConnectionError" in message and message.endswith("(--no-probe skips this check)")
    assert not (tmp_path / "out" / "results.jsonl").exists()


def test_each_role_is_probed_once_and_no_probe_sends_nothing(tmp_path, fake_openai_server):
    argv = [*COMMON, "--agent", "openai:fake-agent", "--user", "openai:fake-user", "--base-url"]
    fake_openai_server.fail_always(400, message="not a real episode")  # the episodes end at once, scored
    assert eval_main([*argv, fake_openai_server.base_url, "--out", str(tmp_path / "a")]) == 0
    assert sorted(fake_openai_server.lookups) == ["fake-agent", "fake-user"]  # a lookup each, no completion spent
    fake_openai_server.lookups.clear()
    assert eval_main([*argv, fake_openai_server.base_url, "--no-probe", "--out", str(tmp_path / "b")]) == 0
    assert fake_openai_server.lookups == []


def test_a_probe_asks_for_one_short_completion_where_the_server_has_no_lookup():
    with FakeOpenAIServer(pinned_model="tiny", strict=True) as server:
        server.reply_text("OK")
        assert OpenAIChatModel("tiny", base_url=server.base_url).probe() is None
        (sent,) = server.requests
        assert sent["max_tokens"] == PROBE_TOKENS and "tools" not in sent and server.lookups == []
        problem = OpenAIChatModel("tinny", base_url=server.base_url).probe()
        assert problem == (
            f"tinny at {server.base_url}: a {PROBE_TOKENS}-token request was refused: HTTP 400: Server is pinned to "
            "'tiny'; requested 'tinny'. (check the API key, the model name and the base URL)"
        )


def agent_reply(body: dict[str, Any]) -> tuple[dict[str, Any], int, int]:
    """The scripted agent as a model, and a plain 'OK' to a probe."""
    if not body.get("tools"):
        return {"role": "assistant", "content": "OK"}, 5, 1
    return acon_role_reply(body)


def test_a_wrong_model_name_on_a_pinned_server_leaves_resumable_rows(tmp_path, capsys):
    """transformers serve answers a wrong name with HTTP 400: it was a scored model_error, and a --resume with
    the right name was then refused, so a typo cost the output folder."""
    out = str(tmp_path / "out")
    with FakeOpenAIServer(pinned_model="tiny") as server:
        server.answer_with(agent_reply)
        with pytest.raises(SystemExit, match="Server is pinned to 'tiny'; requested 'tinny'"):  # the probe says it
            eval_main([*COMMON, "--agent", "openai:tinny", "--base-url", server.base_url, "--out", out])
        assert eval_main([*COMMON, "--agent", "openai:tinny", "--base-url", server.base_url, "--no-probe",
                          "--out", out]) == 1  # fmt: skip
        (wrong,) = load_results(out).rows
        assert wrong.termination == "infra_error" and "Server is pinned to 'tiny'" in (wrong.infra_error or "")
        assert eval_main([*COMMON, "--agent", "openai:tiny", "--base-url", server.base_url, "--resume",
                          "--out", out]) == 0  # fmt: skip
    (right,) = load_results(out).rows
    assert right.termination == "success" and right.agent == "openai:tiny"


def test_record_takes_the_scripted_agent_beside_an_llm_summarizer_and_replays_it(tmp_path, capsys):
    """'--record needs an openai:MODEL agent' refused what the docs promise: one cassette per role."""
    run = [*COMMON[:1], "C4", *COMMON[2:], "--summarizer", "openai:fake-sum"]
    with FakeOpenAIServer() as server:
        server.answer_with(acon_role_reply)
        assert eval_main([*run, "--base-url", server.base_url, "--record", str(tmp_path / "rec"),
                          "--out", str(tmp_path / "live")]) == 0  # fmt: skip
    assert (tmp_path / "rec" / "cassettes" / "C4" / "hotel-003-run0.summarizer.jsonl").exists()
    assert not (tmp_path / "rec" / "cassettes" / "C4" / "hotel-003-run0.jsonl").exists()  # no agent cassette
    assert eval_main([*run, "--agent", f"replay:{tmp_path / 'rec'}", "--out", str(tmp_path / "replay")]) == 0
    live, replay = load_results(tmp_path / "live").rows[0], load_results(tmp_path / "replay").rows[0]
    assert live.agent == replay.agent == "scripted"
    assert live.model_dump(exclude={"timing"}) == replay.model_dump(exclude={"timing"})
    argv = [*COMMON, "--record", str(tmp_path / "rec2"), "--out", str(tmp_path / "none")]
    assert "no role of this run calls a model" in usage_error(capsys, eval_main, argv)


def test_folders_of_a_policy_spec_are_valid_file_names_everywhere(tmp_path):
    """A configuration named by its policy spec put a ':' in its trajectory and cassette folders (invalid on
    Windows); the folder takes '_' there, the row's name stays the spec."""
    from erp_sim.agents.evaluation.eval_options import folder_name

    assert folder_name("last_n:n=5") == "last_n_n=5" and folder_name("ga_memory:dir=/m") == "ga_memory_dir=_m"
    run = ["--policy", "last_n:n=5", *COMMON[2:], "--out", str(tmp_path / "out")]
    assert eval_main(run) == 0
    (row,) = load_results(tmp_path / "out").rows
    assert row.config == "last_n:n=5" and row.trajectory == "trajectories/last_n_n=5/hotel-003-run0.json.gz"
    assert (tmp_path / "out" / row.trajectory).exists()


@pytest.mark.parametrize("api", ["openai", "openai-responses", "anthropic", "azure"])
def test_every_api_gets_its_cheap_probe(api, monkeypatch):
    """Issue 39, point 2, on every backend of issue 37: the probe is the backend layer's (``ApiModel.probe``), so
    each API answers it where it puts its token limit, and a server that is not there is named in one line."""
    from fake_anthropic_server import FakeAnthropicServer
    from fake_azure_server import API_VERSION, FakeAzureServer
    from fake_responses_server import FakeResponsesServer

    from erp_sim.agents.models.factory import chat_model

    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "k")
    fakes = {"openai": FakeOpenAIServer, "openai-responses": FakeResponsesServer, "anthropic": FakeAnthropicServer}
    server = FakeAzureServer(("d",)) if api == "azure" else fakes[api]()
    (server.chat if api == "azure" else server).answer_with(acon_role_reply)
    with server:
        options = {"azure_endpoint": server.endpoint, "api_version": API_VERSION} if api == "azure" else {}
        url = None if api == "azure" else server.base_url
        assert chat_model("d" if api == "azure" else "m", url, api=api, max_retries=0, **options).probe() is None
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    options = {"azure_endpoint": dead, "api_version": API_VERSION} if api == "azure" else {}
    model = chat_model(
        "d" if api == "azure" else "m", None if api == "azure" else dead, api=api, max_retries=0, **options
    )
    assert "no answer (" in model.probe()
