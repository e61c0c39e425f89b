"""An LLM user: the study's user model (GPT-4.1 guided by a ``user_context``) through any ChatModel.

Implements the env's user-model protocol (``reset(task)``, ``reply(message, view)``), so it
replaces the rule-based user with ``gym.make(..., user_model=LLMUser(model))``. The prompt is
``agents/prompts/user_context.md``; the real ERP state is given to the user (it can look at
the ERP), the conversation so far is replayed as chat turns, roles swapped.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from erp_sim.agents.models.roles import failures_named, no_text
from erp_sim.agents.models.stable_prefix import with_stable_prefixes
from erp_sim.agents.tokens.prompt_cache import record_call
from erp_sim.agents.types import ChatModel, Message, ModelRequestError, Usage
from erp_sim.envs.user_models import UserReply, UserView, what_is_left

if TYPE_CHECKING:
    from erp_sim import Task

PROMPT = Path(__file__).with_name("prompts") / "user_context.md"
END_TOKEN = "###END###"


class LLMUser:
    def __init__(self, model: ChatModel, prompt_path: Path = PROMPT):
        self.model = model
        self.template = prompt_path.read_text(encoding="utf-8")
        self.history: list[Message] = []
        self.usage = Usage()  # this episode's user-model tokens, reported apart from the agent's
        self.calls = 0
        self.task: Task | None = None

    def reset(self, task: Task) -> None:
        self.task, self.history, self.usage, self.calls = task, [], Usage(), 0

    def reply(self, message: str, view: UserView) -> UserReply:
        task = self.task
        if task is None:
            raise RuntimeError("LLMUser.reply before reset(task): the env resets its user model with the task.")
        grade = view.grade
        state = (
            "complete: all three conditions hold"
            if grade.success
            else "not complete: " + "; ".join(what_is_left(grade))
        )
        system = self.template.format(
            worker_name=task.worker_name, instruction=task.instruction(), end_token=END_TOKEN, state=state
        )
        self.history.append({"role": "user", "content": message})  # the assistant's words, as the user model's input
        # a conversation that grows by appending: all of it is sent again (where a backend caches by breakpoints)
        request = with_stable_prefixes([{"role": "system", "content": system}, *self.history], [len(self.history) + 1])
        with failures_named("user"):  # an outage or a refused request, named as the user model's
            response = self.model.complete(request)
        record_call("user", request, None, response)  # o200k counts and the cacheable prefix, per episode
        self.calls += 1
        text = (response.message.get("content") or "").strip()
        if not text:  # the model's answer, not a harness bug: a scored failure named as the user model's
            raise ModelRequestError(f"user: {no_text(response.message)}")
        self.usage = self.usage + response.usage
        self.history.append({"role": "assistant", "content": text})
        ends = END_TOKEN in text
        return UserReply(text.replace(END_TOKEN, "").strip() or "Thanks.", ends_conversation=ends and grade.success)
