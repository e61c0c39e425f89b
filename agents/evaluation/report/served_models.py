"""What served a run, for the report's opening notes: the models the services named in their answers
(beside the model each role asked for) and the agent answers cut at their token limit."""

from __future__ import annotations

from collections.abc import Sequence

from erp_sim.agents.evaluation.episode_row import EpisodeRow
from erp_sim.agents.tokens.prompt_cache import ROLES  # the roles a row's sampling names

NAMES_SHOWN = 5  # per configuration and role: a server that names itself anew at every answer lists them all


def _names(names: list[str]) -> str:
    """Names as one-line Markdown code, backticks out (a name comes from a server), the first few of many."""
    shown = ", ".join("`" + " ".join(name.split()).replace("`", "'") + "`" for name in names[:NAMES_SHOWN])
    return shown + (f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")


def served_models_note(rows: Sequence[EpisodeRow]) -> str | None:
    """Per configuration and role, the models that answered where one differs from the model asked for
    (a dated snapshot behind an alias, or a local server's own model); None when every answer named the
    model asked for, or none named one (offline)."""
    served: dict[tuple[str, str], dict[str, None]] = {}
    asked: dict[tuple[str, str], dict[str, None]] = {}
    for row in rows:
        for role, names in (row.sampling.served_models or {}).items():
            served.setdefault((row.config, role), {}).update(dict.fromkeys(names))
            settings = getattr(row.sampling, role, None) if role in ROLES else None
            model = settings.get("model") if isinstance(settings, dict) else None
            if isinstance(model, str):
                asked.setdefault((row.config, role), {})[model] = None
    parts = [
        f"{config} {role}: {_names(list(names))}"
        + (f" (asked for {_names(list(asked[config, role]))})" if asked.get((config, role)) else "")
        for (config, role), names in sorted(served.items())
        if list(names) != list(asked.get((config, role), {}))
    ]
    if not parts:
        return None
    return "**Models that answered** (as the services named them): " + "; ".join(parts) + "."


# role -> (the row's count of its answers cut at the token limit, the row's count of its calls)
_CUT_FIELDS = {
    "agent": ("length_stops", "model_calls"),
    "user": ("user_length_stops", "user_model_calls"),
    "summarizer": ("summarizer_length_stops", "summarizer_calls"),
}


def length_stops_note(rows: Sequence[EpisodeRow]) -> str | None:
    """Each role's answers cut at the token limit (finish_reason 'length'), per configuration, of its calls: an
    agent's cut tool call often ends mid-arguments (an invalid action, not a choice), an LLM user's cut reply or a
    summarizer's cut summary is what the agent then reads."""
    cut: dict[tuple[str, str], list[int]] = {}  # (role, config) -> [cut answers, calls]
    for row in rows:
        for role, (stops, calls) in _CUT_FIELDS.items():
            seen = cut.setdefault((role, row.config), [0, 0])
            seen[0] += getattr(row.metrics, stops) or 0
            seen[1] += getattr(row.metrics, calls)
    cut = {key: seen for key, seen in cut.items() if seen[0]}
    if not cut:
        return None
    roles = sorted({role for role, _ in cut}, key=list(_CUT_FIELDS).index)
    listed = "; ".join(
        f"{role}: "
        + ", ".join(
            f"{config} {count} of {calls}" for (who, config), (count, calls) in sorted(cut.items()) if who == role
        )
        for role in roles
    )
    return (
        f"**Answers cut at the token limit** (finish_reason `length`, of the role's calls): {listed}. A cut agent "
        "answer's tool call usually ends mid-arguments and counts as an invalid action, and a cut user reply or "
        "summary is what the agent reads next; raise that role's `max_tokens` (`--model-param ROLE:max_tokens=N`) "
        "before reading these as the policy's failures."
    )
