"""OData writes (``create_entities``, ``update_entities``, ``delete_entities``): batches of records, each
written by its entity set's own write (``EntitySet.create``, ``update``, ``delete``), which checks the
workflow's business rules as the forms do; each call is one all-or-nothing transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from erp_sim.database import transaction
from erp_sim.errors import BusinessRuleError, ErpError, ValidationError
from erp_sim.json_values import JsonObject, whole_number
from erp_sim.odata.entities import DataCatalog, EntitySet, RecordWrite, entity_set
from erp_sim.odata.reads import records_by_id

MAX_BATCH = 200


def _batch(items: object, name: str) -> list[object]:
    if not isinstance(items, list) or not items:
        raise ValidationError(f"{name}: expected a non-empty list.")
    if len(items) > MAX_BATCH:
        raise ValidationError(f"{name}: {len(items)} items; at most {MAX_BATCH} per call.")
    return items


def record_properties(entity: EntitySet, raw: object, allowed: list[str], purpose: str) -> dict[str, object]:
    """``raw``'s properties under their canonical names; unknown or non-writable ones are refused by name."""
    if not isinstance(raw, dict):
        raise ValidationError(f"Expected an object of property -> value, got {type(raw).__name__}.")
    known = {p.name.lower(): p.name for p in entity.properties}
    values: dict[str, object] = {}
    unknown, refused = [], []
    for name, value in raw.items():
        canonical = known.get(str(name).lower())
        if canonical is None:
            unknown.append(str(name))
        elif canonical not in allowed:
            refused.append(canonical)
        elif canonical in values:
            raise ValidationError(f"Property {canonical} is given twice.")
        else:
            values[canonical] = value
    if unknown:
        raise ValidationError(
            f"Unknown propert{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)} "
            f"of {entity.name}. {purpose} takes: {', '.join(allowed)}."
        )
    if refused:
        raise ValidationError(f"{', '.join(refused)} cannot be set here. {purpose} takes: {', '.join(allowed)}.")
    return values


def record_id(value: object, where: str) -> int:
    number = whole_number(value)
    if number is None:
        raise ValidationError(f"{where}: expected a RecId (a whole number), got {value!r}.")
    return number


@contextmanager
def _batch_item(label: str, count: int) -> Iterator[None]:
    """In a batch of several items, an error names the item (``entities[2]``) and says nothing was written."""
    try:
        yield
    except ErpError as exc:
        if count == 1:
            raise
        raise type(exc)(f"{label}: {exc} Nothing was written; fix this item and send the whole batch again.") from None


def _write_batch(
    db: sqlite3.Connection, entity: EntitySet, entities: Sequence[Mapping[str, object]], write: RecordWrite
) -> list[int]:
    """``write`` each record in one transaction; the RecIds written, in batch order."""
    _batch(entities, "entities")
    written: list[int] = []
    with transaction(db):
        for index, raw in enumerate(entities):
            with _batch_item(f"entities[{index}]", len(entities)):
                written.append(write(db, entity, raw))
    return written


def create_entities(
    catalog: DataCatalog, db: sqlite3.Connection, name: str, entities: Sequence[Mapping[str, object]]
) -> list[JsonObject]:
    """Create records, all or nothing. Returns the created records."""
    entity = entity_set(catalog, name)
    if entity.create is None:
        raise BusinessRuleError(
            f"Records of {entity.name} cannot be created through the data API. {catalog.create_hint}"
        )
    return records_by_id(db, entity, _write_batch(db, entity, entities, entity.create))


def update_entities(
    catalog: DataCatalog, db: sqlite3.Connection, name: str, entities: Sequence[Mapping[str, object]]
) -> list[JsonObject]:
    """Update records by their keys, all or nothing. Returns the updated records."""
    entity = entity_set(catalog, name)
    if entity.update is None:
        raise BusinessRuleError(f"{entity.name} is read-only; records cannot be updated. {catalog.update_hint}")
    updated = _write_batch(db, entity, entities, entity.update)
    return records_by_id(db, entity, list(dict.fromkeys(updated)))


def delete_entities(catalog: DataCatalog, db: sqlite3.Connection, name: str, keys: list[int]) -> None:
    """Delete records by RecId, all or nothing."""
    entity = entity_set(catalog, name)
    if entity.delete is None:
        raise BusinessRuleError(
            f"Records of {entity.name} cannot be deleted through the data API. {catalog.delete_hint}"
        )
    ids = [record_id(key, f"keys[{i}]") for i, key in enumerate(_batch(keys, "keys"))]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ValidationError(f"keys: RecId {', '.join(map(str, repeated))} is listed more than once.")
    with transaction(db):
        for index, line_id in enumerate(ids):
            with _batch_item(f"keys[{index}]", len(ids)):
                entity.delete(db, line_id)
