"""A form's unsaved edits, one typed object per editable form (``OpenForm.pending``).

Any object with ``unsaved_count()`` and ``copy()`` will do (``FormEdits``); ``RowEdits`` is the one of
a grid whose rows are edited, added and deleted before a save (the itemization form's). Forms replace a
row's edit instead of mutating it, so ``copy()`` copies one level and a snapshot taken before a failed
``form_set_control_values`` restores exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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


@dataclass
class RowEdits:
    """A grid's unsaved rows, keyed by a saved row's RecId or a new row's ``new-N``; ``next_row`` numbers
    new rows and survives a save or discard (keys are never reused)."""

    rows: dict[int | str, PendingRow] = field(default_factory=dict)
    next_row: int = 0

    def new_key(self) -> str:
        self.next_row += 1
        return f"new-{self.next_row}"

    def unsaved_count(self) -> int:
        return len(self.rows)

    def edited_line_ids(self) -> list[int]:
        """Saved rows with an unsaved edit or deletion, in edit order."""
        return [key for key in self.rows if not isinstance(key, str)]

    def new_keys(self) -> list[str]:
        """The new rows' keys, in creation order."""
        return [key for key in self.rows if isinstance(key, str)]

    def copy(self) -> RowEdits:
        return RowEdits(dict(self.rows), self.next_row)
