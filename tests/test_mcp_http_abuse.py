"""The HTTP server against hostile clients: episode caps, keys bound to their creator, admin handles,
ended sessions graded, stalled sockets, unknown tools."""

from __future__ import annotations

import json

import pytest

from erp_sim import get_task
from mcp_support import admin, http_client, http_server

OPEN = ("form_open_menu_item", {"name": "TrvExpenses", "type": "Display"})


@pytest.fixture(scope="module")
def capped_url(tmp_path_factory):
    with http_server(tmp_path_factory.mktemp("capped"), "--max-episodes", "6", "--max-episodes-per-session", "2") as url:
        yield url


async def listed(url: str) -> list[dict]:
    return (await admin(url, "/admin/sessions")).json()["sessions"]


async def test_episode_keys_are_bound_to_the_session_that_opened_them(capped_url):
    http_a, a = http_client(capped_url, headers={"X-ERP-Session": "run-1"})
    http_b, b = http_client(capped_url, headers={"X-ERP-Session": "run-1"})  # the README's example key
    async with http_a, a, http_b, b:
        opened = json.loads((await a.call_tool(*OPEN)).content[0].text)
        seen_by_b = json.loads((await b.call_tool("form_find_menu_item", {"menuItemFilter": "expense"})).content[0].text)
        closed_by_b = await b.call_tool("form_close_form", {})
        still_open = await a.call_tool("form_close_form", {})
    assert seen_by_b["SessionId"] != opened["SessionId"]  # b got its own episode, not a's
    assert closed_by_b.is_error and not still_open.is_error  # b could not touch a's form


async def test_per_session_and_total_episode_caps(capped_url):
    http, client = http_client(capped_url)
    async with http, client:
        answers = [await client.call_tool("form_find_menu_item", {"menuItemFilter": "x"},
                                          meta={"erp-sim/session": f"flood-{i}"}) for i in range(4)]
    assert [r.is_error for r in answers] == [False, False, True, True]
    assert "limit per session" in answers[2].content[0].text
    clients, refused = [], None
    try:
        for _ in range(8):  # one episode each, until the server's total cap
            http, client = http_client(capped_url)
            await http.__aenter__()
            await client.__aenter__()
            clients.append((http, client))
            result = await client.call_tool("form_find_menu_item", {"menuItemFilter": "x"})
            if result.is_error:
                refused = result.content[0].text
                break
    finally:
        for http, client in reversed(clients):
            await client.__aexit__(None, None, None)
            await http.__aexit__(None, None, None)
    assert refused is not None and "its limit" in refused
    assert len([s for s in await listed(capped_url) if s["state"] == "active"]) <= 6


async def test_ending_an_mcp_session_grades_and_frees_its_episodes(capped_url):
    http, client = http_client(capped_url)
    async with http, client:
        first = json.loads((await client.call_tool(*OPEN)).content[0].text)
    # the SDK client sends DELETE /mcp on exit
    mine = [s for s in await listed(capped_url) if s["session_id"] == first["SessionId"]]
    assert len(mine) == 1 and mine[0]["state"] == "closed" and mine[0]["grade"] is not None
    handle = mine[0]["handle"]
    assert (await admin(capped_url, f"/admin/sessions/{handle}/grade")).json()["state"] == "closed"


async def test_admin_routes_name_episodes_by_server_handles_only(capped_url):
    task = get_task("hotel_50", 30)
    http, client = http_client(capped_url, headers={"X-ERP-Session": "victim", "X-ERP-Task": task.task_id})
    async with http, client:
        session_id = json.loads((await client.call_tool(*OPEN)).content[0].text)["SessionId"]
        episodes = [s for s in await listed(capped_url) if s["session_id"] == session_id]
        assert len(episodes) == 1 and episodes[0]["handle"].startswith("ep-") and len(episodes[0]["handle"]) == 19
        assert (await admin(capped_url, "/admin/sessions/victim/grade")).status_code == 404  # client keys are not names
        by_handle = await admin(capped_url, f"/admin/sessions/{episodes[0]['handle']}/grade")
        by_session_id = await admin(capped_url, f"/admin/sessions/{session_id}/grade")
    assert by_handle.json()["handle"] == by_session_id.json()["handle"] == episodes[0]["handle"]
    handles = [s["handle"] for s in await listed(capped_url)]
    assert len(handles) == len(set(handles))


async def test_unknown_tools_answer_the_erp_error_json_over_http(capped_url):
    http, client = http_client(capped_url)
    async with http, client:
        unknown = await client.call_tool("form_launch_rocket", {})
    envelope = json.loads(unknown.content[0].text)
    assert unknown.is_error and envelope["Error"]["Code"] == "NotFound" and "form_launch_rocket" in envelope["Result"]
