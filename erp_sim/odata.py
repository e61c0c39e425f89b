"""OData-like data access to the expense tables: the engine behind the ``data_*`` tools.

Entity sets are read-only views (one SELECT each, PascalCase column aliases) over the
tables of ``erp_sim.models``; property types and descriptions come from those classes.
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

from __future__ import annotations

import re
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Iterator
from urllib.parse import unquote

from erp_sim import ledger
from erp_sim.database import run_select
from erp_sim.errors import BusinessRuleError, ErpError, NotFoundError, ValidationError
from erp_sim.models import ExpenseCategory, ExpenseLine, ExpenseReport, ExpenseSubcategory, Receipt, ReceiptItem, Worker
from erp_sim.money import money_text

DEFAULT_TOP = 50
MAX_TOP = 200
MAX_OPTIONS_CHARS = 4000
MAX_FILTER_DEPTH = 40  # nested parentheses, not and tolower/toupper
MAX_LITERAL_DIGITS = 15  # numbers in $filter stay far below SQLite's 64-bit integers
MAX_BATCH = 200
SQL_CELL_CHARS = 2000
SQL_OUTPUT_CHARS = 100_000  # stays well under the server's 160,000-character response limit
# SQLite limits while an agent's query runs: with at most 201 rows fetched, they bound its memory.
SQL_MAX_VALUE_BYTES = 20_000
SQL_MAX_COLUMNS = 100

INT, STRING, DECIMAL, DATE, BOOLEAN = "Edm.Int64", "Edm.String", "Edm.Decimal", "Edm.Date", "Edm.Boolean"


# --- entity sets -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Property:
    name: str
    sql: str  # expression in the entity set's SELECT
    type: str
    description: str
    writable: bool = False


@dataclass(frozen=True)
class EntitySet:
    name: str
    label: str
    table: str
    source: str  # FROM clause of the SELECT
    properties: tuple[Property, ...]
    rules: tuple[str, ...]
    writable: bool = False

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


def _prop(name: str, model, field: str, sql: str, *, writable: bool = False, note: str = "") -> Property:
    """A property whose type and description come from the SQLModel field ``model.field``."""
    info = model.model_fields[field]
    annotation = str(info.annotation)
    if "bool" in annotation:
        kind = BOOLEAN
    elif "int" in annotation:
        kind = INT
    elif "Decimal text" in (info.description or ""):
        kind = DECIMAL
    elif field.endswith("_date"):
        kind = DATE
    else:
        kind = STRING
    return Property(name, sql, kind, " ".join(filter(None, [info.description, note])), writable)


_EDIT = "Editable on Draft reports."
ENTITY_SETS: dict[str, EntitySet] = {s.name: s for s in [
    EntitySet(
        "ExpenseReports", "Expense reports", "expense_report",
        "expense_report r JOIN worker w ON w.id = r.worker_id",
        (
            _prop("RecId", ExpenseReport, "id", "r.id"),
            _prop("ReportNumber", ExpenseReport, "report_number", "r.report_number"),
            _prop("WorkerRecId", ExpenseReport, "worker_id", "r.worker_id"),
            _prop("WorkerName", Worker, "name", "w.name", note="(The report's worker.)"),
            _prop("Purpose", ExpenseReport, "purpose", "r.purpose", writable=True, note=_EDIT),
            _prop("Destination", ExpenseReport, "destination", "r.destination"),
            _prop("Status", ExpenseReport, "status", "r.status"),
            _prop("CreatedDate", ExpenseReport, "created_date", "r.created_date"),
        ),
        (
            "Reports cannot be created or deleted through the data API.",
            "Only Purpose can be updated, and only on Draft reports: give RecId (or ReportNumber) and Purpose.",
            "Submit a report with the action SubmitExpenseReport; check it first with ValidateExpenseReport.",
        ),
        writable=True,
    ),
    EntitySet(
        "ExpenseLines", "Expense lines (including itemized lines)", "expense_line",
        "expense_line l JOIN expense_report r ON r.id = l.report_id",
        (
            _prop("RecId", ExpenseLine, "id", "l.id"),
            _prop("ReportNumber", ExpenseReport, "report_number", "r.report_number", note="(The line's report.)"),
            _prop("LineNumber", ExpenseLine, "line_number", "l.line_number", note="Itemized lines share their header's number."),
            _prop("Category", ExpenseLine, "category_id", "l.category_id"),
            _prop("Merchant", ExpenseLine, "merchant", "l.merchant", writable=True, note="Editable on header and default lines."),
            _prop("TransactionDate", ExpenseLine, "transaction_date", "l.transaction_date", writable=True,
                  note="Editable on itemized lines."),
            _prop("Amount", ExpenseLine, "amount", "l.amount", writable=True,
                  note="Editable on itemized and default lines (not on an itemized header)."),
            _prop("Currency", ExpenseLine, "currency", "l.currency"),
            _prop("LineType", ExpenseLine, "line_type", "l.line_type", writable=True,
                  note="Set on create only, and only to ItemizedLine."),
            _prop("ParentRecId", ExpenseLine, "parent_line_id", "l.parent_line_id", writable=True,
                  note="RecId of the header line; set on create only."),
            _prop("Subcategory", ExpenseLine, "subcategory", "l.subcategory", writable=True,
                  note="One of the header category's subcategories (see ExpenseSubcategories)."),
            _prop("Description", ExpenseLine, "description", "l.description", writable=True, note="Editable."),
        ),
        (
            "Create only itemized lines: each entity gives ParentRecId (the RecId of the expense line to itemize), "
            "Subcategory, TransactionDate (YYYY-MM-DD) and Amount (greater than 0.00, two decimals at most), "
            "optionally Description and LineType (which must be ItemizedLine).",
            "The header line's category must support itemization, and Subcategory must be one of that category's "
            "subcategories (entity set ExpenseSubcategories).",
            "Only lines of Draft reports can be created, updated or deleted.",
            "Update by RecId: itemized lines accept Subcategory, TransactionDate, Amount and Description; header and "
            "default lines accept Merchant, Description and Amount (not the Amount of a line that has itemized lines).",
            "Only itemized lines can be deleted (by RecId).",
            "Remaining = the header line's Amount minus the sum of its itemized lines' Amount; the itemization is "
            "complete at exactly 0.00. Over-itemization is accepted but leaves a negative remaining amount. "
            "The action GetItemizationStatus reports the figures.",
            "Each call is all or nothing: if one entity is invalid, nothing is written.",
        ),
        writable=True,
    ),
    EntitySet(
        "ExpenseCategories", "Expense categories (cost types)", "expense_category", "expense_category c",
        (
            _prop("RecId", ExpenseCategory, "id", "c.id"),
            _prop("CategoryId", ExpenseCategory, "category_id", "c.category_id"),
            _prop("Name", ExpenseCategory, "name", "c.name"),
            _prop("Itemize", ExpenseCategory, "itemize", "c.itemize"),
        ),
        ("Read-only.",),
    ),
    EntitySet(
        "ExpenseSubcategories", "Expense subcategories", "expense_subcategory", "expense_subcategory s",
        (
            _prop("RecId", ExpenseSubcategory, "id", "s.id"),
            _prop("CategoryId", ExpenseSubcategory, "category_id", "s.category_id"),
            _prop("Name", ExpenseSubcategory, "name", "s.name"),
        ),
        ("Read-only. An itemized line's Subcategory must be a Name of its category.",),
    ),
    EntitySet(
        "ExpenseReceipts", "Expense receipts (attached documents: folios, agreements, bills)", "receipt", "receipt d",
        (
            _prop("RecId", Receipt, "id", "d.id"),
            _prop("ExpenseLineRecId", Receipt, "expense_line_id", "d.expense_line_id"),
            _prop("DocumentNumber", Receipt, "document_number", "d.document_number"),
            _prop("Merchant", Receipt, "merchant", "d.merchant"),
            _prop("IssuedDate", Receipt, "issued_date", "d.issued_date"),
            _prop("Total", Receipt, "total", "d.total"),
            _prop("Currency", Receipt, "currency", "d.currency"),
        ),
        ("Read-only. The charges are in ExpenseReceiptItems (filter on ReceiptRecId).",),
    ),
    EntitySet(
        "ExpenseReceiptItems", "Expense receipt items (the charges printed on a receipt)", "receipt_item", "receipt_item i",
        (
            _prop("RecId", ReceiptItem, "id", "i.id"),
            _prop("ReceiptRecId", ReceiptItem, "receipt_id", "i.receipt_id"),
            _prop("ItemNumber", ReceiptItem, "item_number", "i.item_number"),
            _prop("ItemDate", ReceiptItem, "item_date", "i.item_date"),
            _prop("Description", ReceiptItem, "description", "i.description"),
            _prop("Amount", ReceiptItem, "amount", "i.amount"),
        ),
        ("Read-only. Receipts print the vendor's wording, not subcategory names.",),
    ),
    EntitySet(
        "Workers", "Workers (employees)", "worker", "worker k",
        (
            _prop("RecId", Worker, "id", "k.id"),
            _prop("PersonnelNumber", Worker, "personnel_number", "k.personnel_number"),
            _prop("Name", Worker, "name", "k.name"),
            _prop("Email", Worker, "email", "k.email"),
        ),
        ("Read-only.",),
    ),
]}


def _entity_set(name: object) -> EntitySet:
    text = str(name).strip()
    for entity in ENTITY_SETS.values():
        if entity.name.lower() == text.lower():
            return entity
    raise NotFoundError(f"Entity set {text!r} does not exist. Entity sets: {', '.join(ENTITY_SETS)}. "
                        "Use data_find_entity_type to search.")


def find_entity_sets(search: str) -> list[dict]:
    """Entity sets whose name, label or table name contain every word of ``search``."""
    words = search.lower().split()
    return [{"Name": e.name, "Label": e.label, "Table": e.table, "IsReadOnly": not e.writable}
            for e in ENTITY_SETS.values() if all(w in f"{e.name} {e.label} {e.table}".lower() for w in words)]


def entity_metadata(entity_set: str) -> dict:
    entity = _entity_set(entity_set)
    return {
        "Name": entity.name,
        "Label": entity.label,
        "Key": "RecId",
        "Properties": [{"Name": p.name, "Type": p.type, "Description": p.description, "IsReadOnly": not p.writable}
                       for p in entity.properties],
        "Rules": list(entity.rules),
    }


# --- $filter: tokens ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Token:
    kind: str  # str, date, num, ident, punct
    text: str
    pos: int  # 1-based character position in the $filter text

    @property
    def value(self) -> str:
        if self.kind == "str":
            return self.text[1:-1].replace("''", "'")
        if self.kind == "date":
            return self.text[:10]
        return self.text


_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<str>'(?:[^']|'')*')
  | (?P<date>\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})?)?)(?![\w.])
  | (?P<num>[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?![\w.])
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<punct>[(),])
""", re.VERBOSE)


