"""An agent whose decisions come from a chat model (OpenAI-compatible, replayed, or any ChatModel)."""

from __future__ import annotations

from erp_sim.agents.tokens import get_counter
from erp_sim.agents.types import AgentStep, ChatModel, ContextOverflowError, Message, ToolSchema, refuse_over_window


def _request_tokens(transcript: list[Message], tools: list[ToolSchema]) -> int:
    """The request's size as the window is checked (``TokenCounter.count_request``)."""
    return get_counter().count_request(transcript, tools)


class ModelAgent:
    """Sends the messages it is given (after any policies) and the tools to a chat model.

    With ``context_window`` set, a request whose counted tokens (o200k_base, messages + tool
    schemas) exceed it is not sent: ``ContextOverflowError`` is raised instead, as the real
    service would answer, without paying for the call.
    """

    spec = "full"

    def __init__(self, model: ChatModel, context_window: int | None = None):
        self.model = model
        self.context_window = context_window

    def reset(self) -> None:
        """Models keep no episode state."""

    def act(self, transcript: list[Message], tools: list[ToolSchema]) -> AgentStep:
        if self.context_window is not None:
            refuse_over_window(_request_tokens(transcript, tools), self.context_window, "the request has", "; not sent")
        try:
            response = self.model.complete(transcript, tools)
        except ContextOverflowError as error:  # the server's own window: the refused request's size, counted
            if error.tokens is None:
                error.tokens = _request_tokens(transcript, tools)
            raise
        return AgentStep(
            message=response.message,
            shown=list(transcript),
            usage=response.usage,
            finish_reason=response.finish_reason,
            served_model=response.model or None,
        )
