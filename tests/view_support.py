"""The run page (erp-sim view) in tests: its compressed <script> payloads read back, and the headless browser its
extras tests drive (a plugin of tests/conftest.py, so every test module gets ``browser`` and ``browser_page``)."""

from __future__ import annotations

import base64
import gzip
import json
import re
import shutil

import pytest


def page_payloads(page: str, prefix: str) -> list:
    """The page's ``PREFIX-N`` payloads (``episode``: the episode records; ``chunk``: the message table's chunks),
    inflated, in order."""
    blobs = re.findall(rf'<script type="application/gzip-base64" id="{prefix}-\d+">([^<]*)</script>', page)
    return [json.loads(gzip.decompress(base64.b64decode(blob))) for blob in blobs]


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("no Chromium: install Debian's chromium package (.ci/run does) to test the page in a browser")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is in the dev extra")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def browser_page(browser):
    """A tab that fails its test on a console error or warning, or on any request off the page."""
    tab = browser.new_page(viewport={"width": 1400, "height": 1000})
    tab.problems, tab.requests = [], []
    tab.on(
        "console", lambda message: tab.problems.append(message.text) if message.type in ("error", "warning") else None
    )
    tab.on("pageerror", lambda error: tab.problems.append(str(error)))
    tab.on("request", lambda request: tab.requests.append(request.url))
    yield tab
    assert tab.problems == []
    assert [url for url in tab.requests if not url.startswith(("file:", "data:"))] == []
    tab.close()
