"""What one episode leaves behind: the transcript, what the model was shown, costs, the grade.

Deterministic fields (everything but ``timing``) are byte-identical across reruns of a
deterministic agent; wall-clock figures live in ``timing`` only, so results files can be
compared with ``diff`` after dropping one key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from erp_sim.agents.types import Message, ToolSchema


class StepRecord(BaseModel):
    """One model call."""

    index: int = Field(description="0-based model call number.")
    shown_messages: int = Field(description="Messages the model was shown.")
    input_tokens: int = Field(description="Tokens of what the model was shown (messages + tool schemas).")
    output_tokens: int = Field(description="Tokens of the assistant message it produced.")
    reported_input_tokens: int = Field(0, description="Input tokens the model service reported (0 offline).")
    reported_output_tokens: int = Field(0, description="Output tokens the model service reported (0 offline).")
    summarizer_calls: int = Field(0)
    summarizer_tokens: int = Field(0)
    tool_calls: int = Field(0, description="Tool calls in the assistant message.")


class EpisodeMetrics(BaseModel):
    """Per-episode costs and counts (wall time is in ``Trajectory.timing``).

    Token figures are input (prompt) and output tokens of the agent's own model calls;
    summarizer calls inside context policies and an LLM user's calls are counted apart.
    """

    steps: int = Field(0, description="Environment steps (tool calls + messages to the user).")
    model_calls: int = Field(0, description="Agent model calls.")
    tool_calls: int = 0
    invalid_actions: int = Field(0, description="Actions the env could not parse (not JSON, unknown tool, bad arguments).")
    tool_errors: int = Field(0, description="Well-formed tool calls the ERP answered with an error.")
    user_turns: int = 0
    input_tokens: int = Field(0, description="Input tokens summed over model calls.")
    output_tokens: int = 0
    peak_tokens: int = Field(0, description="The largest single model input.")
    dependency: float = Field(0.0, description="ACON: sum over calls of (n_in + 2 n_out) * n_out / 2.")
    summarizer_calls: int = 0
    summarizer_tokens: int = 0
    user_model_calls: int = Field(0, description="Calls of an LLM user's model (0 for the rule-based user).")
    user_input_tokens: int = Field(0, description="Input tokens of the LLM user's calls, as its service reported them.")
    user_output_tokens: int = Field(0, description="Output tokens of the LLM user's calls.")


class Trajectory(BaseModel):
    task_id: str
    task_set: str
    seed: int | None = None
    policy: str = Field("full", description="Context policy spec the agent ran with.")
    messages: list[Message] = Field(default_factory=list, description="The full transcript, OpenAI chat format.")
    tools: list[ToolSchema] = Field(default_factory=list)
    shown: list[list[Message]] = Field(default_factory=list, description="What the model was shown at each call (if kept).")
    steps: list[StepRecord] = Field(default_factory=list)
    metrics: EpisodeMetrics = Field(default_factory=EpisodeMetrics)
    grade: dict[str, Any] = Field(default_factory=dict)
    termination: str = Field("", description="success, user_ended, stalled, step_limit, agent_stopped, infra_error, "
                                                "model_error or context_overflow.")
    failure_category: str | None = None
    infra_error: str | None = None
    model_error: str | None = Field(None, description="The refusal that ended the episode (model_error, context_overflow).")
    timing: dict[str, float] = Field(default_factory=dict, description="Wall-clock figures; not deterministic.")

    def deterministic_dump(self) -> dict:
        return self.model_dump(mode="json", exclude={"timing"})

    def finetuning_record(self) -> dict:
        """The ``{"messages", "tools"}`` shape used by chat fine-tuning APIs."""
        return {"messages": self.messages, "tools": self.tools}


def write_finetuning_jsonl(trajectories: list[Trajectory], path: str | Path) -> None:
    with Path(path).open("w", encoding="utf-8") as out:
        for trajectory in trajectories:
            out.write(json.dumps(trajectory.finetuning_record(), ensure_ascii=False) + "\n")
