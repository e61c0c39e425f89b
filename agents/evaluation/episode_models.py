"""Each role's model for one episode (agent, user, summarizer), built from its spec, and the checks that a replay matches what was recorded."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from erp_sim.agents.command_line import UsageError
from erp_sim.agents.evaluation.eval_options import EpisodeSpec
from erp_sim.agents.evaluation.recording_run import hold_recording, note_recording_run, recording_run_refusal
from erp_sim.agents.model_agent import ModelAgent
from erp_sim.agents.models.cassette import RecordingModel, ReplayModel
from erp_sim.agents.models.factory import chat_model
from erp_sim.agents.models.roles import (
    EVAL_ROLES,
    MODEL_CHOICES,
    label,
    merged_manifest,
    model_spec,
    named_servers,
    names_a_model,
    read_manifest,
    replay_contradiction,
    sampling,
    save_manifest,
    settings_of,
    with_switches,
)
from erp_sim.agents.policies import summarizes, wrap
from erp_sim.agents.scripted import ScriptedAgent
from erp_sim.agents.summarizers import LLMSummarizer
from erp_sim.agents.types import Agent

if TYPE_CHECKING:
    from erp_sim.agents.llm_user import LLMUser


# --- building the pieces of one episode -------------------------------------------------------
def _chat_model(name: str, base_url: str | None, **options: Any):
    return chat_model(name, base_url, **options)


def role_model(spec: EpisodeSpec, role: str, name: str, base_url: str | None, api: str = "openai"):
    """The chat model playing ``role`` in this episode (``api``: one of ``roles.MODEL_APIS``): live (with
    --record, into a cassette of its own), or, when the agent is ``replay:DIR``, answered offline from the
    role's recorded cassette (no SDK needed)."""
    kind, _, replay_dir = spec.agent.partition(":")
    if kind == "replay":
        return ReplayModel(
            cassette_path(Path(replay_dir), spec, role),
            strict=True,
            settings=_recorded_settings(Path(replay_dir), role),
        )
    model = _chat_model(
        name,
        base_url,
        api=api,
        role=role,
        params=with_switches(spec.model_params.get(role, {}), api, spec.switches),
        timeout=spec.timeout,
        max_retries=spec.max_retries,
        azure_endpoint=spec.azure_endpoint,
        api_version=spec.api_version,
    )
    if spec.record_dir:
        path = cassette_path(Path(spec.record_dir), spec, role)
        _keep_earlier_attempt(path)
        model = RecordingModel(model, path)
    return model


def cassette_path(directory: Path, spec: EpisodeSpec, role: str) -> Path:
    """DIR/cassettes/CONFIG/EPISODE.jsonl for the agent, EPISODE.ROLE.jsonl for every other role (CONFIG as a folder
    name, ``spec.folder``; a recording made before that, whose folder is the configuration's name as it is, still
    replays)."""
    suffix = ".jsonl" if role == "agent" else f".{role}.jsonl"
    folder = directory / "cassettes" / spec.folder
    earlier = directory / "cassettes" / spec.config
    if folder != earlier and not folder.exists() and earlier.is_dir():
        folder = earlier
    return folder / f"{spec.episode_name}{suffix}"


def _recorded_settings(directory: Path, role: str):
    """The role's entry in the recording's manifest (None: a recording made before manifests)."""
    manifest = read_manifest(directory / "cassettes")
    if manifest is not None and role not in manifest:
        raise ValueError(f"the recording in {directory} has no {role} model")
    return None if manifest is None else manifest[role]


def build_agent(spec: EpisodeSpec, summarizer: Any = None):
    """The agent wrapped in its policies; ``summarizer`` (None: the offline structured one) serves them."""
    kind, _, argument = spec.agent.partition(":")
    inner: Agent
    named = model_spec(spec.agent)
    if kind == "scripted" or (kind == "replay" and replays_scripted_agent(Path(argument))):
        inner = ScriptedAgent(recall_horizon=_scripted_recall(argument) if kind == "scripted" else None, seed=spec.seed)
    elif kind == "replay" or named is not None:
        api, name = named or ("openai", argument)
        inner = ModelAgent(role_model(spec, "agent", name, spec.base_url, api), context_window=spec.context_window)
    else:
        raise ValueError(f"unknown agent {spec.agent!r}: use scripted, {MODEL_CHOICES} or replay:DIR")
    return wrap(inner, spec.policy, summarizer=summarizer)


