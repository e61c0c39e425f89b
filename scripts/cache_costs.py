"""What C2, C3 and C4 cost under Anthropic's prompt-cache rules against OpenAI's automatic prefix caching.

The scripted agent plays the agent role through the project's strict fake servers (``tests/``): once as
``anthropic:claude-sonnet-4-5`` against the fake Messages API, whose usage follows Anthropic's rules (the
breakpoints each policy places, the 1,024-token minimum, the 20-block lookback, cache writes billed), and
once as ``openai-responses:gpt-4.1`` against the fake Responses API, whose usage follows OpenAI's automatic
prefix caching (every prefix of 1,024 tokens and more, in 128-token steps, no write charge). Both see the
same requests and make the same decisions; the user is the rule-based one and C4's summarizer the offline
structured one, so only the agent's calls are priced. Each configuration runs against a fresh server (its
episodes share one cache, as one organisation's requests do; entries never age: a scripted episode takes
seconds, far inside the 5-minute time to live). Token counts are o200k, standing in for each
provider's tokenizer.

One example price for both, so that only the caching rules differ: Claude Sonnet 4.5's list price, USD 3
per 1M input tokens, 0.30 per 1M cached (read) tokens, 3.75 per 1M written (Anthropic's 5-minute cache;
OpenAI bills no write, so written tokens cost the input price there), 15 per 1M output tokens.

    .venv/bin/python scripts/cache_costs.py [--tasks hotel_50] [--out runs/cache_costs]

prints the table as Markdown (docs/evaluation.md and the README show its output on hotel_50).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the fake servers

CONFIGS = ("C2", "C3", "C4")
PROVIDERS = {"Anthropic (breakpoints)": "anthropic:claude-sonnet-4-5", "OpenAI (automatic)": "openai-responses:gpt-4.1"}
PRICE = {"input": 3.0, "cached_input": 0.30, "cache_write": 3.75, "output": 15.0}  # USD per 1M tokens


def run(agent: str, config: str, tasks: str, out: Path) -> list:
    """The eval's rows for ``config`` with the scripted agent behind a fresh fake server of ``agent``'s API (so
    no configuration reads what another wrote)."""
    import contextlib
    import io

    from fake_acon_roles import acon_role_reply

    from erp_sim.agents.evaluation.episode_row import read_results
    from erp_sim.agents.evaluation.eval_cli import main as eval_main

    server: Any
    if agent.startswith("anthropic:"):
        from fake_anthropic_server import FakeAnthropicServer

        server = FakeAnthropicServer()
    else:
        from fake_responses_server import FakeResponsesServer

        server = FakeResponsesServer(reasoning=False)
    server.answer_with(acon_role_reply)
    with server, contextlib.redirect_stdout(io.StringIO()):
        argv = ["--configs", config, "--agent", agent, "--base-url", server.base_url, "--tasks", tasks]
        code = eval_main([*argv, "--runs", "1", "--concurrency", "1", "--quiet", "--out", str(out)])
        if code or server.rejections:
            raise SystemExit(f"{agent}: the run failed ({code}) or a request was refused: {server.rejections[:1]}")
    return read_results(out / "results.jsonl").rows


def figures(rows: list, writes_billed: bool) -> dict[str, dict[str, float]]:
    """Per configuration, per benchmark (summed over its tasks): input, cache reads and writes, output, cost."""
    result = {}
    for config in CONFIGS:
        chosen = [row for row in rows if row.config == config and not row.infra_error]
        inputs = sum(row.metrics.reported_input_tokens for row in chosen)
        read = sum(row.metrics.provider_cached_tokens or 0 for row in chosen)
        written = sum(row.metrics.provider_cache_write_tokens or 0 for row in chosen) if writes_billed else 0
        output = sum(row.metrics.reported_output_tokens for row in chosen)
        plain = inputs - read - written
        cost = (
            plain * PRICE["input"]
            + read * PRICE["cached_input"]
            + written * PRICE["cache_write"]
            + output * PRICE["output"]
        ) / 1e6
        uncached = (inputs * PRICE["input"] + output * PRICE["output"]) / 1e6
        successes = sum(bool(row.grade and row.grade.success) for row in chosen)
        result[config] = {
            "episodes": len(chosen),
            "success": successes,
            "input": inputs,
            "read": read,
            "written": written,
            "cost": cost,
            "uncached": uncached,
        }
    return result


def table(results: dict[str, dict[str, dict[str, float]]]) -> str:
    lines = [
        "| config | provider's rules | input tokens | cache-read share | cache-write share | cost with caching (USD) "
        "| cost without caching (USD) | saved |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for config in CONFIGS:
        for provider, by_config in results.items():
            f = by_config[config]
            lines.append(
                f"| {config} | {provider} | {f['input']:,.0f} | {_share(f, 'read')} | {_share(f, 'written')} | "
                f"{f['cost']:.4f} | {f['uncached']:.4f} | {100 * (1 - f['cost'] / f['uncached']):.1f}% |"
            )
    return "\n".join(lines)


def _share(figure: dict[str, float], part: str) -> str:
    return f"{100 * figure[part] / figure['input']:.1f}%" if figure["input"] else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="hotel_50", help="the task selection, as erp-sim eval takes it")
    parser.add_argument("--out", help="keep the runs here (default: a temporary directory)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(args.out or scratch)
        results = {
            provider: figures(
                [
                    row
                    for config in CONFIGS
                    for row in run(agent, config, args.tasks, out / agent.partition(":")[0] / config)
                ],
                agent.startswith("anthropic:"),
            )
            for provider, agent in PROVIDERS.items()
        }
    episodes = {f["episodes"] for by_config in results.values() for f in by_config.values()}
    print(table(results))
    print(
        f"\n{args.tasks}, {max(episodes)} episodes per configuration and provider; the agent's calls only; "
        "USD 3 / 0.30 / 3.75 / 15 per 1M input / cached / written / output tokens (Claude Sonnet 4.5's list "
        "price, for both)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
