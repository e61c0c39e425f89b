"""OData-like data access to the expense tables: the engine behind the ``data_*`` tools.

Entity sets are read-only views (one SELECT each, PascalCase column aliases) over the
tables of ``erp_sim.models``; property types and descriptions come from those classes (read from
their compiled copy, ``erp_sim.schema``).
Queries support the OData subset agents use: ``$filter`` (eq ne gt ge lt le in; and, or,
not, parentheses; contains, startswith, endswith; tolower/toupper as no-ops), ``$select``,
``$orderby``, ``$top`` (default 50, at most 200), ``$skip`` and ``$count``. Filters compile
to parameterized SQL: values never enter the SQL text, and property names come from a
fixed whitelist.

D365 behaviour we copy: string comparisons are case-insensitive (SQL Server collation);
a ``null`` property is never equal to a value and always "ne" it. Our choices: money
properties compare numerically (to the cent) and are returned as two-place text; date
literals may be unquoted (``2026-03-14``) and are compared by day; percent-encoded
options (``%20``, ``%27``) are decoded when the text holds no spaces.

Writes (``create_entities`` ...) go through ``erp_sim.ledger``, so they obey the same
business rules as the forms, and each call is one all-or-nothing transaction.
"""

# The OData tools' module, in parts: the entity catalogue (odata_entities), $filter (odata_filter),
# query options (odata_query), reads (odata_reads), writes (odata_writes); the SQL tool's runner
# lives with its sandbox (sql_sandbox). The names callers use stay importable from here.
from erp_sim.odata_entities import ENTITY_SETS, EntitySet, Property, entity_metadata, find_entity_sets
from erp_sim.odata_filter import MAX_FILTER_DEPTH, MAX_LITERAL_DIGITS, FilterParser
from erp_sim.odata_query import DEFAULT_TOP, MAX_OPTIONS_CHARS, MAX_TOP, QUERY_OPTIONS, Query
from erp_sim.odata_reads import find_entities
from erp_sim.odata_writes import MAX_BATCH, create_entities, delete_entities, update_entities
from erp_sim.sql_sandbox import SQL_CELL_CHARS, SQL_OUTPUT_CHARS, run_sql

__all__ = [
    "DEFAULT_TOP",
    "ENTITY_SETS",
    "MAX_BATCH",
    "MAX_FILTER_DEPTH",
    "MAX_LITERAL_DIGITS",
    "MAX_OPTIONS_CHARS",
    "MAX_TOP",
    "QUERY_OPTIONS",
    "SQL_CELL_CHARS",
    "SQL_OUTPUT_CHARS",
    "EntitySet",
    "FilterParser",
    "Property",
    "Query",
    "create_entities",
    "delete_entities",
    "entity_metadata",
    "find_entities",
    "find_entity_sets",
    "run_sql",
    "update_entities",
]
