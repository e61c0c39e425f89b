"""Spec strings: grammar, canonical round trips, clear errors, and docs that match the code."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from policy_support import RecordingAgent

from erp_sim.agents.policies import POLICIES, PRESETS, PolicySpecError, parse_policy, preset, wrap


@pytest.mark.parametrize("name", POLICIES)
def test_every_policy_parses_by_name_and_round_trips(name):
    parsed = parse_policy(name)
    assert [layer.name for layer in parsed.layers] == [name]
    canonical = parsed.spec
    assert parse_policy(canonical) == parsed
    assert parse_policy(canonical).spec == canonical
    assert wrap(RecordingAgent(), canonical).spec == canonical


@pytest.mark.parametrize("name", POLICIES)
def test_every_policy_documents_itself_and_its_parameters(name):
    cls = POLICIES[name]
    assert cls.__doc__ and len(cls.__doc__.split()) > 10
    for field_name, field in cls.Params.model_fields.items():
        assert field.description, f"{name}.{field_name} has no description"


def test_canonical_form_lists_every_parameter_in_order():
    assert parse_policy("last_n_summary").spec == "last_n_summary:n=5,w=3"
    assert parse_policy("acon_history").spec == "acon_history:t=4096,k=1,mode=accumulate"
    assert parse_policy("acon_observation").spec == "acon_observation:t=1024,recent=3"
    assert parse_policy("fifo").spec == "fifo:k=5"
    assert parse_policy("budget_eviction").spec == "budget_eviction:budget=30000,target=0.6,min_units=3"
    assert parse_policy("head_tail").spec == "head_tail:chars=800,tokens=0,keep_recent=1,tool_chars=,tool_tokens="
    assert parse_policy("working_memory_anchor").spec == "working_memory_anchor:at=start"
    assert parse_policy("clear_tool_uses").spec == (
        "clear_tool_uses:trigger=100000,keep=3,clear_at_least=0,exclude_tools=,clear_tool_inputs=false,"
        'placeholder="[cleared]"'
    )


def test_grammar_values_and_whitespace():
    parsed = parse_policy(
        " head_tail : chars = 400 , tool_chars=form_find_controls:2000;data_find_entities:0 + last_n:n=5 "
    )
    assert [layer.name for layer in parsed.layers] == ["head_tail", "last_n"]
    assert parsed.layers[0].params["tool_chars"] == {"form_find_controls": 2000, "data_find_entities": 0}
    assert parsed.spec == (
        "head_tail:chars=400,tokens=0,keep_recent=1,tool_chars=data_find_entities:0;form_find_controls:2000,tool_tokens="
        "+last_n:n=5"
    )
    clearing = parse_policy(
        'clear_tool_uses:exclude_tools=a;b,clear_tool_inputs=true,placeholder="[x, y+z=1; \\"q\\"]"'
    )
    params = clearing.layers[0].params
    assert params["exclude_tools"] == ["a", "b"] and params["clear_tool_inputs"] is True
    assert params["placeholder"] == '[x, y+z=1; "q"]'
    assert parse_policy(clearing.spec) == clearing


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_any_placeholder_text_round_trips(text):
    spec = parse_policy("clear_tool_uses:trigger=5")
    spec.layers[0].params["placeholder"] = text
    assert parse_policy(spec.spec).layers[0].params["placeholder"] == text


@pytest.mark.parametrize(
    "spec,message",
    [
        ("", "empty policy spec"),
        ("lastn", "unknown policy 'lastn' (did you mean 'last_n'?)"),
        ("nothing_like_it", "unknown policy 'nothing_like_it'; known: full, last_n"),
        ("last_n:m=3", "policy 'last_n' has no parameter 'm'; its parameters: n"),
        ("full:n=3", "policy 'full' has no parameter 'n'; its parameters: none"),
        ("last_n:n=-1", "last_n: n: Input should be greater than or equal to 0 (got '-1')"),
        ("last_n:n=five", "last_n: n: Input should be a valid integer"),
        ("last_n_summary:w=0", "last_n_summary: w: Value error, must be -1"),
        ("acon_history:mode=sometimes", "acon_history: mode: Input should be 'accumulate' or 'reset'"),
        ("budget_eviction:target=1.5", "budget_eviction: target: Input should be less than or equal to 1"),
        (
            "clear_tool_uses:clear_tool_inputs=maybe",
            "clear_tool_uses: clear_tool_inputs: Input should be a valid boolean",
        ),
        ("head_tail:tool_chars=x", "head_tail: tool_chars: expected name:value pairs"),
        ("head_tail:tool_chars=x:-5", "cap for tool 'x' must be >= 0"),
        ("last_n+", "empty layer"),
        ("last_n:n", "last_n: expected key=value, got 'n'"),
        ("last_n:n=1,n=2", "parameter 'n' given twice"),
        ('clear_tool_uses:placeholder="open', "unterminated quoted value"),
    ],
)
def test_bad_specs_fail_with_a_clear_message(spec, message):
    with pytest.raises(PolicySpecError) as error:
        parse_policy(spec)
    assert message in str(error.value)


def test_presets():
    assert preset("c4").policy == "last_n_summary:n=5,w=3"
    assert PRESETS["C1"].user_model == "none" and PRESETS["C1"].policy == PRESETS["C2"].policy == "full"
    with pytest.raises(ValueError, match="unknown preset 'C9'"):
        preset("C9")


def test_package_table_lists_every_policy_with_its_defaults():
    import erp_sim.agents.policies as package

    rows = {line.split("|")[1].strip(): line for line in package.__doc__.splitlines() if line.startswith("| ")}
    for name, cls in POLICIES.items():
        assert name in rows, f"{name} missing from the table in agents/policies/__init__.py"
        for field in cls.Params.model_fields:
            assert f"{field}=" in rows[name] or field == "placeholder", f"{name}.{field} missing from the table"
        for item in parse_policy(name).spec.partition(":")[2].split(","):
            if item and not item.startswith("placeholder"):
                assert item in rows[name].replace(", ", ","), f"{name}: default {item} differs from the table"
