"""erp-sim view: the self-contained run page, its data, and the page in a real headless browser."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from view_support import page_payloads

from erp_sim.agents.evaluation import eval_cli
from erp_sim.agents.evaluation.report import view


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run")
    code = eval_cli.main(
        [
            *"--configs C2,C3,C4 --tasks hotel_50:hotel-000,hotel-001 --runs 1 --concurrency 1 --out".split(),
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    return out


@pytest.fixture(scope="module")
def page_file(run_dir) -> Path:
    return view.write_view(run_dir)


def _episodes(page: str) -> list:
    """The episode records as the page reads them (page.js, expandRuns): each call's leading run of messages
    shown where the transcript holds them is stored as its length ("kept"), and the positions it did not
    show as [start, end) ranges ("pruned_ranges"); both are listed here."""
    records = page_payloads(page, "episode")
    for record in records:
        for call in record["calls"]:
            kept = call.pop("kept", 0)
            call["shown"] = [[record["transcript"][i], "kept", i] for i in range(kept)] + call["shown"]
            call["pruned"] = [p for start, end in call.pop("pruned_ranges") for p in range(start, end)]
    return records


def test_page_is_deterministic_and_self_contained(run_dir, page_file):
    page = page_file.read_text(encoding="utf-8")
    assert view.build_page(run_dir) == page
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "Content-Security-Policy" in page


def test_messages_are_stored_once_and_episodes_refer_to_them(page_file):
    page = page_file.read_text(encoding="utf-8")
    table = [row for chunk in page_payloads(page, "chunk") for row in chunk]
    episodes = _episodes(page)
    assert len(episodes) == 6
    references = sum(len(e["transcript"]) + sum(len(c["shown"]) for c in e["calls"]) for e in episodes)
    assert len(table) < references / 5  # tool results and shown copies repeat across calls and configurations
    assert all(row[3] > 0 for row in table if row[1])  # o200k tokens per message
    referenced = {i for e in episodes for i in e["transcript"]} | {
        m[0] for e in episodes for c in e["calls"] for m in c["shown"]
    }
    assert referenced == set(range(len(table)))  # every stored message is used, every reference resolves


def test_stored_token_counts_are_used_and_match_a_fresh_count(run_dir, page_file, tmp_path, monkeypatch):
    """The page takes each message's count from the trajectory (context.tokens, output_tokens) and
    counts only what no model call was shown (the last results); without stored counts it counts
    everything itself and gets the same page."""
    counted = []
    real = view.count_message
    monkeypatch.setattr(view, "count_message", lambda message: counted.append(message) or real(message))
    page = page_file.read_text(encoding="utf-8")
    assert view.build_page(run_dir) == page
    shown = {
        json.dumps(m, sort_keys=True)
        for path in run_dir.glob("trajectories/*/*.json.gz")
        for m in json.loads(gzip.decompress(path.read_bytes()))["context"]["messages"]
    }
    assert counted and all(json.dumps(m, sort_keys=True) not in shown for m in counted)
    assert len(counted) <= 2 * 6  # at most the last tool result and user reply of each of the 6 episodes
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    for path in copy.glob("trajectories/*/*.json.gz"):
        trajectory = json.loads(gzip.decompress(path.read_bytes()))
        del trajectory["context"]["tokens"]
        for step in trajectory["steps"]:
            step["output_tokens"] = None
        path.write_bytes(gzip.compress(json.dumps(trajectory).encode(), mtime=0))
    counted.clear()
    rebuilt = view.build_page(copy)
    assert len(counted) > 12
    assert page_payloads(rebuilt, "chunk") == page_payloads(page, "chunk")


def test_contexts_mark_kept_pruned_and_summarized_messages(page_file):
    page = page_file.read_text(encoding="utf-8")
    overview = json.loads(re.search(r'id="overview-data">([^<]*)</script>', page).group(1))
    episodes = _episodes(page)
    marks = {}
    for meta, record, stored in zip(overview["episodes"], episodes, page_payloads(page, "episode")):
        last = record["calls"][-1]
        if meta["config"] == "C2":  # stored as runs: the page grows with the episode, not with its square
            assert all(call["shown"] == [] and call["kept"] == call["assistant"] for call in stored["calls"])
        else:  # a pruned window: what it hides is one range
            assert len(stored["calls"][-1]["pruned_ranges"]) <= 2, meta["config"]
        marks[meta["config"]] = marks.get(meta["config"], set()) | {m[1] for m in last["shown"]}
        if meta["config"] == "C2":  # full history: the last call saw the whole transcript
            assert last["pruned"] == [] and {m[1] for m in last["shown"]} == {"kept"}
        else:
            assert last["pruned"], meta["config"]
        assert [c["input_tokens"] for c in record["calls"]] == [c["input_tokens"] for c in record["calls"]]
    assert "summary" in marks["C4"] or "rewritten" in marks["C4"]
    assert marks["C3"] == {"kept"}


def test_view_command_errors_and_writes(run_dir, tmp_path, capsys):
    assert view.main([str(tmp_path)]) == 2
    assert "no results.jsonl" in capsys.readouterr().err
    out = tmp_path / "page.html"
    assert view.main([str(run_dir), "--out", str(out)]) == 0
    assert out.stat().st_size > 10_000


# --- in a real browser (extras: CI installs Debian's Chromium for them; the tab is conftest's browser_page) ----
@pytest.fixture
def page(browser_page, page_file):
    return browser_page


@pytest.mark.extras
def test_overview_renders_results_taxonomy_and_filters(page, page_file):
    page.goto(page_file.as_uri())
    page.wait_for_selector("#results tbody tr")
    assert page.locator("#results tbody tr").count() == 3
    assert page.locator("#results tbody tr").first.inner_text().startswith("C2")
    assert "100.0%" in page.locator("#results").inner_text()
    assert "success" in page.locator("#taxonomy").inner_text()
    assert page.inner_text("#agent-note") == "agent: scripted (not an LLM)"
    assert page.inner_text("#episode-count") == "6 of 6 episodes"
    page.locator('#results tr[data-config="C3"] a').first.click()
    page.wait_for_function("document.getElementById('episode-count').textContent.startsWith('2 of')")
    assert set(page.locator("#episode-list tbody td:first-child").all_inner_texts()) == {"C3"}
    page.select_option('select[name="task"]', "hotel-001")
    page.wait_for_function("document.getElementById('episode-count').textContent.startsWith('1 of')")


@pytest.mark.extras
def test_episode_view_shows_timeline_context_and_grade(page, page_file):
    page.goto(page_file.as_uri() + "#overview/config=C3")
    page.locator("#episode-list a", has_text="open").first.click()
    page.wait_for_selector("#context .msg")
    assert page.locator(".timeline li.ev-tool").count() > 10
    assert page.locator(".timeline li.ev-user").count() >= 1
    assert "collateral changes" in page.inner_text("#grade")
    assert page.locator(".chart svg path").count() == 3  # context size, cacheable prefix, remaining amount
    page.locator(".timeline li").last.click()
    page.wait_for_selector('#context .msg[data-mark="pruned"]')
    assert re.search(
        r"with the tool schemas \(o200k\); cacheable prefix [\d,]+ \(\d+%\)", page.inner_text("#context .ci")
    )
    assert page.locator('#context .msg[data-mark="kept"]').count() > 2
    assert "tokens" in page.locator("#context .msg .tokens").first.inner_text()


@pytest.mark.extras
def test_compare_view_aligns_two_configurations(page, page_file):
    page.goto(page_file.as_uri() + "#overview/config=C2&task=hotel-000")
    page.locator("#episode-list a", has_text="open").first.click()
    page.wait_for_selector("#context .msg")
    page.get_by_role("link", name="C4").click()
    page.wait_for_selector("#compare-table tbody tr")
    assert "C2 vs C4" in page.inner_text("h2")
    assert page.locator("#compare-table tbody tr").count() >= 10
    page.locator("#compare-table tbody tr").last.click()
    page.wait_for_selector("#context-b .msg")
    assert page.locator("#context-a .msg").count() > page.locator('#context-b .msg:not([data-mark="pruned"])').count()
    assert page.locator("#context-a .msg.only").count() > 0


@pytest.fixture(scope="module")
def two_runs_page(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("two-runs")
    assert (
        eval_cli.main(
            [*"--configs C2 --tasks hotel_50:hotel-000 --runs 2 --concurrency 1 --out".split(), str(out), "--quiet"]
        )
        == 0
    )
    return view.write_view(out)


@pytest.mark.extras
def test_compare_view_names_two_runs_of_one_task_apart(page, two_runs_page):
    page.goto(two_runs_page.as_uri() + "#episode/0")
    page.wait_for_selector("#context .msg")
    page.get_by_role("link", name="C2 run 1").click()  # other runs of the task are offered too
    page.wait_for_selector("#compare-table tbody tr")
    assert page.inner_text("h2") == "hotel-000: C2 run 0 vs C2 run 1"  # one task, not "different tasks"
    headers = page.locator("#compare-table th").all_inner_texts()
    assert headers[1] == "C2 run 0 action" and headers[3] == "C2 run 1 action"
    assert page.inner_text("#context-a h3 a") == "C2 run 0" and page.inner_text("#context-b h3 a") == "C2 run 1"


@pytest.mark.extras
def test_intervals_are_shown_only_where_they_have_width(page, page_file, two_runs_page):
    page.goto(page_file.as_uri())
    page.wait_for_selector("#results tbody tr")
    shown = [text for text in page.locator("#results .ci, #more-results .ci").all_inner_texts() if text]
    assert shown  # two tasks of one run: token counts differ between tasks, so those intervals have width
    for text in shown:
        low, high = text.strip("[]").split(", ")
        assert low != high, text
    page.goto(two_runs_page.as_uri())  # two runs of a deterministic agent agree: no interval has width
    page.wait_for_selector("#results tbody tr")
    assert [text for text in page.locator("#results .ci, #more-results .ci").all_inner_texts() if text] == []


@pytest.mark.extras
def test_a_chart_of_one_point_marks_the_point(page, page_file):
    page.goto(page_file.as_uri())
    page.wait_for_selector("#results tbody tr")
    one = page.evaluate("() => lineChart([[0, 5]], { caption: 'one' }).querySelectorAll('circle').length")
    many = page.evaluate("() => lineChart([[0, 5], [1, 7]], { caption: 'two' }).querySelectorAll('circle').length")
    assert (one, many) == (1, 0)


@settings(max_examples=500, deadline=None)
@given(
    positions=st.lists(st.integers(0, 60), min_size=1, max_size=25, unique=True).map(sorted),
    used=st.sets(st.integers(0, 60)),
    last_position=st.integers(-1, 61),
    first_free=st.integers(0, 62),
)
def test_a_repeated_message_takes_the_first_free_position_after_the_last_match(
    positions, used, last_position, first_free
):
    # the rule as the page states it, scanning every position, with the call's leading run (below first_free)
    # taken; view._free_position searches from the last match, which the run never passes
    first_free = min(first_free, last_position + 1)
    free = [p for p in positions if p not in used and p >= first_free]
    expected = next((p for p in free if p > last_position), free[0]) if free else None
    assert view._free_position(positions, used, last_position, first_free) == expected


def test_a_trajectory_file_edited_by_hand_costs_only_its_own_episode(run_dir, tmp_path, capsys):
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    broken = sorted(copy.glob("trajectories/*/*.json.gz"))[0]
    trajectory = json.loads(gzip.decompress(broken.read_bytes()))
    trajectory["context"]["steps"][-1].append(10**6)  # an index past the stored messages
    trajectory["messages"][2]["tool_calls"] = "not a list"
    broken.write_bytes(gzip.compress(json.dumps(trajectory).encode(), mtime=0))
    page = view.build_page(copy)
    assert broken.name in capsys.readouterr().err
    episodes = _episodes(page)
    assert len(episodes) == 6 and sum(not e["calls"] for e in episodes) == 1  # the others keep their contexts
