"""--price parsing and the report's prompt-caching cost table (erp_sim.agents.evaluation.costs)."""

from __future__ import annotations

import json

import pytest
from test_report import write_results
from test_statistics import episode
from usage_support import usage_error

from erp_sim.agents.evaluation import costs, report
from erp_sim.agents.evaluation.report.cli import main as report_main


def test_prices_parse_by_role():
    prices = costs.parse_prices(["agent=2.5,1.25,10", "User=0.4,0.1,1.6,0.5"])
    assert prices == {"agent": costs.Price(2.5, 1.25, 10.0), "user": costs.Price(0.4, 0.1, 1.6, 0.5)}
    assert costs.parse_prices(None) == {} and str(prices["user"]) == "0.4,0.1,1.6,0.5"


@pytest.mark.parametrize(
    "value,reason",
    [
        ("agent=2.5,1.25", "2 numbers given"),
        ("agent=1,2,3,4,5", "5 numbers given"),
        ("robot=1,2,3", "expected ROLE=input,cached_input,output"),
        ("agent", "expected ROLE=input,cached_input,output"),
        ("agent=a,b,c", "must be numbers"),
        ("agent=-1,1,1", "not negative"),
        ("agent=nan,1,1", "finite"),
        ("agent=1,,3", "must be numbers"),
        ("agent=2.5,5,10", "cached input (5) dearer than input (2.5)"),  # issue 39: the order swapped
    ],
)
def test_a_bad_price_is_refused_in_one_line(value, reason):
    with pytest.raises(ValueError, match=".") as error:
        costs.parse_prices([value])
    assert reason in str(error.value) and repr(value) in str(error.value) and "\n" not in str(error.value)


def test_a_role_priced_twice_is_refused():
    with pytest.raises(ValueError, match="already has a price"):
        costs.parse_prices(["agent=1,1,1", "agent=2,2,2"])


def test_the_cli_refuses_a_bad_price_in_one_line_and_writes_nothing(tmp_path, capsys):
    directory = write_results(tmp_path / "run", [episode("C2", 0, 0, True)])
    message = usage_error(capsys, report_main, [str(directory), "--price", "agent=1,2"])
    assert message.startswith("--price 'agent=1,2': 2 numbers given")
    assert not (directory / report.REPORT_FILE).exists()


def priced_row(config, task, *, input_tokens, cacheable, output, user_input=0, user_cacheable=0):
    row = episode(config, task, 0, True, tokens=input_tokens)
    counts = {
        "cacheable_prefix_tokens": cacheable,
        "output_tokens": output,
        "user_input_tokens": user_input,
        "user_cacheable_prefix_tokens": user_cacheable,
        "user_output_tokens": 0,
    }
    return row.model_copy(update={"metrics": row.metrics.model_copy(update=counts)})


def test_the_cost_table_prices_cached_and_uncached_input(tmp_path):
    rows = [priced_row("C2", task, input_tokens=1_000_000, cacheable=800_000, output=100_000) for task in range(2)]
    rows += [
        priced_row(
            "C3", task, input_tokens=500_000, cacheable=100_000, output=100_000, user_input=10_000, user_cacheable=5_000
        )
        for task in range(2)
    ]
    directory = write_results(tmp_path / "run", rows)
    assert report_main([str(directory), "--price", "agent=2,1,8"]) == 0
    md = (directory / report.REPORT_FILE).read_text(encoding="utf-8")
    # C2, per episode: without 1M·2 + 0.1M·8 = 2.80; with 0.8M·1 + 0.2M·2 + 0.8 = 2.00; two tasks per benchmark
    assert "| C2 | 2,000,000 | 80.0 | 0 | – | 5.60 | 4.00 | 28.6 |" in md
    # C3: without 0.5M·2 + 0.8 = 1.80; with 0.1M·1 + 0.4M·2 + 0.8 = 1.70; its LLM user is not priced
    assert "| C3 | 1,000,000 | 20.0 | 20,000 | 50.0 | 3.60 | 3.40 | 5.6 |" in md
    assert "Not priced, left out of the cost: user." in md and "![full itemization vs cost with caching]" in md
    assert (directory / report.SUCCESS_VS_COST_PNG).read_bytes().startswith(b"\x89PNG")
    assert "o200k counts stand in for the provider's own tokenizer" in md  # the method, in Methods
    data = json.loads((directory / report.REPORT_JSON).read_text())["cost"]
    assert data["configs"]["C2"]["cost_per_benchmark_with_caching"]["mean"] == pytest.approx(4.0)
    assert data["configs"]["C3"]["cacheable_share"] == {"agent": 0.2, "summarizer": None, "user": 0.5}
    assert data["unpriced_roles"] == ["user"]
    # a cache-write price bills the uncached part at it: C2 0.8 + 0.2M·2.5 + 0.8 = 2.10 per episode
    assert report_main([str(directory), "--price", "agent=2,1,8,2.5", "--price", "user=1,0.5,4"]) == 0
    md = (directory / report.REPORT_FILE).read_text(encoding="utf-8")
    assert "| C2 | 2,000,000 | 80.0 | 0 | – | 5.60 | 4.20 | 25.0 |" in md and "Not priced" not in md
    # without prices: shares only, and no stale cost plot
    assert report_main([str(directory)]) == 0
    md = (directory / report.REPORT_FILE).read_text(encoding="utf-8")
    assert "No prices given" in md and not (directory / report.SUCCESS_VS_COST_PNG).exists()