def _tokenize(text: str) -> list[Token]:
    tokens, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            char = text[pos]
            if char == "'":
                raise ValidationError(f"$filter: unterminated string literal starting at character {pos + 1}; "
                                      "close it with ' and double any quote inside it ('O''Brien').")
            hint = " Quote strings with single quotes: 'Hotel'." if char == '"' else ""
            raise ValidationError(f"$filter: unexpected character {char!r} at character {pos + 1}.{hint}")
        if match.lastgroup != "ws":
            tokens.append(Token(match.lastgroup, match.group(), pos + 1))
        pos = match.end()
    return tokens


# --- $filter: parser ---------------------------------------------------------------------------
_COMPARISONS = {"eq": "=", "ne": "<>", "gt": ">", "ge": ">=", "lt": "<", "le": "<="}
_FLIPPED = {"eq": "eq", "ne": "ne", "gt": "lt", "ge": "le", "lt": "gt", "le": "ge"}
_FUNCTIONS = ("contains", "startswith", "endswith")
_NO_OP_FUNCTIONS = ("tolower", "toupper")  # comparisons are case-insensitive anyway
_LITERAL_KINDS = ("str", "date", "num")
_KEYWORD_LITERALS = ("true", "false", "null")


def _like_pattern(text: str, kind: str) -> str:
    escaped = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return {"contains": f"%{escaped}%", "startswith": f"{escaped}%", "endswith": f"%{escaped}"}[kind]


