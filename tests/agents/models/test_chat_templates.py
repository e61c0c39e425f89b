"""Every policy's requests render under the real chat templates of Llama 3.1, Qwen3, Mistral and Gemma.

A scripted episode runs under each context policy; every request the agent's model would get, as the
Chat Completions backend puts it on the wire (``wire_messages``: the merge rule of
``erp_sim.agents.models.turns``), is rendered through each template of ``chat_templates/`` with jinja2 as
transformers renders it, with the episode's tools. A template that refuses a request raises, and the
test names the policy, the step and the template's words. Without the rule, the same requests are
refused (C4's summary, the working-memory anchor, ga_memory's second system message): the rule is what
makes them render.

Two things the templates ask of the model, not of the harness, are given as a template server would
give them: Mistral's models write 9-character tool call ids (the scripted agent's are longer), so ids
are mapped to 9 characters; Gemma 3's template has no tool role, so tool calls go as the assistant's
text and tool results as the user's (as llama.cpp presents tool turns to a template without tools).
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path

import gymnasium as gym
import jinja2
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

import erp_sim.envs  # noqa: F401  (registers the ids)
from erp_sim.agents.models.openai_chat import wire_messages
from erp_sim.agents.policies import POLICIES, PRESETS, wrap
from erp_sim.agents.runner import run_episode
from erp_sim.agents.scripted import ScriptedAgent

TEMPLATES = Path(__file__).with_name("chat_templates")
TASK = "hotel-006"  # the scripted agent asks the user here: user replies join the transcript
TOKENS = {
    "llama-3.1-8b-instruct": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "qwen3-0.6b": {"bos_token": "", "eos_token": "<|im_end|>"},
    "mistral-nemo-instruct-2407": {"bos_token": "<s>", "eos_token": "</s>"},
    "gemma-3-1b-it": {"bos_token": "<bos>", "eos_token": "<eos>"},
}
# every registered policy at its defaults, the presets, and settings that make each policy act within one
# short episode (evict, fold, clear, retrieve, anchor at the end)
POLICY_SPECS = sorted(
    {
        *POLICIES,
        *(preset.policy for preset in PRESETS.values()),
        "last_n_summary:n=1,w=1",
        "fifo:k=1",
        "budget_eviction:budget=4000,min_units=1",
        "retrieval:backend=bm25,keep=1,k=2",
        "working_memory_anchor:at=end",
        "acon_history:t=1500",
        "acon_observation:t=300",
        "clear_tool_uses:trigger=3000,keep=1",
        "head_tail:chars=200",
        "working_memory_anchor+head_tail+budget_eviction:budget=5000",
    }
    - {"retrieval"}  # its default backend may load embeddings; bm25 runs above
)


class TemplateRefused(Exception):
    pass


def _raise(message: str) -> None:
    raise TemplateRefused(message)


@cache
def template(name: str) -> jinja2.Template:
    """The template compiled as transformers compiles chat templates."""
    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
    )
    environment.filters["tojson"] = lambda value, ensure_ascii=False, indent=None, separators=None, sort_keys=False: (
        json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
    )
    environment.globals["raise_exception"] = _raise
    return environment.from_string((TEMPLATES / f"{name}.jinja").read_text(encoding="utf-8"))


def render(name: str, messages: list[dict], tools: list[dict]) -> str:
    if name == "mistral-nemo-instruct-2407":
        messages = [_nine_character_ids(message) for message in messages]
    if name == "gemma-3-1b-it":
        messages = [_tool_turn_as_text(message) for message in messages]
    return template(name).render(messages=messages, tools=tools, add_generation_prompt=True, **TOKENS[name])


def _short(call_id: str) -> str:
    return hashlib.sha1(call_id.encode()).hexdigest()[:9]


def _nine_character_ids(message: dict) -> dict:
    if message.get("tool_calls"):
        return {**message, "tool_calls": [{**call, "id": _short(call["id"])} for call in message["tool_calls"]]}
    if message.get("role") == "tool":
        return {**message, "tool_call_id": _short(message["tool_call_id"])}
    return message


def _tool_turn_as_text(message: dict) -> dict:
    if message.get("tool_calls"):
        calls = [
            {"name": c["function"]["name"], "arguments": c["function"]["arguments"]} for c in message["tool_calls"]
        ]
        text = "\n".join(filter(None, [message.get("content") or "", json.dumps({"tool_calls": calls})]))
        return {"role": "assistant", "content": text}
    if message.get("role") == "tool":
        return {"role": "user", "content": json.dumps({"tool_response": message["content"]})}
    return message


@cache
def episode_requests(spec: str) -> tuple[list[list[dict]], list[dict]]:
    """What the agent's model was shown at each step of the scripted episode under ``spec``, and the tools."""
    env = gym.make("erp_sim/ExpenseItemization-v0", task_set="hotel_50", max_episode_steps=60)
    try:
        trajectory = run_episode(env, wrap(ScriptedAgent(), spec), task_id=TASK, seed=0)
    finally:
        env.close()
    return [trajectory.context.shown(step) for step in range(len(trajectory.steps))], trajectory.tools


@pytest.mark.parametrize("name", sorted(TOKENS))
@pytest.mark.parametrize("spec", POLICY_SPECS)
def test_every_request_renders(spec, name):
    shown, tools = episode_requests(spec)
    assert len(shown) > 5
    for step, messages in enumerate(shown):
        try:
            text = render(name, wire_messages(messages), tools)
        except (TemplateRefused, jinja2.TemplateError, TypeError) as error:
            pytest.fail(f"{spec}, step {step}: {name} refused the request: {error}")
        instruction = next(m for m in messages if m["role"] == "user")["content"]
        assert instruction[:60] in text  # the instruction, whatever follows it


@pytest.mark.parametrize(
    ("spec", "name", "words"),
    [
        ("last_n_summary:n=1,w=1", "gemma-3-1b-it", "Conversation roles must alternate"),
        ("last_n_summary:n=1,w=1", "mistral-nemo-instruct-2407", "conversation roles must alternate"),
        ("working_memory_anchor:at=end", "mistral-nemo-instruct-2407", "conversation roles must alternate"),
        ("ga_memory", "mistral-nemo-instruct-2407", "conversation roles must alternate"),  # its second system
        ("ga_memory", "gemma-3-1b-it", "Conversation roles must alternate"),
    ],
)
def test_the_same_requests_are_refused_without_the_rule(spec, name, words):
    """The policies' own messages, sent one for one (tool names left out, as the wire needs), are refused."""
    shown, tools = episode_requests(spec)
    refusals = []
    for messages in shown:
        plain = [{k: v for k, v in m.items() if not (m.get("role") == "tool" and k == "name")} for m in messages]
        try:
            render(name, plain, tools)
        except TemplateRefused as error:
            refusals.append(str(error))
    assert any(words in refusal for refusal in refusals), refusals[:1]


def test_the_rule_keeps_every_word_in_order():
    """Merging moves message boundaries only: the texts, read in order, are the policy's."""
    shown, _ = episode_requests("last_n_summary:n=1,w=1")
    for messages in shown:
        wire = wire_messages(messages)
        assert [m["role"] for m in wire if m["role"] == "system"] == ["system"]
        said = "".join(str(m.get("content") or "") for m in messages if m.get("content"))
        told = "".join(str(m.get("content") or "") for m in wire if m.get("content")).replace("\n\n", "")
        assert told == said.replace("\n\n", "")
