"""``chat_model``: the model object of a role's ``API:MODEL``, one backend per API.

It sits above both what it joins: ``roles`` (the command line's names and defaults, which every backend
reads) and the backends themselves (``openai_chat``, ``openai_responses``, ``anthropic_messages``,
``azure``). Each backend is imported only when a role names its API, so naming a Claude model never loads
OpenAI's SDK and the reverse.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from erp_sim.agents.models.roles import DEFAULT_MAX_TOKENS, DEFAULT_MAX_TOKENS_OTHER, MODEL_CHOICES, default_temperature


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
    if api in ("azure", "azure-responses"):
        from erp_sim.agents.models.azure import AzureTarget

        options["azure"] = AzureTarget.resolve(azure_endpoint, api_version)
    if api in ("openai", "azure"):
        from erp_sim.agents.models.openai_chat import OpenAIChatModel

        return OpenAIChatModel(name, base_url=base_url, temperature=temperature, extra_params=params, **options)
    if api in ("openai-responses", "azure-responses"):
        from erp_sim.agents.models.openai_responses import OpenAIResponsesModel

        return OpenAIResponsesModel(name, base_url=base_url, temperature=temperature, extra_params=params, **options)
    if api == "anthropic":
        from erp_sim.agents.models.anthropic_messages import AnthropicMessagesModel

        max_tokens = DEFAULT_MAX_TOKENS.get(role or "", DEFAULT_MAX_TOKENS_OTHER)
        return AnthropicMessagesModel(
            name, base_url=base_url, temperature=temperature, max_tokens=max_tokens, extra_params=params, **options
        )
    raise ValueError(f"{api}:{name}: unknown model API; use {MODEL_CHOICES}")
