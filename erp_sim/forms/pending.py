"""A form's unsaved edits, one typed object per editable form (``OpenForm.pending``).

Any object with ``unsaved_count()`` and ``copy()`` will do (``FormEdits``); ``RowEdits`` is the one of
a grid whose rows are edited, added and deleted before a save (the itemization form's). Forms replace a
row's edit instead of mutating it, so ``copy()`` copies one level and a snapshot taken before a failed
``form_set_control_values`` restores exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol, Self


class FormEdits(Protocol):
    """What the framework needs of a form's unsaved edits: how many there are, and a snapshot."""

    def unsaved_count(self) -> int: ...

    def copy(self) -> Self: ...


@dataclass(frozen=True)
class PendingRow:
    """One unsaved grid row: a new row's values, the changed fields of a saved row, or its deletion."""

    values: dict[str, str | None]
    deleted: bool = False


class RowEdits:
    """A grid's unsaved rows, keyed by a saved row's RecId or a new row's ``new-N``; ``next_row`` numbers
    new rows and survives a save or discard (keys are never reused). ``rows`` is a read-only view, changed
    through ``put``, ``drop`` and ``replace``, which count the saved rows' edits: a long itemization holds
    hundreds of new rows until its save, and every render asks for them without walking them."""

    __slots__ = ("_rows", "_saved_edits", "next_row")

    def __init__(self, rows: dict[int | str, PendingRow] | None = None, next_row: int = 0) -> None:
        self.next_row = next_row
        self.replace(dict(rows or {}))

    @property
    def rows(self) -> Mapping[int | str, PendingRow]:
        return MappingProxyType(self._rows)

    def new_key(self) -> str:
        self.next_row += 1
        return f"new-{self.next_row}"

    def put(self, key: int | str, row: PendingRow) -> None:
        """Set a row's edit (a new row's values, a saved row's changed fields or its deletion)."""
        if not isinstance(key, str) and key not in self._rows:
            self._saved_edits += 1
        self._rows[key] = row

    def drop(self, key: int | str) -> None:
        del self._rows[key]
        if not isinstance(key, str):
            self._saved_edits -= 1

    def replace(self, rows: dict[int | str, PendingRow]) -> None:
        """All the edits at once (``{}`` after a save or discard); the dict is the edits' own from now on."""
        self._rows = rows
        self._saved_edits = sum(not isinstance(key, str) for key in rows)

    def unsaved_count(self) -> int:
        return len(self._rows)

    def edited_line_ids(self) -> list[int]:
        """Saved rows with an unsaved edit or deletion, in edit order."""
        if not self._saved_edits:
            return []
        return [key for key in self._rows if not isinstance(key, str)]

    def new_keys(self) -> list[str]:
        """The new rows' keys, in creation order."""
        if not self._saved_edits:
            return list(self._rows)  # type: ignore[arg-type]  # every key is a new row's
        return [key for key in self._rows if isinstance(key, str)]

    def copy(self) -> RowEdits:
        """A snapshot (taken before every change of values): the rows copied in C, the count taken over."""
        clone = RowEdits.__new__(RowEdits)
        clone._rows, clone._saved_edits, clone.next_row = dict(self._rows), self._saved_edits, self.next_row
        return clone

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RowEdits) and (self._rows, self.next_row) == (other._rows, other.next_row)

    def __repr__(self) -> str:
        return f"RowEdits(rows={self._rows!r}, next_row={self.next_row})"

    def __getstate__(self) -> tuple[dict[int | str, PendingRow], int]:
        return self._rows, self.next_row

    def __setstate__(self, state: tuple[dict[int | str, PendingRow], int]) -> None:
        rows, self.next_row = state
        self.replace(rows)
