"""Templates on disk: a task's first open in a process restores what its first build stored, byte for byte."""

from __future__ import annotations

import sqlite3

import pytest

from erp_sim import database, get_task
from erp_sim.database import template_cache
from erp_sim.erp_session import ErpSession
from erp_sim.workflows.itemization.taskgen import generate_task


@pytest.fixture
def cache_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(template_cache.ENV_VAR, str(tmp_path))
    database.clear_templates()
    yield tmp_path
    database.clear_templates()


def _template_bytes(task) -> bytes:
    conn = database.open_database(task)
    try:
        return conn.serialize()
    finally:
        conn.close()


@pytest.mark.parametrize(("task_set", "task_id"), [("hotel_50", "hotel-010"), ("long_horizon", "long-200-07")])
def test_a_restored_template_is_byte_identical_to_a_built_one(cache_folder, task_set, task_id):
    """Built (nothing on disk, the template stored), then restored in a fresh process state: the same database
    bytes, the same responses to the same calls."""
    task = get_task(task_set, task_id)
    built = _template_bytes(task)
    assert len(list(cache_folder.rglob("*.sqlite"))) == 1
    responses = [ErpSession(task).call("form_open_menu_item", {"name": "TrvExpenses", "type": "Display"}).text]
    database.clear_templates()  # as in a new process: the next open reads the file
    calls = []
    real_build = database._build_template
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(database, "_build_template", lambda *a: calls.append(a) or real_build(*a))
        restored = _template_bytes(task)
        responses.append(ErpSession(task).call("form_open_menu_item", {"name": "TrvExpenses", "type": "Display"}).text)
    assert calls == []  # restored, not built
    assert restored == built
    assert responses[0] == responses[1]


def test_a_damaged_or_foreign_file_is_refused_and_built_again(cache_folder):
    task = generate_task("t", 0, "Hotel", seed=4242, item_count=5)
    built = _template_bytes(task)
    (path,) = cache_folder.rglob("*.sqlite")
    for damage in (path.read_bytes()[:-100], path.read_bytes().replace(b"erp-sim", b"erp-SIM", 1), b""):
        path.write_bytes(damage)
        assert template_cache.load(task) is None
        database.clear_templates()
        assert _template_bytes(task) == built  # built again, and stored again whole
        assert template_cache.load(task) is not None
    other = generate_task("t", 0, "Hotel", seed=4243, item_count=5)
    foreign = template_cache._path(other, template_cache.task_key(other))
    foreign.write_bytes(path.read_bytes())  # the first task's template under the other's name
    assert template_cache.load(other) is None


def test_the_key_follows_the_task_and_the_generator(cache_folder):
    """Two tasks differing in one charge get two files; a changed generator (its digest) finds none of them."""
    first = generate_task("t", 0, "Hotel", seed=4244, item_count=5)
    second = first.model_copy(update={"seed": first.seed + 1})
    assert template_cache.task_key(first) != template_cache.task_key(second)
    _template_bytes(first)
    assert template_cache.load(first) is not None and template_cache.load(second) is None
    template_cache.generator_digest.cache_clear()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(template_cache.sqlite3, "sqlite_version", "0.0.0")  # another SQLite writes other bytes
        assert template_cache.load(first) is None
    template_cache.generator_digest.cache_clear()
    assert template_cache.load(first) is not None


def test_off_turns_the_cache_off(cache_folder, monkeypatch):
    monkeypatch.setenv(template_cache.ENV_VAR, "off")
    _template_bytes(generate_task("t", 0, "Hotel", seed=4245, item_count=5))
    assert not list(cache_folder.rglob("*.sqlite"))


def test_an_unwritable_folder_only_costs_the_build(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(template_cache.ENV_VAR, str(blocker / "templates"))
    database.clear_templates()
    task = generate_task("t", 0, "Hotel", seed=4246, item_count=5)
    assert isinstance(database.open_database(task), sqlite3.Connection)
    database.clear_templates()
