"""A workflow's tables as the simulator reads them at run time: from its compiled ``schema.json``.

A workflow's SQLModel classes (e.g. ``erp_sim.workflows.itemization.tables``) are its schema's source;
``erp_sim.database.compile_schema.schema_text`` compiles them with SQLAlchemy into that file
(``python -m erp_sim.workflows.itemization.tables > erp_sim/workflows/itemization/schema.json`` rewrites
it, and a test checks it is current). Reading the compiled copy keeps SQLAlchemy and sqlmodel out of
every run: importing them was about 0.25 s of the first ``reset``, which needs only the DDL, the column
names and their descriptions.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from functools import cache
from pathlib import Path


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # the model field's annotation: int, str, bool, int | None, str | None
    description: str


@dataclass(frozen=True)
class Schema:
    """Table name -> column name -> column, both in the models' order; the CREATE TABLE and CREATE INDEX
    statements."""

    columns: dict[str, dict[str, Column]]
    ddl: tuple[str, ...]

    @property
    def tables(self) -> tuple[str, ...]:
        return tuple(self.columns)


@cache
def load_schema(path: Path) -> Schema:
    """The schema compiled into ``path``, read once."""
    schema = json.loads(path.read_text(encoding="utf-8"))
    columns = {t["name"]: {c["name"]: Column(**c) for c in t["columns"]} for t in schema["tables"]}
    return Schema(columns, tuple(schema["ddl"]))


# The change log (``erp_sim.database``'s triggers fill it): not one of a schema's tables, so no dump, hash,
# entity set or agent's SQL reads it.
CHANGE_LOG = "erp_changed_rows"


def task_tables(conn: sqlite3.Connection) -> list[str]:
    """A task database's own tables, in the order its schema created them: its workflow's tables, without
    SQLite's internal ones and the change log."""
    rows = conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY rowid")
    return [name for (name,) in rows if not name.lower().startswith("sqlite_") and name != CHANGE_LOG]
