"""A strict fake Azure OpenAI resource on loopback: deployments over the fake Chat Completions and Responses
servers, under Azure's paths.

``POST /openai/deployments/DEPLOYMENT/chat/completions?api-version=V`` answers as ``fake_openai_server``
does, and ``POST /openai/responses?api-version=V`` (the deployment in ``model``) as
``fake_responses_server`` does, both behind Azure's own checks: the ``api-key`` header (a missing one is
a 401), ``api-version`` in the query (a missing one is Azure's 404 "Resource not found"), and a deployment
the resource has (else 404 ``DeploymentNotFound``). ``endpoint`` is what ``--azure-endpoint`` takes;
``chat`` and ``responses`` are the fakes behind it, to script and to read what they received.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from fake_api_server import JsonApiServer, Reply, ServedFake
from fake_openai_server import CHAT_COMPLETIONS_PATH, FakeOpenAIServer
from fake_responses_server import RESPONSES_PATH, FakeResponsesServer

API_VERSION = "2025-03-01-preview"
CHAT_PATH = re.compile(r"^/openai/deployments/([^/]+)/chat/completions$")
DEPLOYMENT_NOT_FOUND = (
    "The API deployment for this resource does not exist. If you created the deployment within the last "
    "5 minutes, please wait a moment and try again."
)


class FakeAzureServer(ServedFake):
    """An Azure OpenAI resource with the given deployments; a context manager."""

    def __init__(self, deployments: tuple[str, ...] = ("gpt-5-deployment",), *, reasoning: bool = True):
        self.deployments = set(deployments)
        self.chat = FakeOpenAIServer()  # its own HTTP server is never started: this one serves its answers
        self.responses = FakeResponsesServer(reasoning=reasoning)
        self.paths: list[str] = []
        self._server = JsonApiServer(self._answer, "fake-azure-server")

    @property
    def endpoint(self) -> str:
        return self._server.root

    def __exit__(self, *exc_info: object) -> None:
        super().__exit__(*exc_info)
        self.chat._http.server_close()  # never started, so never shut down: only the sockets to close
        self.responses._server._http.server_close()

    def _answer(self, path: str, query: dict[str, list[str]], headers: dict[str, str], body: Any) -> Reply:
        self.paths.append(path)
        if not headers.get("api-key"):
            return _azure_error(401, "401", "Access denied due to missing subscription key.")
        if not query.get("api-version"):
            return _azure_error(404, "404", "Resource not found")
        chat = CHAT_PATH.match(path)
        if chat:
            if chat.group(1) not in self.deployments:
                return _azure_error(404, "DeploymentNotFound", DEPLOYMENT_NOT_FOUND)
            return self.chat._answer(CHAT_COMPLETIONS_PATH, body)
        if path == "/openai/responses":
            if not isinstance(body, dict) or body.get("model") not in self.deployments:
                return _azure_error(404, "DeploymentNotFound", DEPLOYMENT_NOT_FOUND)
            return self.responses.answer(RESPONSES_PATH, body)
        return _azure_error(404, "404", "Resource not found")


def _azure_error(status: int, code: str, message: str) -> Reply:
    return Reply(status, {"error": {"code": code, "message": message}})


@pytest.fixture
def fake_azure_server():
    with FakeAzureServer() as server:
        yield server