def replays_scripted_agent(directory: Path) -> bool:
    """A recording whose agent was the scripted one (its manifest has other roles, no agent): it replays with it."""
    manifest = read_manifest(directory / "cassettes")
    return manifest is not None and "agent" not in manifest


def build_summarizer(spec: EpisodeSpec):
    """An ``LLMSummarizer`` when ``--summarizer API:MODEL`` and the policy summarizes, else None."""
    named = model_named("summarizer", spec.summarizer, "structured")
    if named is None or not summarizes(spec.policy):
        return None
    api, name = named
    return LLMSummarizer(role_model(spec, "summarizer", name, spec.summarizer_base_url or spec.base_url, api))


def model_named(role: str, value: str, *offline: str) -> tuple[str, str] | None:
    """``(api, model)`` of ``API:MODEL``; None for the offline choices; ValueError for anything else."""
    if value in offline:
        return None
    named = model_spec(value)
    if named is None:
        raise ValueError(f"unknown {role} {value!r}: use {', '.join(offline)} or {MODEL_CHOICES}")
    return named


def _named_label(role: str, value: str, *offline: str) -> str | None:
    named = model_named(role, value, *offline)
    return None if named is None else f"{named[0]}:{named[1]}"


def _keep_earlier_attempt(cassette: Path) -> None:
    """Move an earlier attempt's cassette aside (NAME.attemptK.jsonl): NAME.jsonl is always the
    attempt that produced the row, so replay follows it, and the history is still on disk. Only the
    run that made the recording records into it again (``recording_run``)."""
    cassette.parent.mkdir(parents=True, exist_ok=True)
    if not cassette.exists():
        return
    number = 1
    while (earlier := cassette.with_name(f"{cassette.stem}.attempt{number}.jsonl")).exists():
        number += 1
    cassette.replace(earlier)


def _scripted_recall(argument: str) -> float | None:
    """``scripted`` or ``scripted:recall=H`` (the synthetic misreading model, H tokens)."""
    if not argument:
        return None
    key, _, value = argument.partition("=")
    try:
        if key.strip() == "recall":
            return float(value)
    except ValueError:
        pass
    raise ValueError(f"scripted agent options: recall=TOKENS (e.g. scripted:recall=2e6), got {argument!r}")


def sampling_settings(model: Any) -> dict[str, Any] | None:
    """The model, request params and client settings of a role (None: no LLM); a replay's are the recording's."""
    return sampling(model)


def llm_user_class() -> type[LLMUser]:
    """``LLMUser``, imported on first use: its module reads the envs' user models, and importing ``erp_sim.envs``
    registers the ids with Gymnasium, which the eval's parent and a worker's start-up need not load
    (tests/test_startup.py)."""
    from erp_sim.agents.llm_user import LLMUser

    return LLMUser


def build_user(spec: EpisodeSpec):
    named = model_named("user", spec.user, "rule", "none")
    if named is None:
        return spec.user
    api, name = named
    return llm_user_class()(role_model(spec, "user", name, spec.base_url, api))


def check_models(
    spec: EpisodeSpec, other_roles: dict[str, str | None] | None = None, built: list[tuple[str, Any]] | None = None
) -> dict[str, Any]:
    """Build the models of one episode here, so that a bad --agent/--user/--summarizer (an unknown
    kind, a missing API key or cassette, a replay that contradicts its recording) is one line before
    any file is written, not a worker traceback. Returns each live model role's ``ModelSettings``.

    ``other_roles``: role -> model name (None: no model) of roles outside the episode (the consolidator).
    ``built``: when given, (role, model) of each live model is added to it, for ``probe_models``.
    """
    kind, _, argument = spec.agent.partition(":")
    try:
        if kind == "replay":
            check_replay(spec, Path(argument), other_roles or {})
            return {}
        live = spec.model_copy(update={"record_dir": None})  # recording would create files
        summarizer = build_summarizer(live)
        models = {
            "agent": getattr(build_agent(live, summarizer).unwrapped, "model", None),
            "user": getattr(build_user(live), "model", None),
            "summarizer": getattr(summarizer, "model", None),
            **{
                role: role_model(live, role, named[1], spec.base_url, named[0])
                for role, name in (other_roles or {}).items()
                if name is not None and (named := model_named(role, name)) is not None
            },
        }
    except (ValueError, FileNotFoundError) as error:
        raise UsageError(str(error)) from None
    if built is not None:
        built += [(role, model) for role, model in models.items() if model is not None]
    return {role: settings_of(model) for role, model in models.items() if model is not None}


