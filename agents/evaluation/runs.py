"""How many runs of each (configuration, task) an evaluation makes: one for a deterministic agent.

The scripted agent without ``recall=`` decides from what it is shown and nothing else, so its
runs of a task are byte-identical copies: more runs add no information, and run-to-run
intervals and pass^k computed from copies are degenerate (zero width, pass^k = pass^1). It
runs once per configuration and task unless ``--runs N`` asks for more, and its intervals are
taken over tasks. An LLM agent, a replayed recording or the scripted agent with its synthetic
misreading model (``recall=``) varies between runs and keeps the study's five.
"""

from __future__ import annotations

DEFAULT_RUNS = 5  # the study's design: five runs over the task set
DETERMINISTIC_REASON = "deterministic agent"


def is_deterministic(agent: str) -> bool:
    """The scripted agent without options: the same task and seed-free decisions give the same episode."""
    return agent == "scripted"


def default_runs(agent: str) -> int:
    return 1 if is_deterministic(agent) else DEFAULT_RUNS


def runs_text(runs: int, agent: str) -> str:
    """What a table row says about its runs, e.g. ``1 (deterministic agent)``."""
    return f"{runs} ({DETERMINISTIC_REASON})" if is_deterministic(agent) else str(runs)
