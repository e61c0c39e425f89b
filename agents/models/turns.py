"""One system message first, then strictly alternating turns: the merge rule every backend applies.

Context policies build requests out of whole messages: C4 puts its summary in a user message after
the instruction, the working-memory anchor and ga_memory's checkpoint do the same, ``fifo``,
``budget_eviction`` and ``retrieval`` can keep a user's reply whose question they dropped, and
``ga_memory`` adds its memory as a second system message. Chat templates (Mistral's, Gemma's,
Qwen3's) and the Messages API refuse such requests, so every backend renders a request by one
rule, applied where the request is rendered (the policies, the trajectory and the scripted agent
see the messages as the policies built them):

1. every system (or developer) message after the first is folded into the first, in order, its
   text after a blank line;
2. consecutive user messages are one user turn, their texts joined by a blank line;
3. consecutive assistant messages are one assistant turn: their texts joined by a blank line,
   their tool calls in order;
4. an assistant message with neither text nor tool calls says nothing and is left out (so the
   user messages around it are consecutive); so is a user message with no text;
5. on the Chat Completions wire only, a user message right after tool results follows an empty
   assistant message, which closes the assistant's tool turn (Mistral's templates count turns
   without the tool messages; tool results are part of the user's turn in the Messages API).

The model is told the same words in the same order; only where one message ends and the next
begins moves. ``turns`` groups the messages (with their positions, which cache breakpoints
need); ``merged`` writes a group as one message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from erp_sim.agents.tokens import message_text
from erp_sim.agents.types import Message

SYSTEM_ROLES = ("system", "developer")
SEPARATOR = "\n\n"


@dataclass
class Turn:
    """Messages one turn is made of, with their positions in the request."""

    role: str
    members: list[tuple[int, Message]] = field(default_factory=list)

    @property
    def messages(self) -> list[Message]:
        return [message for _, message in self.members]

    @property
    def last_index(self) -> int:
        return self.members[-1][0]


def says_nothing(message: Message) -> bool:
    """An assistant or user message without text or tool calls (rule 4)."""
    if message.get("role") not in ("assistant", "user"):
        return False
    return not message.get("tool_calls") and not message_text(message.get("content")).strip()


def turns(messages: list[Message], tool_results: Literal["own", "user"] = "own") -> list[Turn]:
    """The request's turns by the module's rule: the system turn first (if any), then user and assistant
    turns alternating. ``tool_results="own"``: each tool result is a turn of its own (Chat Completions,
    Responses); ``"user"``: tool results belong to the user's turn (the Messages API)."""
    system = Turn("system")
    body: list[Turn] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        if role in SYSTEM_ROLES:
            system.members.append((index, message))
            continue
        if says_nothing(message):
            continue
        grouped = "user" if role == "tool" and tool_results == "user" else role
        if body and grouped in ("user", "assistant") and body[-1].role == grouped and not _calls_pending(body[-1]):
            body[-1].members.append((index, message))
        else:
            body.append(Turn(str(grouped), [(index, message)]))
    return ([system] if system.members else []) + body


def _calls_pending(turn: Turn) -> bool:
    """An assistant turn whose last message called tools: its results come next, nothing joins it."""
    return turn.role == "assistant" and bool(turn.members[-1][1].get("tool_calls"))


def merged(turn: Turn) -> Message:
    """The turn as one message of its role: texts joined by a blank line, an assistant's calls in order.
    A one-message turn is that message itself (the same object)."""
    if len(turn.members) == 1:
        return turn.members[0][1]
    first = turn.messages[0]
    content = joined_content([message.get("content") for message in turn.messages])
    result: Message = {"role": "system" if first.get("role") in SYSTEM_ROLES else first.get("role"), "content": content}
    if turn.role == "assistant":
        calls = [call for message in turn.messages for call in message.get("tool_calls") or ()]
        if calls:
            result["tool_calls"] = calls
        items = [item for message in turn.messages for item in _provider_items(message)]
        if items:
            result["provider_items"] = {"api": _provider_api(turn.messages), "items": items}
    return result


def joined_content(contents: list[Any]) -> Any:
    """Contents joined by a blank line: one text when every part is text, else the parts in order (a text
    part carries the blank line at its end)."""
    kept = [content for content in contents if content not in (None, "", [])]
    if all(isinstance(content, str) for content in kept):
        return SEPARATOR.join(kept)
    parts: list[Any] = []
    for content in kept:
        if parts and isinstance(parts[-1], dict) and parts[-1].get("type") == "text":
            parts[-1] = {**parts[-1], "text": parts[-1].get("text", "") + SEPARATOR}
        parts += [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    return parts


def _provider_items(message: Message) -> list[Any]:
    items = message.get("provider_items")
    return list(items.get("items") or []) if isinstance(items, dict) else []


def _provider_api(messages: list[Message]) -> str | None:
    return next((m["provider_items"].get("api") for m in messages if isinstance(m.get("provider_items"), dict)), None)


def chat_messages(messages: list[Message]) -> list[Message]:
    """The messages as Chat Completions takes them under the rule (rules 1-5)."""
    result: list[Message] = []
    for turn in turns(messages):
        if turn.role == "user" and result and result[-1].get("role") == "tool":
            result.append({"role": "assistant", "content": ""})  # rule 5
        result.append(merged(turn))
    return result
