"""The tables' schema as the simulator reads it at run time: from ``data/schema.json``, not the models.

``erp_sim.models`` (SQLModel classes) is the schema's source; ``schema_text()`` there compiles it with
SQLAlchemy into this file (``python -m erp_sim.models > erp_sim/data/schema.json`` rewrites it, and a
test checks it is current).
Reading the compiled copy keeps SQLAlchemy and sqlmodel out of every run: importing them was about
0.25 s of the first ``reset``, which needs only the DDL, the column names and their descriptions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

SCHEMA_FILE = Path(__file__).with_name("data") / "schema.json"


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # the model field's annotation: int, str, bool, int | None, str | None
    description: str


def _load() -> tuple[dict[str, dict[str, Column]], tuple[str, ...]]:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    tables = {t["name"]: {c["name"]: Column(**c) for c in t["columns"]} for t in schema["tables"]}
    return tables, tuple(schema["ddl"])


# table name -> column name -> column, both in the models' order; the CREATE TABLE and CREATE INDEX statements
TABLE_COLUMNS, SCHEMA_DDL = _load()
TABLE_NAMES: list[str] = list(TABLE_COLUMNS)
