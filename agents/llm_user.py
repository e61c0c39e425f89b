"""An LLM user: the study's user model (GPT-4.1 guided by a ``user_context``) through any ChatModel.

Implements the env's user-model protocol (``reset(task)``, ``reply(message, view)``), so it
replaces the rule-based user with ``gym.make(..., user_model=LLMUser(model))``. The prompt is the
task's workflow's (``HarnessFace.user_context``: for itemization
``erp_sim/workflows/itemization/user_context.md``), or ``prompt_path``; the real ERP state is given
to the user (it can look at the ERP), the conversation so far is replayed as chat turns, roles swapped.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from erp_sim import workflows
from erp_sim.agents.models.roles import failures_named, no_text
from erp_sim.agents.models.stable_prefix import with_stable_prefixes
from erp_sim.agents.tokens.prompt_cache import record_call
from erp_sim.agents.types import ChatModel, Message, ModelRequestError, Usage
from erp_sim.envs.user_models import UserReply, UserView

if TYPE_CHECKING:
    from erp_sim.workflow_task import WorkflowTask

END_TOKEN = "###END###"


@cache
def _template(path: Path) -> str:
    return path.read_text(encoding="utf-8")


class LLMUser:
    """``prompt_path``: the prompt template ({end_token} and the fields of the workflow's
    ``user_context_fields``); None: the task's workflow's."""

    def __init__(self, model: ChatModel, prompt_path: Path | None = None):
        self.model = model
        self.prompt_path = prompt_path
        if prompt_path is not None:
            _template(prompt_path)  # a missing file fails here, not at the first reply
        self.history: list[Message] = []
        self.usage = Usage()  # this episode's user-model tokens, reported apart from the agent's
        self.calls = 0
        self.task: WorkflowTask | None = None

    def reset(self, task: WorkflowTask) -> None:
        self.task, self.history, self.usage, self.calls = task, [], Usage(), 0

    def reply(self, message: str, view: UserView) -> UserReply:
        task = self.task
        if task is None:
            raise RuntimeError("LLMUser.reply before reset(task): the env resets its user model with the task.")
        grade = view.grade
        face = workflows.harness(type(task).workflow)
        template = _template(self.prompt_path or face.user_context)
        system = template.format(**face.user_context_fields(task, grade), end_token=END_TOKEN)
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
