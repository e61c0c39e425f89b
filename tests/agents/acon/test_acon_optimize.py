"""`erp-sim acon optimize` / `export-sft` end to end against the fake OpenAI-compatible server.

The fake server plays the agent, the compressor and the optimizer deterministically
(``fake_acon_roles``): a guideline that does not ask for exact values makes the compressor
round amounts, the agent then fails on tasks it solves uncompressed, and the optimizer's
feedback and candidates have something to fix.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from fake_acon_roles import acon_role_reply, compress, merge
from fake_openai_server import FakeOpenAIServer
from usage_support import usage_error

from erp_sim.agents.acon.export_sft import main as export_main
from erp_sim.agents.acon.optimize import Run, Settings
from erp_sim.agents.acon.optimize import main as optimize_main
from erp_sim.agents.cli import main as cli_main
from erp_sim.task_sets import resolve_tasks

TRAIN = resolve_tasks("hotel_50:train")[1][:3]
TEST = resolve_tasks("hotel_50:test")[1][:1]
POOR_GUIDELINE = """Summarize the agent's progress so it can continue the task.
Mention the report, the receipt items and what is left to do.
Use short sections and stay brief.
Avoid greetings and any commentary about yourself.
"""
ROLES = [
    "--agent",
    "openai:fake-agent",
    "--compressor",
    "openai:fake-compressor",
    "--optimizer",
    "openai:fake-optimizer",
]


def optimize_args(out: Path, guideline: Path) -> list[str]:
    return [
        *ROLES,
        "--tasks",
        "hotel_50:" + ",".join(TRAIN),
        "--test-tasks",
        "hotel_50:" + ",".join(TEST),
        "--initial-guideline",
        str(guideline),
        "--out",
        str(out),
        *"--price agent=2,8 --price compressor=2,8 --price optimizer=2,8".split(),
    ]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """One optimize run against the fake server, recorded; returns (out dir, args without endpoints)."""
    root = tmp_path_factory.mktemp("acon")
    guideline = root / "poor.md"
    guideline.write_text(POOR_GUIDELINE, encoding="utf-8")
    out = root / "run"
    args = optimize_args(out, guideline)
    with FakeOpenAIServer() as server:
        server.answer_with(acon_role_reply)
        assert optimize_main([*args, "--base-url", server.base_url, "--record", str(out)]) == 0
    assert server.requests and server.rejections == []  # agent, compressor and optimizer sent only what the API takes
    return out, args


def files(root: Path, skip: tuple[str, ...] = ("timing.json",)) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name not in skip and "cassettes" not in p.parts
    }


def test_optimize_writes_every_artefact(recorded):
    out, _ = recorded
    for name in ("config.json", "contrastive.json", "candidates.json", "report.json", "report.md", "timing.json"):
        assert (out / name).is_file(), name
    labels = ["v0", *(f"ut-{n}" for n in range(1, 6)), "co", "chosen"]
    for label in labels:
        assert (out / "guidelines" / f"{label}-history.md").read_text().strip(), label
    assert (out / "guidelines" / "v0-history.md").read_text() == POOR_GUIDELINE
    contrastive = json.loads((out / "contrastive.json").read_text())
    assert contrastive == TRAIN  # every train task: solved uncompressed, failed with the rounding compressor
    for task_id in contrastive:
        assert "Lesson:" in (out / "feedback" / f"{task_id}.md").read_text()
        assert (out / "optimizer" / f"ut-feedback-{task_id}.usage.json").is_file()
    for label in ["none", "v0", *(f"ut-{n}" for n in range(1, 6)), "co"]:
        for task_id in TRAIN:
            assert (out / "episodes" / label / "train" / "hotel_50" / f"{task_id}.json.gz").is_file(), (label, task_id)
    report = json.loads((out / "report.json").read_text())
    test_labels = {row["label"] for row in report["rounds"]}
    assert test_labels == {"none", "v0", report["rounds"][2]["label"], "co"}
    for label in test_labels:
        assert (out / "episodes" / label / "test" / "hotel_50" / f"{TEST[0]}.json.gz").is_file()
    assert report["sampling"] == {"agent": {"temperature": 0.0}, "compressor": {"temperature": 0.0}, "optimizer": {}}
    assert "optimizer none (server defaults)" in (out / "report.md").read_text()
    for role in ("agent", "compressor", "optimizer"):
        assert (out / "cassettes" / f"{role}.jsonl").stat().st_size > 0
    assert set(json.loads((out / "timing.json").read_text())) == {
        "round 0 (train: no compression, v0)",
        "UT (feedback, candidates, scoring)",
        "CO (shorten, scoring)",
        "test (every round)",
    }


def test_chosen_candidate_is_the_best_scored_one(recorded):
    out, _ = recorded
    candidates = json.loads((out / "candidates.json").read_text())
    scored = [
        (c["train"]["success"], -c["train"]["peak_tokens"], -int(c["label"][3:]), c["label"])
        for c in candidates["candidates"]
    ]
    assert candidates["best"] == max(scored)[3]
    assert len({s[0] for s in scored}) > 1  # the candidates really differ in success
    report = json.loads((out / "report.json").read_text())
    rounds = {row["round"]: row for row in report["rounds"]}
    assert rounds["1: UT"]["label"] == candidates["best"]
    assert (out / "guidelines" / f"{candidates['best']}-history.md").read_text() in {
        (out / "guidelines" / "chosen-history.md").read_text(),
        (out / "guidelines" / "ut-1-history.md").read_text(),
    }
    assert rounds["0: initial guideline"]["train"]["success"] == 0.0
    assert rounds["1: UT"]["train"]["success"] == 1.0
    # CO shortens: its guideline has fewer tokens, and it is chosen only when it keeps UT's success
    assert rounds["2: CO"]["guideline_tokens"]["history"] < rounds["1: UT"]["guideline_tokens"]["history"]
    chosen = "co" if rounds["2: CO"]["train"]["success"] >= rounds["1: UT"]["train"]["success"] else candidates["best"]
    assert report["chosen"] == chosen
    # the figures ACON reports, per round
    row = rounds["1: UT"]["train"]
    assert row["peak_tokens"] < rounds["no compression"]["train"]["peak_tokens"]
    assert row["compressor"]["calls"] > 0 and row["dependency"] > 0
    expected = (row["agent"]["input_tokens"] + row["compressor"]["input_tokens"]) * 2 / 1e6 + (
        row["agent"]["output_tokens"] + row["compressor"]["output_tokens"]
    ) * 8 / 1e6
    assert row["cost_usd"]["total"] == pytest.approx(expected, abs=1e-5)
    assert rounds["1: UT"]["optimizer"]["calls"] == len(TRAIN) + 5


def test_a_recorded_run_replays_byte_for_byte_offline(recorded, tmp_path):
    out, args = recorded
    replay = tmp_path / "replay"
    replay_args = [a if a != str(out) else str(replay) for a in args]
    assert optimize_main([*replay_args, "--replay", str(out)]) == 0
    assert files(replay) == files(out)


def test_resume_finishes_a_killed_run_without_repeating_work(recorded, tmp_path, capsys):
    out, args = recorded
    partial = tmp_path / "partial"
    shutil.copytree(out, partial, ignore=shutil.ignore_patterns("cassettes"))
    for path in [
        partial / "report.json",
        partial / "report.md",
        partial / "guidelines" / "co-history.md",
        partial / "optimizer" / "co-shorten-history.md",
        *(partial / "episodes" / "co").rglob("*.json.gz"),
    ]:
        path.unlink()
    partial_args = [a if a != str(out) else str(partial) for a in args]
    assert "exists: pass --resume" in usage_error(capsys, optimize_main, [*partial_args, "--replay", str(out)])
    assert optimize_main([*partial_args, "--replay", str(out), "--resume"]) == 0
    assert files(partial) == files(out)
    changed = [*partial_args, "--candidates", "3"]
    assert "other settings" in usage_error(capsys, optimize_main, [*changed, "--replay", str(out), "--resume"])


def test_export_sft_writes_chat_pairs_of_the_chosen_guideline(recorded, tmp_path):
    out, _ = recorded
    assert export_main([str(out), "--out", str(tmp_path / "sft")]) == 0
    manifest = json.loads((tmp_path / "sft" / "manifest.json").read_text())
    report = json.loads((out / "report.json").read_text())
    guideline = (out / "guidelines" / f"{report['chosen']}-history.md").read_text()
    train = [json.loads(line) for line in (tmp_path / "sft" / "train.jsonl").read_text().splitlines()]
    heldout = [json.loads(line) for line in (tmp_path / "sft" / "heldout.jsonl").read_text().splitlines()]
    assert manifest["counts"] == {"train": len(train), "heldout": len(heldout)} and train and heldout
    assert {s["task_id"] for s in manifest["sources"]["train"]} == set(TRAIN)
    assert {s["task_id"] for s in manifest["sources"]["heldout"]} == set(TEST)
    for row in train + heldout:
        system, user, assistant = row["messages"]
        assert (system["role"], user["role"], assistant["role"]) == ("system", "user", "assistant")
        assert system["content"] == guideline and user["content"].startswith("# Task\n") and assistant["content"]
    episode = json.loads(
        gzip.decompress(
            (out / "episodes" / report["chosen"] / "train" / "hotel_50" / f"{TRAIN[0]}.json.gz").read_bytes()
        )
    )
    assert [c["output"] for c in episode["compressor_calls"]] == [
        r["messages"][2]["content"] for r, s in zip(train, manifest["sources"]["train"]) if s["task_id"] == TRAIN[0]
    ]


def test_acon_is_an_erp_sim_command_and_checks_its_arguments(tmp_path, capsys):
    assert cli_main(["acon"]) == 0
    assert "optimize" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        optimize_main([*ROLES, "--tasks", "hotel_50:trian", "--out", str(tmp_path)])
    assert "Unknown task id" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        optimize_main([*ROLES, "--tasks", "hotel_50:train", "--out", str(tmp_path), "--record", "a", "--replay", "b"])
    argv = [*ROLES, "--tasks", "hotel_50:train", "--out", str(tmp_path), "--price", "agent=2"]
    assert "ROLE=IN,OUT" in usage_error(capsys, optimize_main, argv)
    with pytest.raises(SystemExit, match="report.json not found"):
        export_main([str(tmp_path)])


def test_fake_compressor_rounds_amounts_unless_the_guideline_asks_for_exact_values():
    request = "# Task\nItemize.\n\n# Response to rewrite\nTotal 338.48, remaining 40.62"
    assert "338.00" in compress("Be brief.", request) and "338.48" not in compress("Be brief.", request)
    assert "338.48" in compress("Copy every amount exactly.", request)


def test_a_compressor_on_its_own_server_is_evaluated_with_the_same_command(recorded, tmp_path):
    """--steps none scores a given guideline; --compressor-base-url sends the compressor's calls elsewhere
    (a distilled model on vLLM, llama.cpp or Ollama)."""
    out, _ = recorded
    report = json.loads((out / "report.json").read_text())
    chosen = out / "guidelines" / "chosen-history.md"
    with FakeOpenAIServer() as agent_server, FakeOpenAIServer() as compressor_server:
        agent_server.answer_with(acon_role_reply)
        compressor_server.answer_with(acon_role_reply)
        assert (
            optimize_main(
                [
                    *ROLES,
                    "--tasks",
                    "hotel_50:" + ",".join(TRAIN),
                    *"--test-tasks none --steps none --initial-guideline".split(),
                    str(chosen),
                    "--out",
                    str(tmp_path / "eval"),
                    "--base-url",
                    agent_server.base_url,
                    "--compressor-base-url",
                    compressor_server.base_url,
                ]
            )
            == 0
        )
    assert agent_server.rejections == [] and compressor_server.rejections == []
    assert agent_server.requests and all(r.get("tools") for r in agent_server.requests)
    assert compressor_server.requests and not any(r.get("tools") for r in compressor_server.requests)
    evaluated = json.loads((tmp_path / "eval" / "report.json").read_text())
    assert [row["label"] for row in evaluated["rounds"]] == ["none", "v0"] and evaluated["chosen"] == "v0"
    original = {row["label"]: row for row in report["rounds"]}[report["chosen"]]["train"]
    assert evaluated["rounds"][1]["train"]["success"] == original["success"]
    assert evaluated["rounds"][1]["train"]["peak_tokens"] == original["peak_tokens"]
    assert not (tmp_path / "eval" / "candidates.json").exists()


def test_fake_compressor_merges_the_previous_summary_instead_of_nesting_it():
    previous = (
        "## Task\nItemize.\n\n## Key variables\nReport: EXP-000001\nReceipt items (1):\n  1. 2026-01-01 | Room | 10.50\n\n"
        "## Completed\n- opened\n\n## User said\n- Yes, add them all.\n\n## To-do\n- save"
    )
    new = "## Task\nItemize.\n\n## Key variables\nReport: EXP-000001\n\n## Completed\n- saved\n\n## To-do\n- close"
    merged = merge(new, previous)
    assert "Receipt items (1):\n  1. 2026-01-01 | Room | 10.50\n\n## Completed\n- saved" in merged
    assert "## User said\n- Yes, add them all.\n\n## To-do\n- close" in merged
    assert merged.count("## Task") == 1 and merge(merged, previous) == merged


@pytest.mark.parametrize(
    "tasks, test_tasks, shared",
    [
        ("hotel_50:hotel-000,hotel-001", "hotel_50:hotel-001,hotel-002", "hotel-001"),
        ("hotel_50:train", "hotel_50", "hotel-000, hotel-001, hotel-005, hotel-006, hotel-007 and 20 more"),
        ("expense_types:hotel-003", "Hotel:hotel-003", "hotel-003"),  # an expense-type view holds expense_types' tasks
    ],
)
def test_overlapping_train_and_test_tasks_are_refused_in_one_line(tmp_path, capsys, tasks, test_tasks, shared):
    argv = [*ROLES, "--tasks", tasks, "--test-tasks", test_tasks, "--out", str(tmp_path / "run")]
    message = usage_error(capsys, optimize_main, argv)
    assert message.startswith(f"--tasks {tasks} and --test-tasks {test_tasks} share ")
    assert f"({shared}): a test task must not be a train task" in message
    assert not (tmp_path / "run").exists()  # refused before anything is written
    settings = Settings(
        agent="openai:a",
        compressor="openai:c",
        optimizer="openai:o",
        tasks=tasks,
        test_tasks=test_tasks,
        initial_guideline={"history": POOR_GUIDELINE},
    )
    with pytest.raises(ValueError, match="a test task must not be a train task"):
        Run(settings, tmp_path / "api", {})  # the same check for a run started from Python


def test_a_test_task_sharing_its_id_with_a_train_task_of_another_set_runs_apart(tmp_path):
    task_id = TRAIN[0]  # hotel_50's and expense_types' tasks of this id are different tasks
    out = tmp_path / "run"
    with FakeOpenAIServer() as server:
        server.answer_with(acon_role_reply)
        assert (
            optimize_main(
                [
                    *ROLES,
                    "--tasks",
                    f"hotel_50:{task_id}",
                    "--test-tasks",
                    f"expense_types:{task_id}",
                    *"--steps none --out".split(),
                    str(out),
                    "--base-url",
                    server.base_url,
                ]
            )
            == 0
        )
    for label in ("none", "v0"):
        train = json.loads(
            gzip.decompress((out / "episodes" / label / "train" / "hotel_50" / f"{task_id}.json.gz").read_bytes())
        )
        test = json.loads(
            gzip.decompress((out / "episodes" / label / "test" / "expense_types" / f"{task_id}.json.gz").read_bytes())
        )
        assert (train["task_set"], train["split"], test["task_set"], test["split"]) == (
            "hotel_50",
            "train",
            "expense_types",
            "test",
        )
        assert train["messages"][1] != test["messages"][1]  # each ran its own task
    first_requests = [
        r["messages"][1]["content"] for r in server.requests if r.get("tools") and len(r["messages"]) == 2
    ]
    assert len(first_requests) == 4 and len(set(first_requests)) == 2  # 2 labels x 2 tasks: both tasks ran, twice each


def test_export_sft_warns_when_a_split_comes_out_empty(recorded, tmp_path, capsys):
    out, _ = recorded
    run = tmp_path / "run"
    shutil.copytree(out, run, ignore=shutil.ignore_patterns("cassettes"))
    chosen = json.loads((run / "report.json").read_text())["chosen"]
    shutil.rmtree(run / "episodes" / chosen / "test")  # as if the run had no test split
    assert export_main([str(run), "--out", str(tmp_path / "sft"), "--heldout-fraction", "0"]) == 0
    warning = capsys.readouterr().err.strip()
    assert (
        warning == "warning: heldout.jsonl is empty: no episode of this split called the compressor; held out by "
        "sha256(task id) < 0.0 (--heldout-fraction)"
    )
    assert json.loads((tmp_path / "sft" / "manifest.json").read_text())["warnings"] == [warning]
    assert (tmp_path / "sft" / "heldout.jsonl").read_text() == ""


def test_resume_of_a_run_with_episodes_kept_by_task_id_only_moves_them_and_calls_no_model(recorded, tmp_path):
    out, args = recorded
    partial = tmp_path / "partial"
    shutil.copytree(out, partial, ignore=shutil.ignore_patterns("cassettes"))
    moved = []
    for path in sorted((partial / "episodes").rglob("*.json.gz")):  # back to episodes/LABEL/TASK.json.gz
        label_dir = path.parents[2]
        path.replace(label_dir / path.name)
        moved.append(label_dir / path.name)
    assert len(moved) == len(set(moved))  # this run has no id in two splits, so the old layout held it
    partial_args = [a if a != str(out) else str(partial) for a in args]
    (tmp_path / "empty" / "cassettes").mkdir(parents=True)  # every model call would be a replay miss
    assert optimize_main([*partial_args, "--replay", str(tmp_path / "empty"), "--resume"]) == 0
    assert not any(path.exists() for path in moved)
    episodes = {k: v for k, v in files(partial).items() if k.startswith("episodes/")}
    assert episodes == {k: v for k, v in files(out).items() if k.startswith("episodes/")}
