"""The episode loop: any agent (with any context policies) on any env, everything recorded.

The runner owns the full transcript. Each step it hands the whole transcript to the agent
(policies decide what the model sees), turns the assistant message into env actions (one
``env.step`` per tool call; a text-only message goes to the simulated user), and appends
the observations as tool results or user messages. Token counts are exact o200k_base counts
of what the model was shown plus the tool schemas, so offline and LLM runs are comparable.
Every model call also gets its cacheable prefix (``erp_sim.agents.tokens.prompt_cache``): the agent's
from what it was shown, the summarizer's and an LLM user's from the calls they report to the
episode's meter (``StepRecord.role_calls``); the service's own counts stay in fields of their own.

A failing model service ends only its own episode, with a recorded outcome: an
``InfrastructureError`` (retries ran out) gives termination ``infra_error`` (not scored, retried
on resume); a refused request (``ModelRequestError``, e.g. a content filter) gives
``model_error`` and a too-long one (``ContextOverflowError``, from the server or from
``context_window``) gives ``context_overflow``; both are scored as failures. Any other exception
(a bug in an agent, a policy or the simulated user; a cassette replay miss is an
``InfrastructureError``) gives ``harness_error``, recorded like an infrastructure error: the
episode is not scored, the run goes on, and ``--resume`` tries it again.
"""

from __future__ import annotations

import json
import time
import traceback
from dataclasses import dataclass
from typing import Any

from erp_sim.agents.failures import classify_failure
from erp_sim.agents.tokens import TokenCounter, get_counter
from erp_sim.agents.tokens.prompt_cache import EpisodeMeter, ModelCall, PrefixTracker, call_sums
from erp_sim.agents.trajectory import ContextRecorder, EpisodeMetrics, RoleRequests, StepRecord, Trajectory, grade_model
from erp_sim.agents.types import (
    Agent,
    AgentStep,
    ContextOverflowError,
    HarnessTools,
    InfrastructureError,
    Message,
    ModelRequestError,
    Transcript,
    harness_tools,
    refuse_over_window,
    sum_reported,
)
from erp_sim.outcomes import HarnessTermination, Termination

DEFAULT_MAX_MODEL_CALLS = 400
HARNESS_TRACEBACK_FRAMES = 6
MAX_HARNESS_ERROR_CHARS = 4_000
EPISODE_ENDED = "The episode has ended; this call was not executed."


def model_call_limit(step_limit: int) -> int:
    """The cap on an episode's model calls for an env of ``step_limit`` steps: never below the env's limit (long
    horizons take a model call per step), and at least ``DEFAULT_MAX_MODEL_CALLS``, since answering a harness
    tool (ga_memory's) takes a model call and no env step."""
    return max(DEFAULT_MAX_MODEL_CALLS, step_limit)


def run_episode(
    env,
    agent: Agent,
    *,
    task_id: str | None = None,
    seed: int | None = None,
    max_model_calls: int = DEFAULT_MAX_MODEL_CALLS,
    keep_shown: bool = True,
    counter: TokenCounter | None = None,
    policy: str | None = None,
    context_window: int | None = None,
) -> Trajectory:
    """Run one episode and return its trajectory (grade, metrics, termination, transcript).

    ``keep_shown``: store what the model was shown at every step (``Trajectory.context``).
    ``context_window``: a step whose input (messages + tool schemas, counted) exceeds it ends
    the episode as ``context_overflow`` before its action is executed.
    """
    counter = counter or get_counter()
    started = time.perf_counter()
    options = {"task_id": task_id} if task_id else None
    observation, info = env.reset(seed=seed, options=options)
    # tools a layer of the agent's policy stack offers and the harness answers (ga_memory's), never sent to the ERP
    harness = harness_tools(agent)
    tools = [*info["tools"], *harness.schemas] if harness is not None else info["tools"]
    # it only grows, and no message in it changes (each sealed): the agent and its policies skip what they read before
    transcript = Transcript(
        [{"role": "system", "content": info["system_prompt"]}, {"role": "user", "content": observation}]
    )
    trajectory = Trajectory(
        task_id=info["task"]["task_id"],
        task_set=info["task"]["task_set"],
        seed=seed,
        policy=policy or getattr(agent, "spec", "full"),
        tools=tools,
    )
    agent.reset()
    recorder = ContextRecorder(counter) if keep_shown else None
    role_requests = RoleRequests(counter) if keep_shown else None  # what the LLM summarizer was sent and answered
    # the summarizer's and an LLM user's calls report to it
    meter = EpisodeMeter(counter, keep=role_requests.keep if role_requests is not None else None).start()
    agent_requests = meter.tracker("agent")  # it encodes the tool schemas for its requests: their count comes with them
    acting = _Acting(
        agent, tools, meter, recorder, context_window, agent_requests.tools_tokens(tools), agent_requests=agent_requests
    )
    env_state = _EnvState(info=info)
    termination: Termination | None = None
    refused_tokens: int | None = None
    while not env_state.done and len(trajectory.steps) < max_model_calls:
        try:
            message = _act(acting, transcript, trajectory)
            _dispatch(env, harness, message, transcript, env_state)
            trajectory.steps[-1].role_calls += meter.drain()  # the LLM user's answer to this step
        except Exception as exc:
            termination = _failure(exc, trajectory)
            refused_tokens = exc.tokens if isinstance(exc, ContextOverflowError) else None
            break
    meter.stop()
    if trajectory.steps:  # calls made before a failure later in the step
        late = meter.drain()
        trajectory.steps[-1].role_calls += late
        # a summary whose step failed (its own call, or the agent's after it) never reached the step's figures
        trajectory.steps[-1].summarizer_calls += sum(call.role == "summarizer" for call in late)
        trajectory.steps[-1].summarizer_tokens += _summarizer_tokens(late)
    if termination is None:
        termination = env_state.info.get("termination_reason") or (
            "step_limit" if env_state.truncated or not env_state.done else "agent_stopped"
        )
    trajectory.messages = list(transcript)
    assert termination is not None  # set by a failure or just above
    if recorder is not None:
        trajectory.context = recorder.context
    if role_requests is not None:
        trajectory.role_contexts = role_requests.contexts()
    trajectory.termination = termination
    _grade_and_measure(env, trajectory, env_state.info)
    if refused_tokens is not None:
        trajectory.metrics.refused_request_tokens = refused_tokens
    trajectory.timing = {"wall_time_s": time.perf_counter() - started, "model_time_s": acting.model_time}
    return trajectory


