"""The report's notes on what served a run: models that answered other than the one asked, and cut answers."""

from __future__ import annotations

from test_statistics import episode

from erp_sim.agents.evaluation.episode_row import EpisodeRow, RowSampling
from erp_sim.agents.evaluation.report import render_report
from erp_sim.agents.evaluation.report.served_models import length_stops_note, served_models_note


def row(
    config: str, task: int, *, asked: str | None, served: list[str] | None, cut: int | None, **metrics: int
) -> EpisodeRow:
    """A successful episode (``test_statistics.episode``) of an agent asking for ``asked``, answered by ``served``."""
    base = episode(config, task, 0, True)
    return base.model_copy(
        update={
            "agent": f"openai:{asked}" if asked else "scripted",
            "metrics": base.metrics.model_copy(update={"length_stops": cut, "model_calls": 10, **metrics}),
            "sampling": RowSampling(
                agent={"model": asked} if asked else None, served_models={"agent": served} if served else None
            ),
        }
    )


def test_a_model_other_than_the_one_asked_and_cut_answers_are_said_per_configuration():
    rows = [
        row("C2", 0, asked="gpt-4o", served=["gpt-4o-2024-08-06"], cut=0),
        row("C2", 1, asked="gpt-4o", served=["gpt-4o-2024-08-06", "gpt-4o-2024-11-20"], cut=2),
        row("C3", 0, asked="local", served=["local"], cut=1),  # answered as asked: not listed
    ]
    assert served_models_note(rows) == (
        "**Models that answered** (as the services named them): C2 agent: `gpt-4o-2024-08-06`, "
        "`gpt-4o-2024-11-20` (asked for `gpt-4o`)."
    )
    assert (length_stops_note(rows) or "").startswith(
        "**Answers cut at the token limit** (finish_reason `length`, of the role's calls): agent: C2 2 of 20, "
        "C3 1 of 10."
    )
    report = render_report(rows)
    assert "**Models that answered**" in report and "**Answers cut at the token limit**" in report


def test_the_users_and_the_summarizers_cut_answers_are_named_too():
    """Issue 39, point 9: a transformers serve run cut 3 of 3 user replies and 1 of 1 summary, and the report named
    only the agent's cut answers."""
    rows = [
        row("C4", 0, asked="m", served=None, cut=0, user_length_stops=3, user_model_calls=3,
            summarizer_length_stops=1, summarizer_calls=1),
    ]  # fmt: skip
    assert (length_stops_note(rows) or "").startswith(
        "**Answers cut at the token limit** (finish_reason `length`, of the role's calls): user: C4 3 of 3; "
        "summarizer: C4 1 of 1."
    )


def test_offline_rows_add_no_note():
    rows = [row("C2", 0, asked=None, served=None, cut=None)]
    assert served_models_note(rows) is None and length_stops_note(rows) is None
    assert "Models that answered" not in render_report(rows)


def test_names_from_a_server_cannot_write_markdown_and_many_are_cut_short():
    hostile = [f"m{k}`\n# heading <script>" for k in range(8)]
    note = served_models_note([row("C2", 0, asked="gpt-4o", served=hostile, cut=None)]) or ""
    assert "\n" not in note and note.count("`") % 2 == 0 and "and 3 more" in note
