"""The ``server`` fixture of the model tests that run against one fake model service."""

from __future__ import annotations

import pytest


@pytest.fixture
def server(request):
    """A started instance of the test module's ``FAKE_SERVER`` (a ``fake_api_server.ServedFake``), stopped after."""
    with request.module.FAKE_SERVER() as fake:
        yield fake
