"""The scripted agent's shortcuts give exactly what the plain code they replace gives: the call id's JSON,
the form index's look-ups (one walk instead of one per look-up, shared with the summarizer's reading of the same
response) and the itemization grid's comparison."""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from decimal import Decimal

from erp_sim import formstate
from erp_sim import response_keys as K
from erp_sim.agents.scripted import call_id
from erp_sim.form_index import PAGE_ROWS, form_index_of, index_form, row_index
from erp_sim.workflows.itemization.scripted import _consume, _row_charge, compare_rows


def test_call_id_is_the_sha1_of_the_sorted_json_it_always_was():
    rng = random.Random(7)
    mark = "\x00call-id-text\x00"  # what stands in for a long text while the rest is encoded
    long = '{"Name":"TrvItemization","Rows":[1]}' * 12  # over 256 characters: escaped by orjson when ASCII
    texts = ['{"Name":"TrvItemization","Rows":[1]}', 'Zürich \u2603 \\ "q" \n\t\x00 \x7f', "", "plain", mark]
    texts += [long, long + "\x7f", long + "\x1f\x00\b\f\r\n\t\\", long + "Zürich", long + mark, '"' + mark]
    for _ in range(1000):
        last = {
            key: rng.choice([*texts, None, 3, 2.5, True, [1, "a"], {"b": 1, "a": [2.0]}])
            for key in rng.sample(["role", "tool_call_id", "name", "content", "tool_calls", "zeta"], rng.randint(1, 6))
        }
        arguments = {
            key: rng.choice([*texts, 1, 1.0, None, {"y": 2, "x": [{"b": 1, "a": 0}]}, (3, "t"), Decimal("1.50")])
            for key in rng.sample(["controlName", "value", "rowNumber", "a", "Z"], rng.randint(0, 5))
        }
        transcript = [{"role": "user", "content": "x"}] * rng.randint(0, 3) + [last]
        name = rng.choice(["form_close_form", "form_set_control_values", "Zürich"])
        text = json.dumps([len(transcript), transcript[-1], name, arguments], sort_keys=True, default=str)
        assert call_id(transcript, name, arguments) == "call_" + hashlib.sha1(text.encode()).hexdigest()[:16]


def random_form(rng: random.Random, depth: int = 0) -> dict:
    """A Form tree with repeated names, containers, grids, non-dict entries and odd names."""
    names = ["ItemizationGrid", "ReceiptItemsGrid", "ItemizationRemaining", "Receipt_DocumentNumber", None, 3]
    form: dict = {}
    for kind in rng.sample([K.GRID, K.INPUT, *sorted(K.CONTAINER_TYPES), "Other"], 3):
        controls: list = []
        for _ in range(rng.randint(0, 3)):
            if rng.random() < 0.1:
                controls.append("not a control")
                continue
            control: dict = {K.NAME: rng.choice(names), K.VALUE: rng.choice(["12.50", "0.00", None, "R-7"])}
            if rng.random() < 0.2:
                del control[K.NAME]
            if kind == K.GRID:
                control[K.ROWS] = [
                    rng.choice([{K.ROW_NUMBER: str(n), K.VALUES: {"a": str(n)}}, {K.VALUES: None}, "row"])
                    for n in range(rng.randint(0, 3), rng.randint(3, 6))
                ]
                control[K.PAGINATION] = rng.choice([{K.HAS_NEXT_PAGE: True}, {}, None])
            if kind in K.CONTAINER_TYPES and depth < 2:
                control[K.CHILDREN] = random_form(rng, depth + 1)
            controls.append(control)
        form[kind] = controls
    return form


def test_the_form_index_finds_what_each_formstate_look_up_finds():
    rng = random.Random(11)
    names = ["ItemizationGrid", "ReceiptItemsGrid", "ItemizationRemaining", "Receipt_DocumentNumber", "Absent"]
    found = 0
    for _ in range(400):
        state = rng.choice([None, {}, {K.FORM: random_form(rng)}])
        index = index_form(state)
        for name in names:
            assert index.grids.get(name) is formstate.grids(state).get(name)
            assert index.grid_rows(name) == formstate.grid_rows(state, name)
            rows = formstate.grid_rows(state, name)
            assert index.first_row(name) == (row_index(rows[0].get(K.ROW_NUMBER)) if rows else 0)
            assert index.has_next_page(name) == formstate.has_next_page(state, name)
            assert index.control_value(name) == formstate.control_value(state, name)
            assert index.control_text(name) == formstate.control_text(state, name)
            found += index.control_value(name) is not None and index.grids.get(name) is not None
    assert found > 50  # names held by a grid and by a control at once were looked up too


def test_the_shared_form_index_is_the_index_of_that_very_state_object():
    rng = random.Random(12)
    states = [{K.FORM: random_form(rng)} for _ in range(50)]
    indexes = [form_index_of(state) for state in states]
    for state, index in zip(states, indexes):
        assert form_index_of(state) is index  # walked once for every reader of the object
        assert index == index_form(state)
        twin = json.loads(json.dumps(state))  # equal, another object: its own controls, not the first one's
        assert all(a is b for a, b in zip(form_index_of(twin).controls.values(), index_form(twin).controls.values()))
        if index.controls:
            assert not any(a is b for a, b in zip(form_index_of(twin).controls.values(), index.controls.values()))


def test_comparing_the_grid_with_the_charges_gives_what_the_counter_arithmetic_gave():
    rng = random.Random(13)
    pool = [("Room", f"2024-03-0{d}", f"{a}.00") for d in range(1, 4) for a in (100, 15, 7)]
    in_order = 0
    for _ in range(4000):
        charges = [rng.choice(pool) for _ in range(rng.choice([0, 2, 5, PAGE_ROWS + 2]))]
        if rng.random() < 0.5:  # a receipt without repeated charges (most are)
            charges = list(dict.fromkeys(charges))
        rows = []
        prefix = rng.random() < 0.5  # rows holding the receipt's first charges in order (the usual grid)
        for n in range(rng.randint(0, 8)):
            sub, day, amount = charges[n] if prefix and n < len(charges) else rng.choice(pool)
            values = {"TrvExpTrans_ExpSubCategory": sub, "TrvExpTrans_TransDate": day}
            if rng.random() < 0.8:  # else a blank (incomplete) row
                values["TrvExpTrans_AmountCurr"] = amount
            rows.append({K.VALUES: values})
        # the code compare_rows replaced
        complete = Counter(c for r in rows if (c := _row_charge(r.get(K.VALUES, {}))))
        missing = list((Counter(charges) - complete).elements())
        if len(charges) > PAGE_ROWS:
            unmatched = Counter(complete)
            missing = [c for c in charges if not _consume(unmatched, c)]
        extra = Counter(complete) - Counter(charges)
        row_charges, fast_missing, fast_extra = compare_rows(rows, charges)
        assert row_charges == [_row_charge(r[K.VALUES]) for r in rows]
        assert fast_missing == missing
        assert fast_extra == set(extra)
        held = [c for c in row_charges if c is not None]
        in_order += bool(held) and held == charges[: len(held)]
    assert in_order > 400  # the shortcut (rows holding the receipt's first charges in order) was taken often
