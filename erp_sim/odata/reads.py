"""Reading OData records: one parameterized SELECT per query, money as two-place text."""

from __future__ import annotations

import sqlite3
from decimal import Decimal
from typing import Any

from erp_sim.errors import NotFoundError, ValidationError
from erp_sim.json_values import JsonObject
from erp_sim.money import money_text
from erp_sim.odata.entities import BOOLEAN, DECIMAL, DataCatalog, EntitySet, Property
from erp_sim.odata.query import Query, parse_query


# --- reading records ---------------------------------------------------------------------------
def _order_sql(query: Query) -> str:
    terms = []
    for prop, descending in query.orderby or []:
        column = f'CAST("{prop.name}" AS REAL)' if prop.type == DECIMAL else f'"{prop.name}"'
        terms.append(f"{column} {'DESC' if descending else 'ASC'}")
    return ", ".join(terms + ['"RecId" ASC'])


def _record(entity: EntitySet, row: sqlite3.Row, props: list[Property] | tuple[Property, ...]) -> dict[str, Any]:
    record = {}
    for prop in props:
        value = row[prop.name]
        if value is not None and prop.type == DECIMAL:
            value = money_text(Decimal(value))
        elif value is not None and prop.type == BOOLEAN:
            value = bool(value)
        record[prop.name] = value
    return record


def _fetch(db: sqlite3.Connection, query: Query, params: list[object]) -> JsonObject:
    entity = query.entity
    conditions, params = [], list(params)
    if query.key is not None:
        conditions.append('"RecId" = ?')
        params.insert(0, query.key)
    if query.filter:
        conditions.append(query.filter)
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    base = f"SELECT * FROM ({entity.select_sql}){where}"
    try:
        rows = db.execute(
            f"{base} ORDER BY {_order_sql(query)} LIMIT ? OFFSET ?", params + [query.top + 1, query.skip]
        ).fetchall()
        total = db.execute(f"SELECT COUNT(*) FROM ({base})", params).fetchone()[0] if query.count else None
    except sqlite3.OperationalError as exc:  # e.g. a filter too long for SQLite's expression depth
        raise ValidationError(f"$filter: the query could not run ({exc}); simplify the filter.") from None
    if query.key is not None and not rows and not query.filter and query.skip == 0:
        raise NotFoundError(f"{entity.name}({query.key}) does not exist: no record with RecId {query.key}.")
    payload: dict[str, Any] = {"EntitySet": entity.name}
    if total is not None:
        payload["@odata.count"] = total
    payload["value"] = [_record(entity, row, query.select or entity.properties) for row in rows[: query.top]]
    if query.top and len(rows) > query.top:
        payload["NextSkip"] = query.skip + query.top
    return payload


def find_entities(
    catalog: DataCatalog, db: sqlite3.Connection, odata_path: str, query_options: str | None
) -> JsonObject:
    """Query an entity set. Returns {"EntitySet", ["@odata.count"], "value", ["NextSkip"]}.

    ``NextSkip`` is present when more records match: pass it as $skip to get the next page.
    """
    query, parser = parse_query(catalog, odata_path, query_options)
    return _fetch(db, query, parser.params if parser else [])


def records_by_id(db: sqlite3.Connection, entity: EntitySet, ids: list[int]) -> list[JsonObject]:
    """Records in the order of ``ids``, as find_entities shows them."""
    placeholders = ", ".join("?" * len(ids))
    rows = db.execute(f'SELECT * FROM ({entity.select_sql}) WHERE "RecId" IN ({placeholders})', ids).fetchall()
    by_id = {row["RecId"]: _record(entity, row, entity.properties) for row in rows}
    return [by_id[i] for i in ids if i in by_id]