class FilterParser:
    """Recursive descent over the $filter grammar, emitting SQL over the entity set's aliases.

    expr := and ('or' and)* ; and := unary ('and' unary)* ; unary := 'not' unary | primary
    primary := '(' expr ')' | func '(' prop ',' string ')' [eq|ne true|false]
             | prop op literal | literal op prop | prop 'in' '(' literal, ... ')' | boolean prop
    """

    def __init__(self, entity: EntitySet, text: str):
        self.entity = entity
        self.tokens = _tokenize(text)
        self.index = 0
        self.depth = 0
        self.params: list[object] = []

    def parse(self) -> str:
        if not self.tokens:
            raise ValidationError("$filter: the filter is empty. Example: $filter=Category eq 'Hotel' and Amount gt 100")
        sql = self._or()
        if self._peek() is not None:
            raise self._error("'and', 'or' or the end of the filter")
        return sql

    # token helpers
    def _peek(self, ahead: int = 0) -> Token | None:
        i = self.index + ahead
        return self.tokens[i] if i < len(self.tokens) else None

    def _next(self, expected: str) -> Token:
        token = self._peek()
        if token is None:
            raise self._error(expected)
        self.index += 1
        return token

    def _is_word(self, token: Token | None, *words: str) -> bool:
        return token is not None and token.kind == "ident" and token.text.lower() in words

    def _is_punct(self, token: Token | None, char: str) -> bool:
        return token is not None and token.kind == "punct" and token.text == char

    def _expect_punct(self, char: str) -> None:
        if not self._is_punct(self._peek(), char):
            raise self._error(f"{char!r}")
        self.index += 1

    def _error(self, expected: str, token: Token | None = None) -> ValidationError:
        token = token or self._peek()
        if token is None:
            return ValidationError(f"$filter: expected {expected} but the filter ended.")
        return ValidationError(f"$filter: expected {expected} at character {token.pos}, found {token.text!r}.")

    # grammar
    def _or(self) -> str:
        parts = [self._and()]
        while self._is_word(self._peek(), "or"):
            self.index += 1
            parts.append(self._and())
        return parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"

    def _and(self) -> str:
        parts = [self._unary()]
        while self._is_word(self._peek(), "and"):
            self.index += 1
            parts.append(self._unary())
        return parts[0] if len(parts) == 1 else "(" + " AND ".join(parts) + ")"

    def _nest(self, token: Token) -> None:
        """Enter one more level of nesting (bounded, so no input can exhaust the stack)."""
        self.depth += 1
        if self.depth > MAX_FILTER_DEPTH:
            raise ValidationError(f"$filter: the filter nests deeper than {MAX_FILTER_DEPTH} levels at character {token.pos}.")
        self.index += 1

    def _unary(self) -> str:
        token = self._peek()
        if self._is_word(token, "not"):
            self._nest(token)
            sql = f"(NOT {self._unary()})"
            self.depth -= 1
            return sql
        return self._primary()

    def _primary(self) -> str:
        token = self._peek()
        if self._is_punct(token, "("):
            self._nest(token)
            sql = self._or()
            self._expect_punct(")")
            self.depth -= 1
            return sql
        if self._is_word(token, *_FUNCTIONS) and self._is_punct(self._peek(1), "("):
            return self._function()
        if token is not None and (token.kind in _LITERAL_KINDS or self._is_word(token, *_KEYWORD_LITERALS)):
            literal = self._next("a value")
            op = self._operator()
            prop = self._property("a property after the operator")
            return self._comparison(prop, _FLIPPED[op], literal)
        prop = self._property("a property, a function (contains, startswith, endswith), 'not' or '('")
        following = self._peek()
        if self._is_word(following, "in"):
            self.index += 1
            return self._in_list(prop)
        if prop.type == BOOLEAN and not self._is_word(following, *_COMPARISONS):
            return f'COALESCE("{prop.name}" = 1, 0)'
        op = self._operator()
        literal = self._next("a value (a 'string', a number, true, false or null)")
        if literal.kind == "ident" and not self._is_word(literal, *_KEYWORD_LITERALS):
            raise ValidationError(f"$filter: expected a value at character {literal.pos}, found {literal.text!r}; "
                                  "comparing two properties is not supported, and strings need single quotes.")
        return self._comparison(prop, op, literal)

    def _operator(self) -> str:
        token = self._peek()
        if not self._is_word(token, *_COMPARISONS):
            raise self._error("a comparison operator (eq, ne, gt, ge, lt, le)")
        self.index += 1
        return token.text.lower()

    def _property(self, expected: str) -> Property:
        token = self._peek()
        if token is None or token.kind != "ident":
            raise self._error(expected)
        if self._is_word(token, *_NO_OP_FUNCTIONS) and self._is_punct(self._peek(1), "("):
            self._nest(token)
            self.index += 1
            prop = self._property("a property")
            self._expect_punct(")")
            self.depth -= 1
            return prop
        self.index += 1
        return self.entity.find_property(token.text, f"$filter (character {token.pos})")

    def _function(self) -> str:
        name = self._next("a function").text.lower()
        self._expect_punct("(")
        prop = self._property(f"a property as the first argument of {name}")
        self._expect_punct(",")
        literal = self._next(f"a 'string' as the second argument of {name}")
        if literal.kind != "str":
            raise ValidationError(f"$filter: {name} takes a quoted string as its second argument; "
                                  f"found {literal.text!r} at character {literal.pos}.")
        self._expect_punct(")")
        self.params.append(_like_pattern(literal.value, name))
        sql = f"COALESCE(lower(\"{prop.name}\") LIKE ? ESCAPE '\\', 0)"
        if self._is_word(self._peek(), "eq", "ne") and self._is_word(self._peek(1), "true", "false"):
            op, value = self.tokens[self.index].text.lower(), self.tokens[self.index + 1].text.lower()
            self.index += 2
            if (op == "eq") != (value == "true"):
                sql = f"(NOT {sql})"
        return sql

    def _in_list(self, prop: Property) -> str:
        self._expect_punct("(")
        parts = []
        while True:
            literal = self._next("a value in the 'in' list")
            parts.append(self._comparison(prop, "eq", literal))
            if self._is_punct(self._peek(), ","):
                self.index += 1
                continue
            self._expect_punct(")")
            return "(" + " OR ".join(parts) + ")"

    def _comparison(self, prop: Property, op: str, literal: Token) -> str:
        column = f'"{prop.name}"'
        if self._is_word(literal, "null"):
            if op not in ("eq", "ne"):
                raise ValidationError(f"$filter: null can only be compared with eq or ne (character {literal.pos}).")
            return f"({column} IS {'' if op == 'eq' else 'NOT '}NULL)"
        column, value = self._operand(prop, column, literal)
        self.params.append(value)
        if op == "ne":
            return f"({column} IS NULL OR {column} <> ?)"
        return f"COALESCE({column} {_COMPARISONS[op]} ?, 0)"

    def _operand(self, prop: Property, column: str, literal: Token) -> tuple[str, object]:
        """The SQL column expression and the parameter for comparing ``prop`` with ``literal``."""
        where = f"$filter: {prop.name} (character {literal.pos})"
        if prop.type == BOOLEAN:
            if not self._is_word(literal, "true", "false"):
                raise ValidationError(f"{where} is {BOOLEAN}; compare it with true or false.")
            return column, int(literal.text.lower() == "true")
        if self._is_word(literal, "true", "false"):
            raise ValidationError(f"{where} is {prop.type}; true/false only compare with Boolean properties.")
        if prop.type == DECIMAL:
            cents = _number(literal, where) * 100
            if cents != cents.to_integral_value():
                raise ValidationError(f"{where}: amounts have two decimal places; {literal.value} has more.")
            return f"CAST(ROUND(CAST({column} AS REAL) * 100) AS INTEGER)", int(cents)
        if prop.type == INT:
            number = _number(literal, where)
            return column, int(number) if number == number.to_integral_value() else float(number)
        if literal.kind == "num":
            example = "'2026-03-14'" if prop.type == DATE else f"'{literal.text}'"
            raise ValidationError(f"{where} is {prop.type}; quote the value, e.g. {prop.name} eq {example}.")
        if prop.type == DATE:
            return column, ledger.parse_date(literal.value, where)
        return f"{column} COLLATE NOCASE", literal.value