def probe_models(live: list[tuple[str, Any]]) -> None:
    """Send each live model its one cheap request (``OpenAIChatModel.probe``), once per model name and server; the
    first that fails ends the run in one line naming the role, before any file is written."""
    probed: dict[tuple[str, str | None], str | None] = {}
    for role, model in live:
        probe = getattr(model, "probe", None)
        if probe is None:  # a model of user code
            continue
        key = (model.model, model.base_url)
        if key not in probed:
            probed[key] = probe()
        if probed[key] is not None:
            raise SystemExit(
                f"erp-sim: the {role}'s model does not answer before the first episode: {probed[key]}; "
                "nothing was run (--no-probe skips this check)"
            )


def check_replay(spec: EpisodeSpec, directory: Path, other_roles: dict[str, str | None]) -> None:
    """The recording must be there, and what the command names must not contradict it (ValueError)."""
    if not (directory / "cassettes").is_dir():  # episodes may lack a cassette of their own; the directory must be there
        raise FileNotFoundError(f"--agent {spec.agent}: no cassettes directory in {str(directory)!r}")
    recorded = read_manifest(directory / "cassettes")
    if recorded is None:  # a recording made before manifests: nothing to check against
        return
    named = {"agent": label(recorded["agent"]) if "agent" in recorded else None}
    if spec.user != "none":  # C1 runs without a user whatever the recording had
        named["user"] = _named_label("user", spec.user, "rule", "none")
    if summarizes(spec.policy):
        named["summarizer"] = _named_label("summarizer", spec.summarizer, "structured")
    problem = replay_contradiction(
        recorded,
        {**named, **other_roles},
        directory,
        params=spec.model_params,
        timeout=spec.timeout,
        max_retries=spec.max_retries,
        base_urls=_named_servers(spec),
    )
    if problem:
        raise ValueError(problem)


def _named_servers(spec: EpisodeSpec) -> dict[str, tuple[str, str]]:
    """Role -> (option, URL) for each role a --base-url / --summarizer-base-url given would send to, as live."""
    return named_servers(spec.base_url, EVAL_ROLES, {"summarizer": ("--summarizer-base-url", spec.summarizer_base_url)})


def prepare_models(
    specs: list[EpisodeSpec],
    other_roles: dict[str, str | None] | None = None,
    *,
    probe: bool = False,
    preflight: Callable[[], None] | None = None,
) -> None:
    """Check the models of every kind of episode planned, then run ``preflight`` (the caller's own offline checks),
    then (``probe``) send each live model its cheap request; with --record, write the recording's manifest last, so
    a run stopped by any check leaves no file behind."""
    if specs[0].record_dir and specs[0].agent != "scripted" and not names_a_model(specs[0].agent):
        raise UsageError(
            f"--record records the model calls of a live run: a model agent ({MODEL_CHOICES}), or the scripted "
            "agent beside a model user, summarizer or consolidator (the scripted agent's recall= is not recorded)"
        )
    settings: dict[str, Any] = {}
    kinds: dict[
        tuple[str, bool], EpisodeSpec
    ] = {}  # C1 runs without the user the others get; only summarizing policies build a summarizer
    for spec in specs:
        kinds.setdefault((spec.user, summarizes(spec.policy)), spec)
    live: list[tuple[str, Any]] = []
    for spec in kinds.values():
        settings.update(check_models(spec, other_roles, live))
    record_dir = specs[0].record_dir
    if record_dir and not settings:
        raise UsageError("--record: no role of this run calls a model (scripted agent, rule user, structured "
                         "summarizer): there is nothing to record")  # fmt: skip
    if record_dir:
        cassettes = Path(record_dir) / "cassettes"
        try:  # held first (no other run checks and writes meanwhile); other models, then another run
            hold_recording(cassettes)
            manifest = merged_manifest(cassettes, settings)
            problem = recording_run_refusal(cassettes, specs[0].out_dir)
        except ValueError as error:
            raise UsageError(f"--record {error}") from None
        if problem:
            raise UsageError(f"--record {problem}")
    if preflight is not None:
        preflight()
    if probe:  # after every offline check, before any file of the recording is written
        probe_models(live)
    if record_dir:
        save_manifest(cassettes, manifest)
        note_recording_run(cassettes, specs[0].out_dir)