def test_service_counts_give_their_own_cost_column_and_token_units_row(tmp_path):
    rows = [priced_row("C2", task, input_tokens=1_000_000, cacheable=800_000, output=100_000) for task in range(2)]
    for row in rows:
        row.metrics = row.metrics.model_copy(
            update={
                "reported_input_tokens": 1_100_000,
                "provider_cached_tokens": 500_000,
                "reported_output_tokens": 100_000,
            }
        )
    directory = write_results(tmp_path / "run", rows)
    assert report_main([str(directory), "--price", "agent=2,1,8"]) == 0
    md = (directory / report.REPORT_FILE).read_text(encoding="utf-8")
    # ours as before; the service's: 0.5M·1 + 0.6M·2 + 0.1M·8 = 2.50 per episode, never mixed with ours
    assert "| C2 | 2,000,000 | 80.0 | 5.60 | 4.00 | 28.6 | 5.00 (service: agent) |" in md
    assert "| C2 | agent | 2,000,000 | 2,200,000 | +10.0 | 1,600,000 | 1,000,000 |" in md
    data = json.loads((directory / report.REPORT_JSON).read_text())["cost"]["configs"]["C2"]
    assert data["provider_cached_tokens_per_benchmark"] == {"agent": 1_000_000.0, "summarizer": None, "user": None}
    assert data["cost_per_benchmark_service_counts_and_cached"]["mean"] == pytest.approx(5.0)
    assert data["service_counted_roles"] == ["agent"]


def test_a_role_whose_service_reported_nothing_counts_in_o200k_and_the_cell_says_so(tmp_path):
    """Issue 39, point 4: only the summarizer reported counts, so the service figure read 0.0036 USD beside the
    agent's 2.12: each priced role falls back to our counts where its service said nothing, and is named."""
    rows = [priced_row("C4", task, input_tokens=1_000_000, cacheable=800_000, output=100_000) for task in range(2)]
    for row in rows:
        row.metrics = row.metrics.model_copy(
            update={"summarizer_input_tokens": 9_000, "summarizer_output_tokens": 1_000,
                    "summarizer_reported_input_tokens": 10_000, "summarizer_reported_output_tokens": 1_000}
        )  # fmt: skip
    directory = write_results(tmp_path / "run", rows)
    assert report_main([str(directory), "--price", "agent=2,1,8", "--price", "summarizer=1,0.5,4"]) == 0
    md = (directory / report.REPORT_FILE).read_text(encoding="utf-8")
    # agent in o200k (2.00 per episode with caching), the summarizer's own: 0.01M·1 + 0.001M·4 = 0.014
    assert "| 4.03 (service: summarizer; o200k: agent) |" in md
    data = json.loads((directory / report.REPORT_JSON).read_text())["cost"]["configs"]["C4"]
    assert data["cost_per_benchmark_service_counts_and_cached"]["mean"] == pytest.approx(4.028)


def test_eval_refuses_a_bad_price_before_running_anything(tmp_path, capsys):
    from erp_sim.agents.evaluation.eval_cli import main as eval_main

    argv = ["--configs", "C2", "--runs", "1", "--out", str(tmp_path / "out"), "--price", "agent=1,2,x"]
    assert "prices must be numbers" in usage_error(capsys, eval_main, argv) and not (tmp_path / "out").exists()