def _number(literal: Token, where: str) -> Decimal:
    try:
        number = Decimal(literal.value.strip()) if literal.kind in ("num", "str") else None
    except InvalidOperation:
        number = None
    if number is None or not number.is_finite():
        raise ValidationError(f"{where} is a number; compare it with a number, found {literal.text!r}.")
    if number and number.adjusted() >= MAX_LITERAL_DIGITS:
        raise ValidationError(f"{where}: the number {literal.text} is out of range.")
    return number


# --- query options -------------------------------------------------------------------------------
QUERY_OPTIONS = ("$filter", "$select", "$orderby", "$top", "$skip", "$count")
_PATH = re.compile(r"^/?(?:data/)?(?P<set>[A-Za-z_]\w*)(?:\((?P<key>[^()]*)\))?/?(?:\?(?P<query>.*))?$", re.DOTALL)
_KEY = re.compile(r"^\s*(?:RecId\s*=\s*)?(?P<id>\d{1,18})\s*$", re.IGNORECASE)


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
    parts, current, quoted = [], [], False
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


def _parse_options(text: str) -> dict[str, str]:
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
            raise ValidationError(f"odataQueryOptions: unknown query option {part.partition('=')[0].strip()[:40]!r}. "
                                  f"Supported: {', '.join(QUERY_OPTIONS)}, joined with '&', "
                                  "e.g. $filter=Category eq 'Hotel'&$top=10.")
        if not sep:
            raise ValidationError(f"odataQueryOptions: {name} has no value; write {name}=value.")
        if name in options:
            raise ValidationError(f"odataQueryOptions: {name} is given twice.")
        options[name] = value.strip()
    return options


