"""What the model saw: the compact visible context of every step, ``erp-sim show``, sampling settings."""

from __future__ import annotations

import gzip
import json

import gymnasium as gym
import pytest

import erp_sim.envs  # noqa: F401  (registers the ids)
from erp_sim.agents.cli import main as cli_main
from erp_sim.agents.evaluation.episode_row import read_rows
from erp_sim.agents.evaluation.eval_cli import main as eval_main
from erp_sim.agents.policies import wrap
from erp_sim.agents.runner import run_episode
from erp_sim.agents.scripted import ScriptedAgent
from erp_sim.agents.trajectory import Trajectory


class Witness:
    """Wraps the scripted agent and keeps what it was shown, to check the stored context against."""

    def __init__(self):
        self.inner, self.seen = ScriptedAgent(), []

    def reset(self):
        self.inner.reset()
        self.seen.clear()

    def act(self, transcript, tools):
        self.seen.append(json.loads(json.dumps(transcript)))
        return self.inner.act(transcript, tools)


@pytest.fixture(scope="module")
def env():
    environment = gym.make("erp_sim/ExpenseItemization-v0")
    yield environment
    environment.close()


@pytest.mark.parametrize(
    "spec, origin",
    [
        ("last_n_summary:n=5,w=3", "summary"),
        ("acon_observation", "rewritten"),
        ("head_tail:chars=300", "rewritten"),
        ("acon_history:t=2000", "summary"),
    ],
)
def test_every_step_is_stored_once_per_distinct_message_and_rebuilds_what_the_model_saw(env, spec, origin):
    witness = Witness()
    trajectory = run_episode(env, wrap(witness, spec), task_id="hotel-049")
    context = Trajectory.model_validate_json(trajectory.model_dump_json()).context  # survives a round trip
    assert len(context.steps) == len(trajectory.steps) == len(witness.seen)
    for k, seen in enumerate(witness.seen):
        assert context.shown(k) == seen
    assert len({json.dumps(m, sort_keys=True) for m in context.messages}) == len(context.messages)
    assert origin in context.origins and len(context.origins) == len(context.messages)
    assert sum(len(s) for s in context.steps) > len(context.messages)  # compact: steps refer, not copy


def test_a_full_transcript_shows_only_transcript_messages(env):
    trajectory = run_episode(env, ScriptedAgent(), task_id="hotel-003")
    assert set(trajectory.context.origins) == {"transcript"}
    last = trajectory.context.steps[-1]
    assert last == list(range(len(last))) and trajectory.context.messages == trajectory.messages[: len(last)]


def test_the_recorder_matches_a_plain_reference_on_random_lists_and_a_reused_list():
    """Each step's indices are what a lookup of every shown message gives (identity, then canonical JSON),
    also when the caller passes one list object again, changed in place, or repeats an object in it; and each
    stored message's origin is the plain rule's, applied to the transcript when it was first shown: the
    transcript's own object or a copy equal to a transcript message, a summary, a result rewritten under a
    transcript call id, or an inserted message."""
    import random

    from erp_sim.agents.trajectory import ContextRecorder

    rng = random.Random(7)
    transcript = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    recorder, reference, reused, origins = ContextRecorder(), [], [], {}
    for step in range(80):
        transcript.append({"role": "tool", "tool_call_id": f"c{step % 7}", "name": "t", "content": f"r{step % 9}"})
        others = [{"role": "user", "content": f"inserted {rng.randrange(4)}"} for _ in range(2)]
        others.append(dict(rng.choice(transcript)))  # an equal copy of a transcript message
        others.append({"role": "tool", "tool_call_id": f"c{rng.randrange(9)}", "name": "t", "content": "cut"})
        others.append({"role": "user", "content": f"<HISTORY_SUMMARY> {rng.randrange(3)}"})
        others.append(
            {
                "role": rng.choice(["user", "tool"]),
                "content": rng.choice(["r1", None, [{"type": "text", "text": "r1"}]]),
            }
        )
        shown = rng.sample(transcript + others, rng.randrange(1, len(transcript) + len(others) + 1))
        if rng.random() < 0.3:
            shown.append(shown[0])  # the same object twice in one list
        if rng.random() < 0.5:  # one list object, refilled in place
            reused[:] = shown
            shown = reused
        for message in shown:  # the plain rule, for a message's first showing
            key = json.dumps(message, sort_keys=True)
            if key not in origins:
                ids = {m["tool_call_id"] for m in transcript if m.get("role") == "tool"}
                if any(message is m or key == json.dumps(m, sort_keys=True) for m in transcript):
                    origins[key] = "transcript"
                elif "<HISTORY_SUMMARY>" in str(message.get("content")):
                    origins[key] = "summary"
                elif message.get("role") == "tool" and message.get("tool_call_id") in ids:
                    origins[key] = "rewritten"
                else:
                    origins[key] = "inserted"
        recorder.record(shown, transcript)
        reference.append([json.dumps(m, sort_keys=True) for m in shown])
    context = recorder.context
    keys = [json.dumps(m, sort_keys=True) for m in context.messages]
    assert len(set(keys)) == len(keys)
    assert [[keys[i] for i in indices] for indices in context.steps] == reference
    assert context.origins == [origins[key] for key in keys]
    assert set(context.origins) == {"transcript", "summary", "rewritten", "inserted"}


