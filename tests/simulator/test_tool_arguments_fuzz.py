"""Hypothesis: arbitrary JSON values (with NUL characters, lone surrogates, 5,000-digit integers) for every
argument of every tool never raise out of ErpSession.call or env.step, and a refused call changes nothing."""

from __future__ import annotations

import json

import gymnasium as gym
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import erp_sim
import erp_sim.envs
from erp_sim.database.schema import CHANGE_LOG

HUGE = st.sampled_from([5000, -4400]).map(
    lambda digits: (10 ** abs(digits)) * (1 if digits > 0 else -1)
)  # built lazily
HOSTILE = (
    st.sampled_from(
        ["\x00", "a\x00b", "\ud800", "x\udfff", "9" * 5000, "1e2", "-0.00", "１２", float("inf"), float("nan")]
    )
    | HUGE
)
TEXT = st.text(alphabet=st.characters(exclude_categories=()), max_size=20)  # surrogates and controls included
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | TEXT | HOSTILE,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
TOOL_ARGUMENTS = {name: list(tool.input_schema.get("properties", {})) for name, tool in erp_sim.TOOLS.items()}


@st.composite
def calls(draw):
    name = draw(st.sampled_from(list(TOOL_ARGUMENTS)))
    names = TOOL_ARGUMENTS[name] + [draw(TEXT)]
    chosen = draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
    return name, {argument: draw(JSON) for argument in chosen}


SESSION = erp_sim.ErpSession(erp_sim.get_task("hotel_50", 0))


def _log_size(session) -> int:
    return session.db.execute(f"SELECT count(*) FROM {CHANGE_LOG}").fetchone()[0]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(calls())
def test_any_json_arguments_to_any_tool_get_an_answer_in_the_usual_shape(call):
    name, arguments = call
    before = _log_size(SESSION)
    response = SESSION.call(name, arguments)
    envelope = json.loads(response.text)
    assert {"SessionId", "Result", "Messages"} <= set(envelope)
    response.text.encode("utf-8")
    if response.is_error:
        assert envelope["Error"]["Code"] == response.error_code != "InternalError", response.result
        assert _log_size(SESSION) == before  # a refused call wrote nothing


ENV = gym.make("erp_sim/ExpenseItemization-v0")
ENV.reset(seed=0, options={"task_index": 0})


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(calls(), st.booleans())
def test_any_json_arguments_through_env_step(call, as_text):
    name, arguments = call
    action = {"name": name, "arguments": arguments}
    if as_text:
        try:
            action = json.dumps(action)
        except ValueError:  # integers too long for the standard library to write
            pass
    observation, reward, terminated, truncated, info = ENV.step(action)
    assert isinstance(observation, str) and reward in (0.0, 1.0)
    assert info["action"]["kind"] in ("tool", "invalid")
    if info["action"]["kind"] == "invalid":
        assert json.loads(observation)["Error"]["Code"] == "InvalidAction" and info["action"]["is_error"]
    elif info["action"]["is_error"]:
        assert json.loads(observation)["Error"]["Code"] == info["action"]["error_code"] != "InternalError"
    if terminated or truncated:
        ENV.reset(seed=0, options={"task_index": 0})