def _parse_query(odata_path: str, query_options: str | None) -> tuple[Query, FilterParser | None]:
    match = _PATH.match(odata_path.strip())
    if match is None:
        raise ValidationError(f"odataPath: {odata_path[:100]!r} is not an entity set path. Use ExpenseLines, "
                              "ExpenseLines(1234) for one record by RecId, or ExpenseLines?$filter=...")
    query = Query(_entity_set(match["set"]))
    if match["key"] is not None:
        key = _KEY.match(match["key"])
        if key is None:
            raise ValidationError(f"odataPath: the key {match['key']!r} is not a RecId; use {query.entity.name}(1234).")
        query.key = int(key["id"])
    options = _parse_options(match["query"] or "")
    for name, value in _parse_options(query_options or "").items():
        if name in options:
            raise ValidationError(f"{name} is given both in odataPath and in odataQueryOptions; give it once.")
        options[name] = value
    parser = None
    if "$filter" in options:
        parser = FilterParser(query.entity, options["$filter"])
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
        raise ValidationError(f"$select: expected comma-separated property names, got {text!r}. Properties: {entity.property_list}.")
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
            raise ValidationError(f"$orderby: expected 'Property [asc|desc]' items separated by commas, got {part.strip()!r}.")
        order.append((entity.find_property(words[0], "$orderby"), len(words) == 2 and words[1].lower() == "desc"))
    return order


