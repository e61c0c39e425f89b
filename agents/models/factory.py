"""``chat_model``: the model object of a role's ``API:MODEL``, one backend per API.

It sits above both what it joins: ``roles`` (the command line's names and defaults, which every backend
reads) and the backends themselves (``openai_chat``, ``openai_responses``, ``anthropic_messages``,
``azure``). Each backend is imported only when a role names its API, so naming a Claude model never loads
OpenAI's SDK and the reverse.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from erp_sim.agents.models.roles import DEFAULT_MAX_TOKENS, DEFAULT_MAX_TOKENS_OTHER, MODEL_CHOICES, default_temperature

if TYPE_CHECKING:
    from erp_sim.agents.models.anthropic_messages import AnthropicMessagesModel
    from erp_sim.agents.models.azure import AzureTarget
    from erp_sim.agents.models.openai_chat import OpenAIChatModel
    from erp_sim.agents.models.openai_responses import OpenAIResponsesModel


def openai_backends() -> tuple[type[AzureTarget], type[OpenAIChatModel], type[OpenAIResponsesModel]]:
    """The backends over OpenAI's SDK (Azure's target, Chat Completions, Responses), imported on first use: the
    SDK costs about 0.4 s, which a scripted or replayed eval worker never pays (tests/test_startup.py), nor a
    Claude role."""
    from erp_sim.agents.models.azure import AzureTarget
    from erp_sim.agents.models.openai_chat import OpenAIChatModel
    from erp_sim.agents.models.openai_responses import OpenAIResponsesModel

    return AzureTarget, OpenAIChatModel, OpenAIResponsesModel


def anthropic_backend() -> type[AnthropicMessagesModel]:
    """The Messages API's backend, imported on first use, as ``openai_backends`` (tests/test_startup.py); its
    SDK, the anthropic extra, only when a model is built."""
    from erp_sim.agents.models.anthropic_messages import AnthropicMessagesModel

    return AnthropicMessagesModel


def chat_model(
    name: str,
    base_url: str | None,
    *,
    api: str = "openai",
    role: str | None = None,
    temperature: float | Literal["default"] | None = "default",
    params: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
    azure_endpoint: str | None = None,
    api_version: str | None = None,
):
    """The model of ``api`` (``roles.MODEL_APIS``): ``params`` go in every request body (over ``temperature``;
    a None value: not sent), but for the switches each API reads itself. ``temperature="default"``:
    ``roles.default_temperature(name)``. A Messages API role gets its ``roles.DEFAULT_MAX_TOKENS`` unless a
    param sets it; an Azure one its endpoint and API version from the arguments or the standard variables."""
    if isinstance(temperature, str):  # "default", the one text it takes
        temperature = default_temperature(name)
    options: dict[str, Any] = {  # timeout and max_retries, where the caller set them
        key: value for key, value in {"timeout": timeout, "max_retries": max_retries}.items() if value is not None
    }
    params = dict(params or {})
    if api in ("openai", "azure", "openai-responses", "azure-responses"):
        azure_target, chat_completions, responses = openai_backends()
        if api.startswith("azure"):
            options["azure"] = azure_target.resolve(azure_endpoint, api_version)
        backend = chat_completions if api in ("openai", "azure") else responses
        return backend(name, base_url=base_url, temperature=temperature, extra_params=params, **options)
    if api == "anthropic":
        max_tokens = DEFAULT_MAX_TOKENS.get(role or "", DEFAULT_MAX_TOKENS_OTHER)
        return anthropic_backend()(
            name, base_url=base_url, temperature=temperature, max_tokens=max_tokens, extra_params=params, **options
        )
    raise ValueError(f"{api}:{name}: unknown model API; use {MODEL_CHOICES}")