# --- acting: one model call, counted and recorded -----------------------------------------------
@dataclass
class _Acting:
    """What choosing a step needs, and the model time spent so far."""

    agent: Agent
    tools: list
    meter: EpisodeMeter
    recorder: ContextRecorder | None
    context_window: int | None
    tool_tokens: int
    agent_requests: PrefixTracker
    model_time: float = 0.0


def _act(acting: _Acting, transcript: list[Message], trajectory: Trajectory) -> Message:
    """Ask the agent for its next message, append it and the step's record; refuse an over-long context."""
    call_started = time.perf_counter()
    step = acting.agent.act(transcript, acting.tools)
    acting.model_time += time.perf_counter() - call_started
    if not isinstance(step, AgentStep):  # an agent of user code (policies pass its step on as it is)
        agent = type(getattr(acting.agent, "unwrapped", acting.agent)).__name__
        raise TypeError(f"{agent}.act returned a {type(step).__name__}, not an AgentStep")
    message = step.message
    cacheable = acting.agent_requests.observe(step.shown, acting.tools)  # it counts the shown messages on the way
    input_tokens = acting.agent_requests.message_tokens + acting.tool_tokens
    refuse_over_window(input_tokens, acting.context_window, f"step {len(trajectory.steps)}: the model was shown")
    if acting.recorder is not None:
        acting.recorder.record(step.shown, transcript)
    transcript.append(message)
    calls = message.get("tool_calls") or []
    role_calls = acting.meter.drain()  # the summarizer's, while the policies built this context
    trajectory.steps.append(
        StepRecord(
            index=len(trajectory.steps),
            shown_messages=len(step.shown),
            input_tokens=input_tokens,
            output_tokens=acting.agent_requests.count(message),  # the next request shows it: tokenized once
            reported_input_tokens=step.usage.input_tokens,
            reported_output_tokens=step.usage.output_tokens,
            cacheable_prefix_tokens=cacheable,
            provider_cached_tokens=step.usage.cached_input_tokens,
            provider_cache_write_tokens=step.usage.cache_write_input_tokens,
            reasoning_tokens=step.usage.reasoning_tokens,
            summarizer_calls=step.summarizer_calls,
            role_calls=role_calls,
            tool_calls=len(calls),
            summarizer_tokens=_summarizer_tokens(role_calls),
            finish_reason=step.finish_reason,
            served_model=step.served_model,
        )
    )
    return message


# --- dispatching: the message's tool calls to the env or the harness, or its text to the user ----
@dataclass
class _EnvState:
    """Where the env stands after the last ``env.step``."""

    info: dict[str, Any]
    done: bool = False
    truncated: bool = False


def _dispatch(env, harness: HarnessTools | None, message: Message, transcript: list[Message], state: _EnvState) -> None:
    calls = message.get("tool_calls") or []
    if not calls:  # a text message goes to the user (whose model may fail too)
        _send_message(env, message, transcript, state)
        return
    for call in calls:
        if state.done:  # keep the transcript valid: every call gets a result
            transcript.append(_tool_result(call, EPISODE_ENDED))
            continue
        action = {"name": call["function"]["name"], "arguments": call["function"].get("arguments") or "{}"}
        if harness is not None and harness.handles(action["name"]):
            transcript.append(_tool_result(call, harness.call(action["name"], action["arguments"])))
            continue
        observation, _, terminated, state.truncated, state.info = env.step(json.dumps(action))
        transcript.append(_tool_result(call, observation))
        state.done = terminated or state.truncated