def _parse_int(options: dict[str, str], name: str, default: int, maximum: int | None) -> int:
    if name not in options:
        return default
    text = options[name]
    if not re.fullmatch(r"\d{1,9}", text):
        raise ValidationError(f"{name}: expected a whole number of 0 or more, got {text!r}.")
    value = int(text)
    if maximum is not None and value > maximum:
        raise ValidationError(f"{name}: at most {maximum} records per call; page with $skip.")
    return value


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


def _fetch(db: sqlite3.Connection, query: Query, params: list[object]) -> dict:
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
        rows = db.execute(f"{base} ORDER BY {_order_sql(query)} LIMIT ? OFFSET ?",
                          params + [query.top + 1, query.skip]).fetchall()
        total = db.execute(f"SELECT COUNT(*) FROM ({base})", params).fetchone()[0] if query.count else None
    except sqlite3.OperationalError as exc:  # e.g. a filter too long for SQLite's expression depth
        raise ValidationError(f"$filter: the query could not run ({exc}); simplify the filter.") from None
    if query.key is not None and not rows and not query.filter and query.skip == 0:
        raise NotFoundError(f"{entity.name}({query.key}) does not exist: no record with RecId {query.key}.")
    payload: dict[str, Any] = {"EntitySet": entity.name}
    if total is not None:
        payload["@odata.count"] = total
    payload["value"] = [_record(entity, row, query.select or entity.properties) for row in rows[:query.top]]
    if query.top and len(rows) > query.top:
        payload["NextSkip"] = query.skip + query.top
    return payload


def find_entities(db: sqlite3.Connection, odata_path: str, query_options: str | None) -> dict:
    """Query an entity set. Returns {"EntitySet", ["@odata.count"], "value", ["NextSkip"]}.

    ``NextSkip`` is present when more records match: pass it as $skip to get the next page.
    """
    query, parser = _parse_query(odata_path, query_options)
    return _fetch(db, query, parser.params if parser else [])


def _records_by_id(db: sqlite3.Connection, entity: EntitySet, ids: list[int]) -> list[dict]:
    """Records in the order of ``ids``, as find_entities shows them."""
    placeholders = ", ".join("?" * len(ids))
    rows = db.execute(f'SELECT * FROM ({entity.select_sql}) WHERE "RecId" IN ({placeholders})', ids).fetchall()
    by_id = {row["RecId"]: _record(entity, row, entity.properties) for row in rows}
    return [by_id[i] for i in ids if i in by_id]


# --- read-only SQL ---------------------------------------------------------------------------------
def run_sql(db: sqlite3.Connection, sql: str) -> dict:
    """One read-only SELECT (see ``database.run_select``); cells over 2,000 characters are cut."""
    limits = {sqlite3.SQLITE_LIMIT_LENGTH: SQL_MAX_VALUE_BYTES, sqlite3.SQLITE_LIMIT_COLUMN: SQL_MAX_COLUMNS}
    previous = {limit: db.setlimit(limit, value) for limit, value in limits.items()}
    try:  # a value over the limit becomes NULL (printf) or "string or blob too big", never a memory bomb
        columns, rows, truncated = run_select(db, sql)
    finally:
        for limit, value in previous.items():
            db.setlimit(limit, value)
    out_rows, size, cut = [], 0, False
    for row in rows:
        cells = [_cell(value) for value in row]
        cut = cut or any(isinstance(v, str) and len(v) > SQL_CELL_CHARS for v in row)
        size += sum(len(str(c)) for c in cells) + 4
        if size > SQL_OUTPUT_CHARS and out_rows:
            truncated = True
            break
        out_rows.append(cells)
    payload: dict[str, Any] = {"Columns": columns, "Rows": out_rows, "Truncated": truncated}
    notes = []
    if truncated:
        notes.append(f"Only the first {len(out_rows)} row(s) are shown; add a WHERE clause or use LIMIT/OFFSET.")
    if cut:
        notes.append(f"Values longer than {SQL_CELL_CHARS:,} characters were cut.")
    if notes:
        payload["Note"] = " ".join(notes)
    return payload


