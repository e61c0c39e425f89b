"""Fixtures are generated from seeds: regenerating them reproduces the checked-in files byte for byte."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

from erp_sim import load_task_set
from erp_sim.workflows.itemization.catalog import CATEGORIES, EXPENSE_TYPES

ROOT = Path(__file__).resolve().parents[2]


def test_generator_reproduces_the_checked_in_fixtures(tmp_path):
    script = ROOT / "scripts" / "generate_fixtures.py"
    subprocess.run([sys.executable, str(script), "--out", str(tmp_path)], check=True, capture_output=True)
    generated = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert {"hotel_50.jsonl", "expense_types.jsonl"} <= {str(p) for p in generated}
    for name in generated:
        assert (tmp_path / name).read_bytes() == (ROOT / "fixtures" / name).read_bytes(), name


def test_hotel_50_spans_4_to_22_items_over_three_difficulties():
    tasks = load_task_set("hotel_50")
    counts = [t.item_count for t in tasks]
    assert len(tasks) == 50 and min(counts) == 4 and max(counts) == 22 and len(set(counts)) == 19
    assert set(Counter(t.difficulty for t in tasks)) == {"easy", "medium", "hard"}
    assert len({t.task_id for t in tasks}) == 50


def test_five_expense_types_in_three_families_twenty_each():
    tasks = load_task_set("expense_types")
    assert Counter(t.expense_type for t in tasks) == dict.fromkeys(EXPENSE_TYPES, 20)
    assert {t.family for t in tasks} == {"lodging", "transport", "itemized_bill"}
    for task in tasks:
        assert 4 <= task.item_count <= 22
        assert (
            sum(float(i.amount) for i in task.receipt_items) == float(task.header_amount)
            or abs(sum(float(i.amount) for i in task.receipt_items) - float(task.header_amount)) < 1e-6
        )
        assert all(i.subcategory in CATEGORIES[task.expense_type].subcategories for i in task.receipt_items)


def test_world_names_are_the_pinned_fakers_word_lists():
    """The simulator reads Faker's name lists from a copy, so a reset never imports Faker."""
    import json

    from faker.providers.company.en_US import Provider as CompanyNames
    from faker.providers.person.en_US import Provider as PersonNames

    from erp_sim.workflows.itemization.world import WORLD_NAMES_FILE

    names = json.loads(WORLD_NAMES_FILE.read_text(encoding="utf-8"))
    assert names["last_names"] == sorted(PersonNames.last_names)
    assert names["company_suffixes"] == list(CompanyNames.company_suffixes)


def test_the_compiled_schema_is_the_models():
    """The simulator reads DDL, columns and descriptions from schema.json; the SQLModel classes are its source."""
    from erp_sim.database.compile_schema import schema_text, sql_table, table_name
    from erp_sim.database.schema import load_schema
    from erp_sim.workflows.itemization import SCHEMA_FILE
    from erp_sim.workflows.itemization.tables import TABLES

    TABLE_COLUMNS = load_schema(SCHEMA_FILE).columns
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(TABLES), (
        "stale: python -m erp_sim.workflows.itemization.tables > erp_sim/workflows/itemization/schema.json"
    )
    assert list(TABLE_COLUMNS) == [table_name(model) for model in TABLES]
    for model in TABLES:
        columns = TABLE_COLUMNS[table_name(model)]
        assert list(columns) == [c.name for c in sql_table(model).columns]
        assert [c.description for c in columns.values()] == [f.description for f in model.model_fields.values()]
