"""OData-like data access to a workflow's tables: the engine behind the ``data_*`` tools.

Entity sets are read-only views (one SELECT each, PascalCase column aliases) over the tables of the
session's workflow (its ``DataCatalog``: ``erp_sim.workflows.Workflow.data``); property types and
descriptions come from the workflow's table classes (read from their compiled schema).
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

Writes (``create_entities`` ...) run each record through its entity set's write, which checks the
workflow's business rules as the forms do, and each call is one all-or-nothing transaction.

The package, in parts: the entity sets and catalog (``entities``), ``$filter`` (``filter``), query options
(``query``), reads (``reads``), writes (``writes``); the SQL tool runs in ``erp_sim.database.sql_sandbox``.
What the data tools call is importable from here.
"""

from erp_sim.odata.entities import entity_metadata, find_entity_sets
from erp_sim.odata.reads import find_entities
from erp_sim.odata.writes import create_entities, delete_entities, update_entities

__all__ = [
    "create_entities",
    "delete_entities",
    "entity_metadata",
    "find_entities",
    "find_entity_sets",
    "update_entities",
]
