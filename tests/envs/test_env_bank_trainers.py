"""The training adapters that need an extra, on bank reconciliation's id: verifiers' own rollouts against the
fake OpenAI server answering with the oracle's calls, and OpenEnv's server and client over WebSocket."""

from __future__ import annotations

import asyncio

import pytest

import erp_sim

pytestmark = pytest.mark.extras  # CI runs it after installing the extras

BANK_ID = "erp_sim/BankReconciliation-v0"


def test_verifiers_oracle_rollouts_on_the_bank_id_earn_one_and_log_reconciled_fraction():
    vf = pytest.importorskip("verifiers", reason="the verifiers extra is not installed (see docs/training.md)")
    from fake_openai_server import FakeOpenAIServer
    from openai import AsyncOpenAI
    from oracle_model import bank_oracle_reply

    from erp_sim.envs.verifiers_env import load_environment

    with FakeOpenAIServer(strict=False) as server:  # not strict: verifiers sends reasoning_content (see its test)
        server.answer_with(bank_oracle_reply)
        env = load_environment(env_id=BANK_ID, verbosity="compact")
        client = vf.OpenAIChatCompletionsClient(AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0))
        outputs = env.evaluate_sync(client=client, model="fake-model", num_examples=2, max_concurrent=2)["outputs"]
    assert [o["reward"] for o in outputs] == [1.0, 1.0]
    for output in outputs:
        assert output["metrics"]["strict_success"] == 1.0 and output["metrics"]["reconciled_fraction"] == 1.0


def test_openenv_serves_the_bank_id_and_the_oracle_earns_one(tmp_path):
    pytest.importorskip("openenv.core", reason="the openenv extra is not installed")
    from openenv_support import serve_openenv

    from erp_sim.envs.openenv import ErpAction, ErpEnvClient

    task = erp_sim.get_task("bank_recon_50", "bank-003")

    async def run():
        async with ErpEnvClient(base_url=served.url) as client:
            result = await client.reset(task_id=task.task_id)
            calls = erp_sim.oracle_calls(task)
            name, arguments = next(calls)
            while not result.done:
                result = await client.step(ErpAction(tool=name, arguments=arguments))
                try:
                    name, arguments = calls.send(result.observation.text)
                except StopIteration:
                    break
            return result

    with serve_openenv(tmp_path, "--env", BANK_ID, "--max-sessions", "2") as served:
        last = asyncio.run(run())
    assert last.done and last.reward == 1.0 and last.observation.final_grade["strict_success"] is True
    assert last.observation.progress["reconciled_fraction"] == 1.0
