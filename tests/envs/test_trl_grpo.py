"""TRL for real, offline: training rows render under the chat templates that refused the old system-only
prompt, and one GRPOTrainer step runs the adapter's tools with a tiny model built here (tests/tiny_model.py)."""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("trl", reason="the trl extra is not installed (pip install torch==2.13.0 'erp-sim[trl]')")

from tiny_model import tiny_model, tiny_tokenizer

from erp_sim.envs.episode import tool_schemas
from erp_sim.envs.trl_adapter import METRIC_FUNCS, tool_env_factory, training_rows

pytestmark = pytest.mark.extras  # CI runs it after installing the extra


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer(vocab_size=4096)


@pytest.mark.parametrize(
    "template",
    ["qwen3_5_nothink_chat_template", "qwen3_6_chat_template", "llama3_1_chat_template", "qwen3_chat_template"],
)
def test_training_rows_render_with_tools_where_a_system_only_prompt_fails(tokenizer, template):
    import trl.chat_template_utils as templates

    tokenizer.chat_template = getattr(templates, template)
    prompt = training_rows()[0]["prompt"]
    text = tokenizer.apply_chat_template(prompt, tools=tool_schemas(), tokenize=False, add_generation_prompt=True)
    assert prompt[1]["content"] in text and "form_find_menu_item" in text
    if template != "qwen3_chat_template":  # what the adapter's rows used to be: TRL appended the task to it
        with pytest.raises(Exception, match="[Nn]o (first )?user"):
            tokenizer.apply_chat_template(
                [{"role": "system", "content": prompt[0]["content"] + prompt[1]["content"]}],
                tools=tool_schemas(),
                tokenize=False,
                add_generation_prompt=True,
            )


def forced_call_bias(tokenizer, name: str, arguments: dict) -> list:
    """``sequence_bias`` that makes a random model write exactly this tool call, then end its turn: every
    prefix of the call's tokens favours the next one, longer prefixes more (the longest match wins)."""
    call = f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call><|im_end|>"
    ids = tokenizer(call, add_special_tokens=False)["input_ids"]
    return [[ids[: i + 1], 50.0 * (i + 1)] for i in range(len(ids))]


def one_grpo_step(tokenizer, tmp_path, arguments: dict, budget: int, calls: int):
    """One GRPOTrainer step over two rollouts in which the model makes the forced call up to ``calls`` times."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen3_chat_template

    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    tokenizer.chat_template = qwen3_chat_template
    args = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=2,
        num_generations=2,
        max_steps=1,
        max_completion_length=budget,
        max_tool_calling_iterations=calls,
        use_cpu=True,
        bf16=False,
        report_to=[],
        logging_steps=1,
        save_strategy="no",
        reward_weights=[0.0] * len(METRIC_FUNCS),
        generation_kwargs={"sequence_bias": forced_call_bias(tokenizer, "form_find_menu_item", arguments)},
    )
    trainer = GRPOTrainer(
        model=tiny_model(tokenizer),
        processing_class=tokenizer,
        args=args,
        train_dataset=Dataset.from_list(training_rows(verbosity="compact")[:2]),
        reward_funcs=METRIC_FUNCS,
        environment_factory=tool_env_factory(verbosity="compact", raise_on_invalid=True),
    )
    trainer.train()
    return trainer


@pytest.mark.parametrize(
    "arguments, invalid", [({"menuItemFilter": "expense"}, False), ({"menuItemFilter": "expense\u0000"}, True)]
)
def test_one_grpo_step_plays_the_tools_and_scores_the_episodes(tokenizer, tmp_path, arguments, invalid):
    calls = 3
    trainer = one_grpo_step(tokenizer, tmp_path, arguments, budget=1024, calls=calls)
    logged = trainer.state.log_history[0]
    # each rollout: the forced call, answered, then again, until TRL's iteration cap
    assert logged["tools/call_frequency"] == calls
    assert logged["tools/failure_frequency"] == (1.0 if invalid else 0.0)  # raise_on_invalid: TRL sees it
    assert logged["rewards/invalid_actions/mean"] == (calls if invalid else 0.0)  # zero-weight metric, logged
    assert logged["rewards/ErpToolEnv/mean"] == 0.0  # get_reward: nothing itemized
    for environment in trainer.environments:
        counts = environment.info["counts"]
        assert counts["steps"] == calls and counts["tool_calls"] == (0 if invalid else calls)


def test_a_call_whose_result_overflows_the_budget_has_run(tokenizer, tmp_path):
    """The hazard the adapter documents: TRL rolls back the result that would overflow max_completion_length
    and ends the rollout, but the call has already changed the ERP (and get_reward reads the ERP)."""
    call = forced_call_bias(tokenizer, "form_find_menu_item", {"menuItemFilter": "expense"})[-1][0]
    trainer = one_grpo_step(tokenizer, tmp_path, {"menuItemFilter": "expense"}, budget=len(call) + 8, calls=3)
    logged = trainer.state.log_history[0]
    assert logged["tools/call_frequency"] == 1 and logged["completions/max_length"] == len(call)  # no result kept
    assert [e.info["counts"]["tool_calls"] for e in trainer.environments] == [1, 1]  # yet the call ran