def _cell(value: object) -> object:
    if isinstance(value, bytes):
        value = "x'" + value.hex() + "'"
    if isinstance(value, str) and len(value) > SQL_CELL_CHARS:
        return value[:SQL_CELL_CHARS] + "...[cut]"
    return value


# --- writes ------------------------------------------------------------------------------------
_CREATE_FIELDS = {"ParentRecId": None, "Subcategory": "subcategory", "TransactionDate": "transaction_date",
                  "Amount": "amount", "Description": "description", "LineType": None}
_ITEMIZED_FIELDS = {"Subcategory": "subcategory", "TransactionDate": "transaction_date", "Amount": "amount",
                    "Description": "description"}
_LINE_FIELDS = {"Merchant": "merchant", "Description": "description", "Amount": "amount"}
_CONTROLS = {field: name for name, field in {**_ITEMIZED_FIELDS, **_LINE_FIELDS}.items()}


def _writable_set(entity_set: str, verb: str) -> EntitySet:
    entity = _entity_set(entity_set)
    if not entity.writable:
        raise BusinessRuleError(f"{entity.name} is read-only; records cannot be {verb}. Writable entity sets: "
                                "ExpenseLines (itemized lines; header-line Merchant, Description, Amount) and "
                                "ExpenseReports (Purpose).")
    return entity


def _batch(items: object, name: str) -> list:
    if not isinstance(items, list) or not items:
        raise ValidationError(f"{name}: expected a non-empty list.")
    if len(items) > MAX_BATCH:
        raise ValidationError(f"{name}: {len(items)} items; at most {MAX_BATCH} per call.")
    return items


def _properties(entity: EntitySet, raw: object, allowed: list[str], purpose: str) -> dict[str, object]:
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
        raise ValidationError(f"Unknown propert{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)} "
                              f"of {entity.name}. {purpose} takes: {', '.join(allowed)}.")
    if refused:
        raise ValidationError(f"{', '.join(refused)} cannot be set here. {purpose} takes: {', '.join(allowed)}.")
    return values


