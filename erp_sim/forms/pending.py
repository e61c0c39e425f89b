"""A form's unsaved edits, one typed object per editable form (``OpenForm.pending``).

The forms replace a row's or line's edit instead of mutating it, so ``copy()`` copies one level
and a snapshot taken before a failed ``form_set_control_values`` restores exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PendingRow:
    """One unsaved itemization row: a new row's values, the changed fields of a saved line, or its deletion."""

    values: dict[str, str | None]
    deleted: bool = False


@dataclass
class ItemizationEdits:
    """The itemization form's unsaved rows, keyed by a saved line's RecId or a new row's ``new-N``;
    ``next_row`` numbers new rows and survives a save or discard (keys are never reused)."""

    rows: dict[int | str, PendingRow] = field(default_factory=dict)
    next_row: int = 0

    def new_key(self) -> str:
        self.next_row += 1
        return f"new-{self.next_row}"

    def unsaved_count(self) -> int:
        return len(self.rows)

    def edited_line_ids(self) -> list[int]:
        """Saved lines with an unsaved edit or deletion, in edit order."""
        return [key for key in self.rows if not isinstance(key, str)]

    def new_rows(self) -> list[tuple[str, PendingRow]]:
        return [(key, row) for key, row in self.rows.items() if isinstance(key, str)]

    def copy(self) -> ItemizationEdits:
        return ItemizationEdits(dict(self.rows), self.next_row)


@dataclass
class ReportEdits:
    """The expense report form's unsaved changes: per header line the changed fields, and the purpose."""

    lines: dict[int, dict[str, str]] = field(default_factory=dict)
    purpose: str | None = None

    def unsaved_count(self) -> int:
        return len(self.lines) + (self.purpose is not None)

    def line_value(self, line_id: int, name: str, saved: object) -> object:
        return self.lines.get(line_id, {}).get(name, saved)

    def copy(self) -> ReportEdits:
        return ReportEdits(dict(self.lines), self.purpose)


FormEdits = ItemizationEdits | ReportEdits
