"""A list page of records (as D365's Expense reports and Bank reconciliation pages): a quick filter over one
grid, and one button that opens the selected record in its own form. A workflow's list form says what its grid
shows (``columns``, ``rows``) and what the button opens (``OpenRecord``); the filter, the button, its states and
its refusals are the same on every list page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from erp_sim.errors import FormStateError
from erp_sim.forms.base import (
    Button,
    Column,
    FormDefinition,
    FormHost,
    Grid,
    GridRow,
    OpenForm,
    Section,
    quick_filter_control,
)


@dataclass(frozen=True)
class OpenRecord:
    """The list's button: it opens the selected row's record in ``form``, its RecId as ``context_key``."""

    button: str  # the button's name, e.g. EditReport
    label: str  # its label, e.g. Edit
    record: str  # what a row is, e.g. expense report
    article: str  # "a" or "an", before ``record`` in the refusal
    short: str  # the same, short, in the disabled reason: report
    form: str  # the form that shows one record
    context_key: str  # e.g. report_id


class RecordList(FormDefinition):
    """A list form: subclasses give the grid (``primary_grid``, ``group``, ``label``, ``columns``, ``rows``), the
    cache key its rows are read under, and ``opens``."""

    primary_grid: str = ""
    group: ClassVar[str]  # the grid's section, e.g. ReportsGroup
    label: ClassVar[str]  # the section's and the grid's label
    columns: ClassVar[list[Column]]
    rows_key: ClassVar[str]  # rows are read once per database version (session.cached_read)
    opens: ClassVar[OpenRecord]

    def rows(self, session: FormHost) -> list[GridRow]:
        raise NotImplementedError

    def sections(self, session: FormHost, form: OpenForm) -> list[Section]:
        rows = session.cached_read(self.rows_key, lambda: self.rows(session))
        return [
            Section("FilterGroup", "Filter", controls=[quick_filter_control(form)]),
            Section(self.group, self.label, grids=[Grid(self.primary_grid, self.label, list(self.columns), rows)]),
        ]

    def buttons(self, session: FormHost, form: OpenForm) -> list[Button]:
        opens, selected = self.opens, form.grid_state(self.primary_grid).selected_key is not None
        return [
            Button(
                opens.button,
                opens.label,
                selected,
                f"Open the selected {opens.record}.",
                f"select a {opens.short} in {self.primary_grid} first (form_select_grid_row).",
            )
        ]

    def click(self, session: FormHost, form: OpenForm, button: str) -> str:
        opens = self.opens
        if button.lower() != opens.button.lower():
            return super().click(session, form, button)
        rec_id = form.grid_state(self.primary_grid).selected_key
        if rec_id is None:
            raise FormStateError(
                f"Select {opens.article} {opens.record} in {self.primary_grid} first (form_select_grid_row)."
            )
        return session.open_form(opens.form, {opens.context_key: rec_id})
