"""OData ``$filter`` text to a parameterized SQL condition: values never enter the SQL text,
and property names come from the entity set's fixed whitelist.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TypeGuard, cast

from erp_sim.errors import ValidationError
from erp_sim.odata.entities import BOOLEAN, DATE, DECIMAL, INT, DataCatalog, EntitySet, Property
from erp_sim.values import parse_date

MAX_FILTER_DEPTH = 40  # nested parentheses, not and tolower/toupper
MAX_LITERAL_DIGITS = 15  # numbers in $filter stay far below SQLite's 64-bit integers


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


_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<str>'(?:[^']|'')*')
  | (?P<date>\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})?)?)(?![\w.])
  | (?P<num>[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?![\w.])
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<punct>[(),])
""",
    re.VERBOSE | re.ASCII,  # digits and words in ASCII: int() and Decimal() would read other scripts' digits
)


def _tokenize(text: str, string_example: str) -> list[Token]:
    tokens, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            char = text[pos]
            if char == "'":
                raise ValidationError(
                    f"$filter: unterminated string literal starting at character {pos + 1}; "
                    "close it with ' and double any quote inside it ('O''Brien')."
                )
            hint = f" Quote strings with single quotes: {string_example}." if char == '"' else ""
            raise ValidationError(f"$filter: unexpected character {char!r} at character {pos + 1}.{hint}")
        if match.lastgroup != "ws":
            tokens.append(Token(cast(str, match.lastgroup), match.group(), pos + 1))  # every pattern is a named group
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

    def __init__(self, catalog: DataCatalog, entity: EntitySet, text: str):
        self.entity, self.example = entity, catalog.filter_example
        self.tokens = _tokenize(text, catalog.string_example)
        self.index = 0
        self.depth = 0
        self.params: list[object] = []

    def parse(self) -> str:
        if not self.tokens:
            raise ValidationError(f"$filter: the filter is empty. Example: $filter={self.example}")
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

    def _is_word(self, token: Token | None, *words: str) -> TypeGuard[Token]:
        return token is not None and token.kind == "ident" and token.text.lower() in words

    def _is_punct(self, token: Token | None, char: str) -> TypeGuard[Token]:
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
        return self._joined("or", self._and)

    def _and(self) -> str:
        return self._joined("and", self._unary)

    def _joined(self, word: str, operand: Callable[[], str]) -> str:
        """One or more ``operand``s joined by the keyword ``word`` (or, and), as SQL in parentheses."""
        parts = [operand()]
        while self._is_word(self._peek(), word):
            self.index += 1
            parts.append(operand())
        return parts[0] if len(parts) == 1 else "(" + f" {word.upper()} ".join(parts) + ")"

    def _nest(self, token: Token) -> None:
        """Enter one more level of nesting (bounded, so no input can exhaust the stack)."""
        self.depth += 1
        if self.depth > MAX_FILTER_DEPTH:
            raise ValidationError(
                f"$filter: the filter nests deeper than {MAX_FILTER_DEPTH} levels at character {token.pos}."
            )
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
            raise ValidationError(
                f"$filter: expected a value at character {literal.pos}, found {literal.text!r}; "
                "comparing two properties is not supported, and strings need single quotes."
            )
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
            raise ValidationError(
                f"$filter: {name} takes a quoted string as its second argument; "
                f"found {literal.text!r} at character {literal.pos}."
            )
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
            return column, parse_date(literal.value, where)
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
