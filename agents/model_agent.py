"""An agent whose decisions come from a chat model (OpenAI-compatible, replayed, or any ChatModel)."""

from __future__ import annotations

from erp_sim.agents.types import AgentStep, ChatModel, Message, ToolSchema


class ModelAgent:
    """Sends the messages it is given (after any policies) and the tools to a chat model."""

    spec = "full"

    def __init__(self, model: ChatModel):
        self.model = model

    def reset(self) -> None:
        """Models keep no episode state."""

    def act(self, transcript: list[Message], tools: list[ToolSchema]) -> AgentStep:
        response = self.model.complete(transcript, tools)
        return AgentStep(message=response.message, shown=list(transcript), usage=response.usage)
