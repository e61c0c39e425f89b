"""Compile a workflow's SQLModel classes into the schema JSON the simulator reads (``erp_sim.database.schema``).

Imported only to write or check a workflow's ``schema.json`` (``python -m <workflow package>.tables``,
and a test): it loads SQLAlchemy, which no episode needs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import String, Table
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.schema import CreateIndex, CreateTable
from sqlmodel import Field, SQLModel


class Record(SQLModel):
    """What every table of ours starts with: its RecId, the primary key (a table class's own fields follow it)."""

    id: int = Field(primary_key=True, description="Record id.")


def money_field(description: str) -> Any:  # what sqlmodel's Field gives: Any, so it fits every column type
    """An amount column: TEXT ("1234.50", never a binary float), described as Decimal text (which is how the
    data tools' metadata types it, ``erp_sim.odata.entities.property_type``)."""
    return Field(sa_type=String(16), description=description + " Decimal text with two places.")


def table_name(model: type[SQLModel]) -> str:
    """The model's table name (sqlmodel types ``__tablename__`` as a name or a function; ours are names)."""
    return cast(str, model.__tablename__)


def sql_table(model: type[SQLModel]) -> Table:
    """The model's SQLAlchemy table, from the metadata it registered in (sqlmodel's types have no ``__table__``)."""
    return SQLModel.metadata.tables[table_name(model)]


def schema_text(tables: Sequence[type[SQLModel]]) -> str:
    """A ``schema.json``: every table's columns (name, annotation, description) in table order, and the
    DDL SQLAlchemy compiles for SQLite (tables in ``tables`` order, then the indexes sorted)."""
    dialect = sqlite_dialect.dialect()
    described = [
        {
            "name": table_name(model),
            "columns": [
                {
                    "name": c.name,
                    "type": _annotation(model.model_fields[c.name].annotation),
                    "description": model.model_fields[c.name].description or "",
                }
                for c in sql_table(model).columns
            ],
        }
        for model in tables
    ]
    creates = [str(CreateTable(sql_table(model)).compile(dialect=dialect)) for model in tables]
    indexes = [
        str(CreateIndex(index).compile(dialect=dialect)) for model in tables for index in sql_table(model).indexes
    ]
    return json.dumps({"tables": described, "ddl": creates + sorted(indexes)}, indent=1) + "\n"


def _annotation(annotation: Any) -> str:
    return getattr(annotation, "__name__", str(annotation))  # int, str, bool; int | None prints as itself
