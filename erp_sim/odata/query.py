"""An OData path and query options (``$filter $select $orderby $top $skip $count``) parsed into a ``Query``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from erp_sim.errors import ValidationError
from erp_sim.odata.entities import DataCatalog, EntitySet, Property, entity_set
from erp_sim.odata.filter import FilterParser

DEFAULT_TOP = 50
MAX_TOP = 200
MAX_OPTIONS_CHARS = 4000


# --- query options -------------------------------------------------------------------------------
QUERY_OPTIONS = ("$filter", "$select", "$orderby", "$top", "$skip", "$count")
_PATH = re.compile(r"^/?(?:data/)?(?P<set>[A-Za-z_]\w*)(?:\((?P<key>[^()]*)\))?/?(?:\?(?P<query>.*))?$", re.DOTALL)
_KEY = re.compile(r"^\s*(?:RecId\s*=\s*)?(?P<id>\d{1,18})\s*$", re.IGNORECASE | re.ASCII)


@dataclass
class Query:
    entity: EntitySet
    key: int | None = None
    filter: str | None = None
    select: list[Property] | None = None
    orderby: list[tuple[Property, bool]] | None = None  # (property, descending)
    top: int = DEFAULT_TOP
    skip: int = 0
    count: bool = False


def _split_options(text: str) -> list[str]:
    """Split on '&' outside single-quoted strings."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    for char in text:
        if char == "'":
            quoted = not quoted
        if char == "&" and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [p for p in (part.strip() for part in parts) if p]


def _parse_options(text: str, example: str) -> dict[str, str]:
    text = text.strip().lstrip("?")
    if len(text) > MAX_OPTIONS_CHARS:
        raise ValidationError(f"odataQueryOptions: {len(text)} characters; at most {MAX_OPTIONS_CHARS} are accepted.")
    encoded = bool(re.search(r"%[0-9A-Fa-f]{2}", text)) and not re.search(r"\s", text)
    options: dict[str, str] = {}
    for part in _split_options(text):
        if encoded:
            part = unquote(part.replace("+", " "))
        name, sep, value = part.partition("=")
        name = name.strip().lower()
        name = name if name.startswith("$") else "$" + name
        if name not in QUERY_OPTIONS:
            raise ValidationError(
                f"odataQueryOptions: unknown query option {part.partition('=')[0].strip()[:40]!r}. "
                f"Supported: {', '.join(QUERY_OPTIONS)}, joined with '&', e.g. {example}."
            )
        if not sep:
            raise ValidationError(f"odataQueryOptions: {name} has no value; write {name}=value.")
        if name in options:
            raise ValidationError(f"odataQueryOptions: {name} is given twice.")
        options[name] = value.strip()
    return options


def parse_query(catalog: DataCatalog, odata_path: str, query_options: str | None) -> tuple[Query, FilterParser | None]:
    """The query an OData path and its options ask for, and the filter's parser (which holds its parameters)."""
    match = _PATH.match(odata_path.strip())
    if match is None:
        example = catalog.path_example
        raise ValidationError(
            f"odataPath: {odata_path[:100]!r} is not an entity set path. Use {example}, "
            f"{example}(1234) for one record by RecId, or {example}?$filter=..."
        )
    query = Query(entity_set(catalog, match["set"]))
    if match["key"] is not None:
        key = _KEY.match(match["key"])
        if key is None:
            raise ValidationError(f"odataPath: the key {match['key']!r} is not a RecId; use {query.entity.name}(1234).")
        query.key = int(key["id"])
    options = _parse_options(match["query"] or "", catalog.options_example)
    for name, value in _parse_options(query_options or "", catalog.options_example).items():
        if name in options:
            raise ValidationError(f"{name} is given both in odataPath and in odataQueryOptions; give it once.")
        options[name] = value
    parser = None
    if "$filter" in options:
        parser = FilterParser(catalog, query.entity, options["$filter"])
        query.filter = parser.parse()
    if "$select" in options:
        query.select = _parse_select(query.entity, options["$select"])
    if "$orderby" in options:
        query.orderby = _parse_orderby(query.entity, options["$orderby"])
    query.top = _parse_int(options, "$top", DEFAULT_TOP, MAX_TOP)
    query.skip = _parse_int(options, "$skip", 0, None)
    if "$count" in options:
        value = options["$count"].lower()
        if value not in ("true", "false"):
            raise ValidationError(f"$count: expected true or false, got {options['$count']!r}.")
        query.count = value == "true"
    return query, parser


def _parse_select(entity: EntitySet, text: str) -> list[Property] | None:
    names = [n.strip() for n in text.split(",")]
    if any(not n for n in names):
        raise ValidationError(
            f"$select: expected comma-separated property names, got {text!r}. Properties: {entity.property_list}."
        )
    if names == ["*"]:
        return None
    selected: list[Property] = []
    for name in names:
        prop = entity.find_property(name, "$select")
        if prop not in selected:
            selected.append(prop)
    return selected


def _parse_orderby(entity: EntitySet, text: str) -> list[tuple[Property, bool]]:
    order = []
    for part in text.split(","):
        words = part.split()
        if not words or len(words) > 2 or (len(words) == 2 and words[1].lower() not in ("asc", "desc")):
            raise ValidationError(
                f"$orderby: expected 'Property [asc|desc]' items separated by commas, got {part.strip()!r}."
            )
        order.append((entity.find_property(words[0], "$orderby"), len(words) == 2 and words[1].lower() == "desc"))
    return order


def _parse_int(options: dict[str, str], name: str, default: int, maximum: int | None) -> int:
    if name not in options:
        return default
    text = options[name]
    if not re.fullmatch(r"\d{1,9}", text, re.ASCII):
        raise ValidationError(f"{name}: expected a whole number of 0 or more, got {text!r}.")
    value = int(text)
    if maximum is not None and value > maximum:
        raise ValidationError(f"{name}: at most {maximum} records per call; page with $skip.")
    return value
