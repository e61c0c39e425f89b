"""Shared fixtures. Tests run offline; nothing here needs an API key or the network."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

pytest_plugins = ["fake_openai_server", "toy_support", "view_support"]

# Task templates are cached on disk (erp_sim.database.template_cache): the tests keep theirs out of the home
# folder, in one folder every worker shares (files are written whole and renamed).
os.environ.setdefault("ERP_SIM_TEMPLATE_CACHE", str(Path(tempfile.gettempdir()) / "erp-sim-test-templates"))


@pytest.fixture
def hotel_task():
    from erp_sim import get_task

    return get_task("hotel_50", "hotel-010")


@pytest.fixture
def session(hotel_task):
    from erp_sim import ErpSession

    s = ErpSession(hotel_task)
    yield s
    s.close()


@pytest.fixture(scope="module")
def task():
    """A small generated hotel task (independent of the checked-in fixtures)."""
    from erp_sim.workflows.itemization.taskgen import generate_task

    return generate_task("t", 0, "Hotel", seed=1000, item_count=6)


@pytest.fixture
def db(task):
    from erp_sim import database

    return database.open_database(task)


@pytest.fixture
def server(request):
    """A started instance of the test module's ``FAKE_SERVER`` (a ``fake_api_server.ServedFake``: the model tests
    that run against one fake model service), stopped after the test."""
    with request.module.FAKE_SERVER() as fake:
        yield fake
