"""A tiny Qwen2-shaped chat model built at test time, offline: random weights, a byte-level BPE tokenizer
trained on the project's own texts (system prompts, tool schemas, task instructions, oracle observations),
and a real tool-calling chat template shipped with TRL (Qwen3's, unless another is asked for)."""

from __future__ import annotations

import json

SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
]


def project_texts() -> list[str]:
    """What the tokenizer learns from: every category's system prompt, the tools, and some episodes' texts."""
    import erp_sim
    from erp_sim.envs.episode import Episode, tool_schemas
    from erp_sim.envs.expense_env import expense_env_of

    texts = [json.dumps(tool_schemas(), indent=2)]
    episode = Episode("erp_sim/AllExpenseTypes-v0", verbosity="compact")
    for index in range(0, len(episode.tasks), 3):
        texts += [m["content"] for m in episode.start(task_index=index)]
        task = expense_env_of(episode.env).task
        assert task is not None  # start() reset the env on it
        calls = erp_sim.oracle_calls(task)
        name, arguments = next(calls)
        for _ in range(6):  # the first screens of an episode
            observation = episode.call_tool(name, arguments).observation
            texts.append(json.dumps({"name": name, "arguments": arguments}) + observation)
            name, arguments = calls.send(observation)
    episode.close()
    return texts


def tiny_tokenizer(chat_template: str | None = None, vocab_size: int = 1024):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen3_chat_template

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(project_texts(), trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=chat_template or qwen3_chat_template,
    )


def tiny_model(tokenizer, max_positions: int = 32_768):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=max_positions,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    return Qwen2ForCausalLM(config)
