"""Guideline files plug into acon_history / acon_observation as the compressor's instruction."""

import pytest
from policy_support import RecordingAgent, run, step, transcript

from erp_sim.agents.policies import PolicySpecError, parse_policy, wrap
from erp_sim.agents.summarizers import LLMSummarizer, load_prompt
from erp_sim.agents.tokens import count_message
from erp_sim.agents.types import ChatResponse

BIG = "word " * 100  # one tool result of about 100 tokens


class PromptRecorder:
    """A chat model that answers a fixed summary and keeps each request's system prompt."""

    def __init__(self):
        self.systems: list[str] = []

    def complete(self, messages, tools=None):
        self.systems.append(messages[0]["content"])
        return ChatResponse(message={"role": "assistant", "content": "## Task\nkept"})

    async def acomplete(self, messages, tools=None):
        return self.complete(messages, tools)


@pytest.fixture
def guideline(tmp_path):
    path = tmp_path / "guideline.md"
    path.write_text("Keep every receipt amount verbatim.\n", encoding="utf-8")
    return path


def test_acon_history_sends_the_guideline_file_as_the_compressor_prompt(guideline):
    unit_tokens = sum(count_message(m) for m in step("c1", BIG))
    model = PromptRecorder()
    spec = f"acon_history:t={int(2.5 * unit_tokens)},k=1,guideline={guideline}"
    run(
        wrap(RecordingAgent(), spec, summarizer=LLMSummarizer(model)),
        transcript(*(step(f"c{i}", BIG) for i in range(1, 6))),
    )
    assert model.systems and set(model.systems) == {"Keep every receipt amount verbatim.\n"}


def test_acon_observation_sends_the_guideline_and_defaults_to_the_prompt_file(guideline):
    messages = transcript(step("c1", BIG))
    guided, default = PromptRecorder(), PromptRecorder()
    run(
        wrap(RecordingAgent(), f"acon_observation:t=50,guideline={guideline}", summarizer=LLMSummarizer(guided)),
        messages,
    )
    run(wrap(RecordingAgent(), "acon_observation:t=50", summarizer=LLMSummarizer(default)), messages)
    assert guided.systems == ["Keep every receipt amount verbatim.\n"]
    assert default.systems == [load_prompt("refine_observation.md")]


def test_guideline_spec_is_canonical_and_checked(guideline, tmp_path):
    assert parse_policy("acon_history").spec == "acon_history:t=4096,k=1,mode=accumulate"  # unset: not listed
    spec = parse_policy(f"acon_observation:guideline={guideline}").spec
    assert spec == f'acon_observation:t=1024,recent=3,guideline="{guideline}"'
    assert parse_policy(spec).spec == spec
    with pytest.raises(PolicySpecError, match="not found"):
        parse_policy(f"acon_history:guideline={tmp_path / 'missing.md'}")
    (tmp_path / "empty.md").write_text("  \n")
    with pytest.raises(PolicySpecError, match="is empty"):
        parse_policy(f"acon_observation:guideline={tmp_path / 'empty.md'}")
