"""``scripts/cache_costs.py`` (the table of what C2, C3 and C4 cost under each provider's caching rules) reruns
on one task: six rows, and the relations the documented table shows."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "cache_costs.py"


def test_the_cost_table_reruns_on_one_task(capsys):
    spec = importlib.util.spec_from_file_location("cache_costs", SCRIPT)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(["--tasks", "hotel_50:hotel-006"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if re.match(r"\| C\d \|", line)]
    assert len(rows) == 6
    figures = {}
    for row in rows:
        config, provider, _, read, written, cached, uncached, _ = [cell.strip() for cell in row.strip("|").split("|")]
        figures[config, provider.split()[0]] = (
            float(read.rstrip("%")),
            float(written.rstrip("%")),
            float(cached),
            float(uncached),
        )
    for provider in ("Anthropic", "OpenAI"):
        assert figures["C2", provider][0] > figures["C4", provider][0] > figures["C3", provider][0] > 0
        assert all(figures[config, provider][2] < figures[config, provider][3] for config in ("C2", "C3", "C4"))
    assert figures["C4", "Anthropic"][1] > 0 and figures["C4", "OpenAI"][1] == 0  # only Anthropic bills writes