def _rec_id(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not re.fullmatch(r"\s*\d{1,18}\s*", str(value)):
        raise ValidationError(f"{where}: expected a RecId (a whole number), got {value!r}.")
    return int(value)


@contextmanager
def _batch_item(label: str, count: int) -> Iterator[None]:
    """In a batch of several items, an error names the item (``entities[2]``) and says nothing was written."""
    try:
        yield
    except ErpError as exc:
        if count == 1:
            raise
        raise type(exc)(f"{label}: {exc} Nothing was written; fix this item and send the whole batch again.") from None


def create_entities(db: sqlite3.Connection, entity_set: str, entities: list[dict]) -> list[dict]:
    """Create itemized expense lines, all or nothing. Returns the created records."""
    entity = _entity_set(entity_set)
    if entity.name != "ExpenseLines":
        raise BusinessRuleError(f"Records of {entity.name} cannot be created through the data API. Only itemized "
                                "lines can be created: entity set ExpenseLines with ParentRecId, Subcategory, "
                                "TransactionDate and Amount.")
    _batch(entities, "entities")
    created: list[int] = []
    with ledger.transaction(db):
        for index, raw in enumerate(entities):
            with _batch_item(f"entities[{index}]", len(entities)):
                created.append(_create_itemized(db, entity, raw))
    return _records_by_id(db, entity, created)


def _create_itemized(db: sqlite3.Connection, entity: EntitySet, raw: object) -> int:
    values = _properties(entity, raw, list(_CREATE_FIELDS), "Creating an itemized line")
    line_type = values.pop("LineType", "ItemizedLine")
    if not isinstance(line_type, str) or line_type.strip().lower() != "itemizedline":
        raise ValidationError(f"LineType: only itemized lines can be created, so LineType must be ItemizedLine "
                              f"(or left out), got {line_type!r}.")
    if values.get("ParentRecId") in (None, ""):
        raise ValidationError("ParentRecId must be filled in: the RecId of the expense line to itemize.")
    header = ledger.line_by_id(db, _rec_id(values.pop("ParentRecId"), "ParentRecId"))
    ledger.itemizable_header(db, header["id"])  # category, line type and Draft checks before value checks
    raw_values = {_CREATE_FIELDS[name]: value for name, value in values.items()}
    itemized = ledger.validate_itemized_values(header, raw_values, _CONTROLS)
    return ledger.create_itemized_line(db, header["id"], itemized)


def update_entities(db: sqlite3.Connection, entity_set: str, entities: list[dict]) -> list[dict]:
    """Update expense lines or report purposes by RecId, all or nothing. Returns the updated records."""
    entity = _writable_set(entity_set, "updated")
    _batch(entities, "entities")
    update = _update_line if entity.name == "ExpenseLines" else _update_report
    updated: list[int] = []
    with ledger.transaction(db):
        for index, raw in enumerate(entities):
            with _batch_item(f"entities[{index}]", len(entities)):
                updated.append(update(db, entity, raw))
    return _records_by_id(db, entity, list(dict.fromkeys(updated)))


def _update_line(db: sqlite3.Connection, entity: EntitySet, raw: object) -> int:
    allowed = ["RecId", *dict.fromkeys([*_ITEMIZED_FIELDS, *_LINE_FIELDS])]
    values = _properties(entity, raw, allowed, "Updating an expense line")
    if "RecId" not in values:
        raise ValidationError("RecId must be given to say which line to update.")
    line = ledger.line_by_id(db, _rec_id(values.pop("RecId"), "RecId"))
    if not values:
        raise ValidationError(f"Nothing to update for RecId {line['id']}; give at least one of {', '.join(allowed[1:])}.")
    if line["line_type"] == "ItemizedLine":
        wrong = [name for name in values if name not in _ITEMIZED_FIELDS]
        if wrong:
            raise ValidationError(f"{', '.join(wrong)}: line RecId {line['id']} is an itemized line; it takes "
                                  f"{', '.join(_ITEMIZED_FIELDS)} (its Merchant is the header's).")
        raw_values = {field: line[field] for field in _ITEMIZED_FIELDS.values()}
        raw_values.update({_ITEMIZED_FIELDS[name]: value for name, value in values.items()})
        header = ledger.line_by_id(db, line["parent_line_id"])
        ledger.update_itemized_line(db, line["id"], ledger.validate_itemized_values(header, raw_values, _CONTROLS))
    else:
        wrong = [name for name in values if name not in _LINE_FIELDS]
        if wrong:
            raise ValidationError(f"{', '.join(wrong)}: line RecId {line['id']} is a {line['line_type']} line; it takes "
                                  f"{', '.join(_LINE_FIELDS)}. Subcategory and TransactionDate are set on itemized lines.")
        ledger.update_line_fields(db, line["id"], {_LINE_FIELDS[name]: value for name, value in values.items()}, _CONTROLS)
    return int(line["id"])


def _update_report(db: sqlite3.Connection, entity: EntitySet, raw: object) -> int:
    values = _properties(entity, raw, ["RecId", "ReportNumber", "Purpose"], "Updating an expense report")
    if "RecId" in values:
        report = ledger.report_by_id(db, _rec_id(values.pop("RecId"), "RecId"))
        if "ReportNumber" in values and str(values.pop("ReportNumber")).strip().upper() != report["report_number"]:
            raise ValidationError(f"RecId {report['id']} is report {report['report_number']}, not the ReportNumber given.")
    elif "ReportNumber" in values:
        report = ledger.report_by_number(db, ledger.parse_text(values.pop("ReportNumber"), "ReportNumber"))
    else:
        raise ValidationError("RecId (or ReportNumber) must be given to say which report to update.")
    if "Purpose" not in values:
        raise ValidationError(f"Nothing to update for report {report['report_number']}; only Purpose can be changed.")
    ledger.update_report_purpose(db, report["id"], values["Purpose"], "Purpose")
    return int(report["id"])


def delete_entities(db: sqlite3.Connection, entity_set: str, keys: list[int]) -> None:
    """Delete itemized expense lines by RecId, all or nothing."""
    entity = _entity_set(entity_set)
    if entity.name != "ExpenseLines":
        raise BusinessRuleError(f"Records of {entity.name} cannot be deleted through the data API. Only itemized "
                                "lines (entity set ExpenseLines, LineType ItemizedLine) can be deleted.")
    ids = [_rec_id(key, f"keys[{i}]") for i, key in enumerate(_batch(keys, "keys"))]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ValidationError(f"keys: RecId {', '.join(map(str, repeated))} is listed more than once.")
    with ledger.transaction(db):
        for index, line_id in enumerate(ids):
            with _batch_item(f"keys[{index}]", len(ids)):
                ledger.delete_itemized_line(db, line_id)