def _send_message(env, message: Message, transcript: list[Message], state: _EnvState) -> None:
    observation, _, terminated, state.truncated, state.info = env.step(
        json.dumps({"message": message.get("content") or ""})
    )
    if observation:
        transcript.append({"role": "user", "content": observation})
    state.done = terminated or state.truncated


def _failure(exc: Exception, trajectory: Trajectory) -> HarnessTermination:
    """The termination a failed step gives its episode, with the error recorded on the trajectory."""
    if isinstance(exc, InfrastructureError):
        trajectory.infra_error = str(exc)
        return "infra_error"
    if isinstance(exc, ContextOverflowError):
        trajectory.model_error = str(exc)
        return "context_overflow"
    if isinstance(exc, ModelRequestError):
        trajectory.model_error = str(exc)
        return "model_error"
    trajectory.infra_error = _harness_error(exc)  # a bug in the harness (agent, policy, user)
    return "harness_error"


# --- metrics: the grade and what the episode cost -------------------------------------------------
def _grade_and_measure(env, trajectory: Trajectory, last_info: dict[str, Any]) -> None:
    grade = env.unwrapped.grade()  # None for a remote ERP without a grade source
    # a remote grade arrives as its JSON dict
    trajectory.grade = grade_model(trajectory.task_set).model_validate(grade) if grade is not None else None
    trajectory.metrics = _metrics(trajectory, last_info, getattr(env.unwrapped, "user", None))
    trajectory.failure_category = None if trajectory.infra_error else classify_failure(trajectory)


def _harness_error(exc: Exception) -> str:
    """The error and the end of its traceback (where it was raised), for the row and the trajectory."""
    where = "".join(traceback.format_exception(exc)[-HARNESS_TRACEBACK_FRAMES:])
    return f"harness error: {type(exc).__name__}: {exc}\n{where}"[:MAX_HARNESS_ERROR_CHARS]


def _tool_result(call: dict, content: str) -> Message:
    return {"role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"], "content": content}


def _metrics(trajectory: Trajectory, info: dict[str, Any], user: Any = None) -> EpisodeMetrics:
    counts = info.get("counts", {})
    steps = trajectory.steps
    return EpisodeMetrics(
        user_model_calls=getattr(user, "calls", 0),
        **_role_metrics(steps),
        steps=counts.get("steps", 0),
        model_calls=len(steps),
        tool_calls=counts.get("tool_calls", 0),
        invalid_actions=counts.get("invalid_actions", 0),
        tool_errors=counts.get("tool_errors", 0),
        user_turns=counts.get("user_turns", 0),
        input_tokens=sum(s.input_tokens for s in steps),
        output_tokens=sum(s.output_tokens for s in steps),
        peak_tokens=max((s.input_tokens for s in steps), default=0),
        dependency=sum((s.input_tokens + 2 * s.output_tokens) * s.output_tokens / 2 for s in steps),
        reported_input_tokens=sum(s.reported_input_tokens for s in steps),
        reported_output_tokens=sum(s.reported_output_tokens for s in steps),
        cacheable_prefix_tokens=sum(s.cacheable_prefix_tokens for s in steps),
        provider_cached_tokens=sum_reported([s.provider_cached_tokens for s in steps]),
        provider_cache_write_tokens=sum_reported([s.provider_cache_write_tokens for s in steps]),
        reasoning_tokens=sum_reported([s.reasoning_tokens for s in steps]),
        summarizer_calls=sum(s.summarizer_calls for s in steps),
        length_stops=_length_stops([s.finish_reason for s in steps]),
    )


def _length_stops(reasons: list[str | None]) -> int | None:
    """Answers cut at the token limit; None when no answer said why it stopped (as ``sum_reported``)."""
    said = [reason for reason in reasons if reason is not None]
    return sum(reason == "length" for reason in said) if said else None


def _summarizer_tokens(calls: list[ModelCall]) -> int:
    """A step's ``summarizer_tokens``: its summarizer calls' input and output, in o200k."""
    return sum(call.input_tokens + call.output_tokens for call in calls if call.role == "summarizer")


def _role_metrics(steps: list[StepRecord]) -> dict[str, Any]:
    """Per-episode sums of the summarizer's and the LLM user's model calls, both units apart."""
    sums: dict[str, Any] = {}
    for role in ("summarizer", "user"):
        calls = [call for s in steps for call in s.role_calls if call.role == role]
        sums.update({f"{role}_{name}": value for name, value in call_sums(calls).items()})
        stops = _length_stops([call.finish_reason for call in calls])
        if stops is not None:  # said by the service: absent offline
            sums[f"{role}_length_stops"] = stops
    sums["summarizer_tokens"] = sums["summarizer_input_tokens"] + sums["summarizer_output_tokens"]
    return sums