def test_what_the_sender_vouches_for_is_recorded_as_plain_copies_of_it_are():
    """A Transcript that grew and a Continuation of the last list (``types.unchanged_prefix``) keep their vouched
    indices uncompared: on random sequences of such lists and plain ones, every step, message and origin is what a
    recorder given fresh plain copies of the same lists stores."""
    import random

    from erp_sim.agents.trajectory import ContextRecorder
    from erp_sim.agents.types import Continuation, Transcript

    rng = random.Random(9)
    transcript = Transcript([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])
    vouched, plain, shown = ContextRecorder(), ContextRecorder(), list(transcript)
    for step in range(120):
        transcript.append({"role": "tool", "tool_call_id": f"c{step % 5}", "name": "t", "content": f"r{step % 7}"})
        move, new = rng.random(), [{"role": "user", "content": f"inserted {rng.randrange(3)}"}]
        if move < 0.4:
            shown = transcript
        elif move < 0.8:
            kept = rng.randrange(len(shown) + 1)
            last = shown if isinstance(shown, Continuation) else None
            shown = Continuation([*shown[:kept], *new, *rng.sample(transcript, 2)], last, kept)
        else:
            shown = [*transcript[:2], *new, *rng.sample(transcript, 3)]
        vouched.record(shown, transcript)
        plain.record([dict(m) for m in shown], list(transcript))
    assert vouched.context.steps == plain.context.steps
    assert vouched.context.origins == plain.context.origins and vouched.context.messages == plain.context.messages


def test_eval_trajectories_hold_the_context_and_show_prints_it(tmp_path, capsys):
    assert (
        eval_main(
            [
                *"--configs C2,C4 --tasks hotel_50:hotel-049 --runs 1 --quiet --concurrency 1 --out".split(),
                str(tmp_path),
            ]
        )
        == 0
    )
    rows = read_rows(tmp_path / "results.jsonl")
    assert all(
        r["sampling"]
        == {
            "agent": None,
            "user": None,
            "summarizer": None,
            "context_window": None,
            "max_steps": 200,
            "verbosity": "default",
            "cassettes": None,
        }
        for r in rows
    )
    with gzip.open(tmp_path / rows[1]["trajectory"], "rt") as handle:
        stored = json.load(handle)
    assert stored["context"]["steps"] and "summary" in stored["context"]["origins"]
    capsys.readouterr()

    assert cli_main(["show", str(tmp_path), "hotel-049", "--config", "C4"]) == 0
    out = capsys.readouterr().out
    assert "config C4 (policy last_n_summary:n=5,w=3)" in out and "[SUMMARY written by the policy]" in out
    assert "=== step 0: shown 2 messages" in out and "→ did" in out and "(summary)" in out
    steps = len(stored["context"]["steps"])
    assert out.count("=== step ") == steps

    assert cli_main(["show", str(tmp_path), "hotel-049", "--config", "c4", "--step", "12"]) == 0
    one = capsys.readouterr().out
    assert one.count("=== step ") == 1 and "=== step 12:" in one and "…" not in one

    assert cli_main(["show", str(tmp_path), "hotel-049"]) == 2
    assert "several configurations (C2, C4): choose one with --config" in capsys.readouterr().err
    assert cli_main(["show", str(tmp_path), "hotel-049", "--config", "C4", "--step", "999"]) == 2
    assert "out of range" in capsys.readouterr().err
    assert cli_main(["show", str(tmp_path / "nowhere"), "hotel-049"]) == 2
    assert "no results.jsonl" in capsys.readouterr().err


def test_sampling_settings_of_an_openai_agent_are_in_the_row(tmp_path, fake_openai_server, monkeypatch):
    from harness_support import script_server_with_scripted_agent

    env = gym.make("erp_sim/ExpenseItemization-v0")
    script_server_with_scripted_agent(fake_openai_server, env, "hotel-003")
    assert (
        eval_main(
            [
                *"--configs C2 --tasks hotel_50:hotel-003 --runs 1 --quiet --concurrency 1 --agent openai:fake-model --base-url".split(),
                fake_openai_server.base_url,
                *"--context-window 400000 --out".split(),
                str(tmp_path),
            ]
        )
        == 0
    )
    [row] = read_rows(tmp_path / "results.jsonl")
    assert row["sampling"] == {
        "agent": {
            "model": "fake-model",
            "params": {"temperature": 0.0},
            "timeout": 300.0,
            "max_retries": 5,
            "base_url": fake_openai_server.base_url,
        },
        "user": None,
        "summarizer": None,
        "context_window": 400000,
        "max_steps": 200,
        "verbosity": "default",
        "cassettes": None,
        "served_models": {"agent": ["fake-model"]},  # as the server named itself in its answers
    }
