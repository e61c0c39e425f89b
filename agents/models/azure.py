"""Azure OpenAI: ``azure:DEPLOYMENT`` (Chat Completions) and ``azure-responses:DEPLOYMENT`` (Responses).

A deployment is reached at its resource's endpoint (``https://NAME.openai.azure.com``) with an API version:
``--azure-endpoint`` and ``--api-version``, else the standard variables ``AZURE_OPENAI_ENDPOINT`` and
``OPENAI_API_VERSION`` the openai package reads too; the key is ``AZURE_OPENAI_API_KEY`` (an endpoint on
localhost or a private address needs none). Requests are the OpenAI ones, the deployment's name in
``model``: the openai package's ``AzureOpenAI`` client puts Chat Completions under
``/openai/deployments/DEPLOYMENT/chat/completions`` and Responses under ``/openai/responses``, with
``?api-version=`` and the ``api-key`` header. A row's ``sampling`` names the deployment (``model``), the
endpoint (``base_url``, without credentials) and the API version.
"""

from __future__ import annotations

import os
from typing import Any

import openai
from pydantic import BaseModel, Field

from erp_sim.agents.models.backend import LoopClients, resolve_api_key

ENDPOINT_ENV = "AZURE_OPENAI_ENDPOINT"
API_VERSION_ENV = "OPENAI_API_VERSION"
API_KEY_ENV = "AZURE_OPENAI_API_KEY"


class AzureTarget(BaseModel):
    """Where an Azure OpenAI deployment answers."""

    endpoint: str = Field(description="The resource's endpoint, e.g. https://NAME.openai.azure.com.")
    api_version: str = Field(description="The API version sent as ?api-version=, e.g. 2025-03-01-preview.")

    @classmethod
    def resolve(cls, endpoint: str | None = None, api_version: str | None = None) -> AzureTarget:
        """From the flags, else the standard variables; a ValueError naming what is missing."""
        endpoint = endpoint or os.environ.get(ENDPOINT_ENV)
        api_version = api_version or os.environ.get(API_VERSION_ENV)
        missing = [
            what
            for what, value in (
                (f"--azure-endpoint or {ENDPOINT_ENV}", endpoint),
                (f"--api-version or {API_VERSION_ENV}", api_version),
            )
            if not value
        ]
        if missing:
            raise ValueError(f"an Azure OpenAI deployment needs {' and '.join(missing)}")
        assert endpoint is not None and api_version is not None
        return cls(endpoint=endpoint.rstrip("/"), api_version=api_version)

    def clients(self, timeout: float) -> LoopClients:
        """The openai package's Azure clients, their own retries off (ours are counted)."""
        options: dict[str, Any] = {
            "azure_endpoint": self.endpoint,
            "api_version": self.api_version,
            "api_key": resolve_api_key([API_KEY_ENV], self.endpoint),
            "timeout": timeout,
            "max_retries": 0,
        }
        return LoopClients(
            lambda asynchronous: (openai.AsyncAzureOpenAI if asynchronous else openai.AzureOpenAI)(**options)
        )
