"""OData entity sets: read-only views over a workflow's tables, their properties and descriptions
(``find_entity_sets``, ``entity_metadata``), and the ``DataCatalog`` a workflow gives the data tools.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from erp_sim.errors import NotFoundError, ValidationError
from erp_sim.json_values import JsonObject

if TYPE_CHECKING:
    from erp_sim.database.schema import Column

INT, STRING, DECIMAL, DATE, BOOLEAN = "Edm.Int64", "Edm.String", "Edm.Decimal", "Edm.Date", "Edm.Boolean"

#: A write of one record of a batch (the raw entity the agent sent) -> the RecId it created or changed.
RecordWrite = Callable[[sqlite3.Connection, "EntitySet", object], int]
#: The deletion of one record by RecId.
RecordDelete = Callable[[sqlite3.Connection, int], None]


@dataclass(frozen=True)
class Property:
    name: str
    sql: str  # expression in the entity set's SELECT
    type: str
    description: str
    writable: bool = False


@dataclass(frozen=True)
class EntitySet:
    """An entity set: one SELECT over the workflow's tables, and the writes it takes (none: read-only).

    The writes check the workflow's business rules (they go through its rule module, as the forms do)."""

    name: str
    label: str
    table: str
    source: str  # FROM clause of the SELECT
    properties: tuple[Property, ...]
    rules: tuple[str, ...]
    create: RecordWrite | None = None
    update: RecordWrite | None = None
    delete: RecordDelete | None = None

    @property
    def writable(self) -> bool:
        return self.create is not None or self.update is not None or self.delete is not None

    @property
    def select_sql(self) -> str:
        columns = ", ".join(f'{p.sql} AS "{p.name}"' for p in self.properties)
        return f"SELECT {columns} FROM {self.source}"

    def find_property(self, name: str, where: str) -> Property:
        """The property called ``name`` (case-insensitive), or a ValidationError listing the valid ones."""
        for prop in self.properties:
            if prop.name.lower() == name.lower():
                return prop
        raise ValidationError(f"{where}: {self.name} has no property {name!r}. Properties: {self.property_list}.")

    @property
    def property_list(self) -> str:
        return ", ".join(p.name for p in self.properties)


@dataclass(frozen=True)
class DataCatalog:
    """A workflow's entity sets, and what the data tools' messages show of them: examples of a path, a
    filter, a string literal and query options, and where a refused write can go instead."""

    entity_sets: Mapping[str, EntitySet]
    path_example: str  # an entity set name: "Use X, X(1234) for one record by RecId, or X?$filter=..."
    filter_example: str  # a $filter expression
    string_example: str  # a quoted string literal of a filter
    options_example: str  # query options joined with '&'
    create_hint: str  # after "Records of X cannot be created through the data API."
    update_hint: str  # after "X is read-only; records cannot be updated."
    delete_hint: str  # after "Records of X cannot be deleted through the data API."


def property_type(annotation: str, description: str, column: str) -> str:
    """A column's OData type from its model field: the annotation (bool, int, str), money by its description
    (``Decimal text``), dates by their column name (``*_date``)."""
    if "bool" in annotation:
        return BOOLEAN
    if "int" in annotation:
        return INT
    if "Decimal text" in description:
        return DECIMAL
    if column.endswith("_date"):
        return DATE
    return STRING


def schema_property(
    columns: Mapping[str, Mapping[str, Column]],
    name: str,
    table: str,
    field: str,
    sql: str,
    *,
    writable: bool = False,
    note: str = "",
) -> Property:
    """A property over the column ``table.field`` of a workflow's compiled schema (``columns``): its OData type
    and description come from the table class's field, ``note`` is added to the description."""
    column = columns[table][field]
    kind = property_type(column.type, column.description, field)
    return Property(name, sql, kind, " ".join(filter(None, [column.description, note])), writable)


def entity_sets_by_name(*sets: EntitySet) -> dict[str, EntitySet]:
    """A workflow's entity sets as ``DataCatalog.entity_sets`` holds them: by name, in the order given."""
    return {entity.name: entity for entity in sets}


SchemaField = tuple[str, str] | tuple[str, str, str]  # (property, column) or (property, column, note)


def schema_properties(
    columns: Mapping[str, Mapping[str, Column]],
    table: str,
    alias: str,
    *fields: SchemaField,
    writable: tuple[str, ...] = (),
) -> tuple[Property, ...]:
    """Properties over the columns ``alias.<column>`` of ``table`` (``schema_property`` each), in the order given;
    ``writable`` names those the data tools may write."""
    return tuple(
        schema_property(
            columns, name, table, column, f"{alias}.{column}", writable=name in writable, note=rest[0] if rest else ""
        )
        for name, column, *rest in fields
    )


def entity_set(catalog: DataCatalog, name: object) -> EntitySet:
    """The entity set called ``name`` (case-insensitive), or a NotFoundError listing them."""
    text = str(name).strip()
    for entity in catalog.entity_sets.values():
        if entity.name.lower() == text.lower():
            return entity
    raise NotFoundError(
        f"Entity set {text!r} does not exist. Entity sets: {', '.join(catalog.entity_sets)}. "
        "Use data_find_entity_type to search."
    )


def find_entity_sets(catalog: DataCatalog, search: str) -> list[JsonObject]:
    """Entity sets whose name, label or table name contain every word of ``search``."""
    words = search.lower().split()
    return [
        {"Name": e.name, "Label": e.label, "Table": e.table, "IsReadOnly": not e.writable}
        for e in catalog.entity_sets.values()
        if all(w in f"{e.name} {e.label} {e.table}".lower() for w in words)
    ]


def entity_metadata(catalog: DataCatalog, name: str) -> JsonObject:
    entity = entity_set(catalog, name)
    return {
        "Name": entity.name,
        "Label": entity.label,
        "Key": "RecId",
        "Properties": [
            {"Name": p.name, "Type": p.type, "Description": p.description, "IsReadOnly": not p.writable}
            for p in entity.properties
        ],
        "Rules": list(entity.rules),
    }
