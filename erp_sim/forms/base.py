"""The form runtime: what every simulated D365 form shares.

A form definition (one module per form, in its workflow's folder) says what differs: its sections (groups, tab
pages, fast tabs) of controls, its grids and where their rows come from, its buttons and
what clicking them does, and how it saves. This module owns the rest: grid filtering,
sorting, paging (25 rows, ``LoadNextPage``), row selection, tabs, and rendering the form
state in the real server's shape at either verbosity.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, TypeVar, overload

from erp_sim.errors import FormStateError, NotFoundError, ValidationError
from erp_sim.forms.pending import FormEdits

# Imported names rather than ``K.NAME``: the renderers below build every dict of every response, and a module
# attribute per key cost them about 3% (measured against string literals, which these now match).
from erp_sim.response_keys import (
    ACTION_IDS,
    BUTTONS,
    CAPTION,
    CHILDREN,
    COLLAPSIBLE_TYPES,
    COLUMN,
    COLUMNS,
    COMPANY,
    DATA_FIELD,
    DATA_TYPE,
    DESCENDING,
    FILTERS,
    FIRST_ROW,
    FORM,
    GRID,
    GROUP,
    GUIDANCE,
    HAS_NEXT_PAGE,
    HAS_UNSAVED_CHANGES,
    HELP_TEXT,
    INPUT,
    IS_EDITABLE,
    IS_ENABLED,
    IS_EXPANDED,
    IS_FILTERABLE,
    IS_MARKED,
    IS_REQUIRED,
    IS_SELECTED,
    IS_SORTABLE,
    IS_VISIBLE,
    LABEL,
    LAST_ROW,
    LINKS,
    LOAD_NEXT_PAGE,
    LOAD_PREVIOUS_PAGE,
    MENU_ITEM_NAME,
    NAME,
    NAVIGATION_PATH,
    OPTIONS,
    PAGINATION,
    ROW_NUMBER,
    ROWS,
    SORTED_BY,
    SUMMARY,
    TAB,
    TAB_PAGE,
    TOTAL_ROWS,
    VALUE,
    VALUES,
)
from erp_sim.response_keys import PAGE_SIZE as PAGE_SIZE_KEY
from erp_sim.workflow_task import WorkflowTask

T = TypeVar("T")
E = TypeVar("E", bound=FormEdits)


class FormHost(Protocol):
    """What a form needs from the session that hosts it (``erp_sim.erp_session.ErpSession``).

    Forms depend on this protocol, not on the session module, so the session can import the
    forms without a cycle.
    """

    task: WorkflowTask
    company: str
    db: sqlite3.Connection
    forms: list[OpenForm]

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T: ...
    def cached_read(self, key: str, compute: Callable[[], T]) -> T: ...
    def add_message(self, level: str, text: str) -> None: ...
    def open_form(self, name: str, context: dict[str, Any]) -> str: ...


class MenuItem(NamedTuple):
    """A menu item that opens a form: what form_find_menu_item shows, and the form it opens."""

    label: str
    type: str  # Display (the only kind that opens a form)
    navigation_path: str
    form: str


PAGE_SIZE = 25
QUICK_FILTER = "QuickFilter"  # a list form's filter box: the control form_filter_form sets too
_NEXT_PAGE, _PREVIOUS_PAGE = LOAD_NEXT_PAGE.lower(), LOAD_PREVIOUS_PAGE.lower()  # actionIds match in any case


@dataclass
class Control:
    name: str
    label: str
    kind: str  # one of response_keys.CONTROL_KINDS
    value: Any
    editable: bool = False
    required: bool = False
    help: str = ""
    data_field: str = ""
    options: list[str] | None = None  # Combobox values (also what form_open_lookup shows)


@dataclass
class Column:
    name: str
    label: str
    data_type: str = "String"


class GridRow:
    """One row of a grid: the record behind it (``key``: its id, or a pending row's key) and its values by column.

    The values may come as ``values_of(source)``, computed when first read: a grid shows one page, so a row off
    it (a 200-charge receipt has eight pages) is formatted only when a filter or a sort reads its values.
    """

    __slots__ = ("_source", "_values", "_values_of", "key")

    def __init__(
        self,
        key: Any,
        values: dict[str, str] | None = None,
        *,
        values_of: Callable[[Any], dict[str, str]] | None = None,
        source: Any = None,
    ) -> None:
        if (values is None) == (values_of is None):
            raise TypeError("GridRow takes its values or a values_of function, one of the two")
        self.key, self._values, self._values_of, self._source = key, values, values_of, source

    @property
    def values(self) -> dict[str, str]:
        if self._values is None:
            assert self._values_of is not None  # one of the two, checked at construction
            self._values = self._values_of(self._source)
            self._source = None
        return self._values

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GridRow) and (self.key, self.values) == (other.key, other.values)

    __hash__ = None  # type: ignore[assignment]  # mutable like the dataclass it was: rows are not set members

    def __repr__(self) -> str:
        return f"GridRow({self.key!r}, {self.values!r})"


class LazyRows(Sequence[GridRow]):
    """A grid's rows held as their keys and sources, each row made (a ``GridRow`` of ``values_of(source)``) only
    when read: a response reads one page, so a grid of 200 records costs two lists, not 200 row objects."""

    __slots__ = ("_sources", "_values_of", "keys")

    def __init__(self, keys: list[Any], sources: Sequence[Any], values_of: Callable[[Any], dict[str, str]]) -> None:
        self.keys, self._sources, self._values_of = keys, sources, values_of

    def __len__(self) -> int:
        return len(self.keys)

    @overload
    def __getitem__(self, index: int) -> GridRow: ...

    @overload
    def __getitem__(self, index: slice) -> list[GridRow]: ...

    def __getitem__(self, index: int | slice) -> GridRow | list[GridRow]:
        values_of = self._values_of
        if isinstance(index, slice):
            return [GridRow(k, values_of=values_of, source=s) for k, s in zip(self.keys[index], self._sources[index])]
        return GridRow(self.keys[index], values_of=values_of, source=self._sources[index])

    def __iter__(self) -> Iterator[GridRow]:
        return iter(self[:])


def read_records(
    session: FormHost, key: str, read: Callable[[], list[sqlite3.Row]]
) -> tuple[list[sqlite3.Row], list[Any]]:
    """A grid's records and their ids (``id`` column), read once per database version (``FormHost.cached_read``
    under ``key``): every render of a long grid reads them, and ``LazyRows`` takes both. Not to be mutated."""

    def records() -> tuple[list[sqlite3.Row], list[Any]]:
        rows = read()
        return rows, [row["id"] for row in rows]

    return session.cached_read(key, records)


def row_keys(rows: Sequence[GridRow]) -> list[Any]:
    """The rows' keys, in order (of ``LazyRows``, without making the rows)."""
    return rows.keys if isinstance(rows, LazyRows) else [row.key for row in rows]


@dataclass
class Grid:
    name: str
    label: str
    columns: list[Column]
    rows: Sequence[GridRow]


@dataclass
class Section:
    """A container of controls and grids: Group, TabPage or FastTab (the last two collapse)."""

    name: str
    label: str
    kind: str = GROUP
    controls: list[Control] = field(default_factory=list)
    grids: list[Grid] = field(default_factory=list)


@dataclass
class Button:
    name: str
    label: str
    enabled: bool = True
    help: str = ""
    disabled_reason: str = ""  # what enables it, so the refusal tells the agent how to recover


@dataclass
class GridState:
    page: int = 0
    filters: dict[str, str] = field(default_factory=dict)  # column -> case-insensitive "contains"
    sort: tuple[str, bool] | None = None  # (column, descending)
    selected_key: Any = None
    marked: set[Any] = field(default_factory=set)


@dataclass
class OpenForm:
    """One form on the navigation stack, with everything the user changed but did not save."""

    name: str
    context: dict[str, Any] = field(default_factory=dict)
    grids: dict[str, GridState] = field(default_factory=dict)
    collapsed: set[str] = field(default_factory=set)
    quick_filter: str = ""
    pending: FormEdits | None = None  # the form's unsaved edits (created at the first edit)
    close_warned: bool = False

    def grid_state(self, grid: str) -> GridState:
        return self.grids.setdefault(grid, GridState())

    def edits(self, kind: type[E]) -> E:
        """The form's unsaved edits, of the one kind its definition keeps (created empty at first use)."""
        if self.pending is None:
            self.pending = kind()
        assert isinstance(self.pending, kind)
        return self.pending

    def snapshot(self) -> tuple[FormEdits | None, str]:
        return (self.pending.copy() if self.pending is not None else None), self.quick_filter

    def restore(self, snapshot: tuple[FormEdits | None, str]) -> None:
        self.pending, self.quick_filter = snapshot


class FormDefinition:
    """Base of every form. Subclasses implement only what differs."""

    name: str = ""
    menu_item: str | None = None
    primary_grid: str | None = None  # the grid form_filter_form filters
    guidance: list[str] = []
    links: list[tuple[str, str]] = []  # (label, menu item)

    # --- what subclasses describe ---
    def caption(self, session: FormHost, form: OpenForm) -> str:
        return self.name

    def summary(self, session: FormHost, form: OpenForm) -> str:
        return ""

    def sections(self, session: FormHost, form: OpenForm) -> list[Section]:
        return []

    def buttons(self, session: FormHost, form: OpenForm) -> list[Button]:
        return []

    def click(self, session: FormHost, form: OpenForm, button: str) -> str:
        raise NotFoundError(f"Button {button!r} does not exist on form {self.name}.")

    def set_value(self, session: FormHost, form: OpenForm, control: Control, value: Any) -> None:
        if control.name == QUICK_FILTER and self.primary_grid is not None:  # a list form's filter box
            form.quick_filter = str(value)
            form.grid_state(self.primary_grid).page = 0
            return
        raise FormStateError(f"Control {control.name} is read-only.")

    def has_unsaved_changes(self, form: OpenForm) -> bool:
        return form.pending is not None and form.pending.unsaved_count() > 0

    def save(self, session: FormHost, form: OpenForm) -> str:
        if not self.has_unsaved_changes(form):
            return "There were no changes to save."
        raise FormStateError(f"Form {self.name} cannot be saved.")

    def discard(self, form: OpenForm) -> None:
        form.pending = None

    def reconcile(self, session: FormHost, form: OpenForm) -> None:
        """Bring unsaved edits in line with the current rows before the form is shown (writes elsewhere)."""

    def on_select(self, session: FormHost, form: OpenForm, grid: str, key: Any) -> None:
        """Hook after a row is selected (e.g. the itemization form edits the selected row)."""

    # --- shared machinery ---
    def all_sections(self, session: FormHost, form: OpenForm) -> list[Section]:
        """The form's sections; computed once per render (the session memoizes while rendering)."""
        return session.memo(("sections", id(form)), lambda: self.sections(session, form))

    def controls(self, session: FormHost, form: OpenForm) -> list[Control]:
        return [c for s in self.all_sections(session, form) for c in s.controls]

    def control(self, session: FormHost, form: OpenForm, name: str) -> Control:
        for control in self.controls(session, form):
            if control.name.lower() == str(name).lower():
                return control
        names = ", ".join(c.name for c in self.controls(session, form)) or "none"
        raise NotFoundError(
            f"Control {name!r} does not exist on form {self.name}. Controls: {names}."
            + self.missing_control_hint(session, form, str(name))
        )

    def missing_control_hint(self, session: FormHost, form: OpenForm, name: str) -> str:
        """A sentence on how to make a control appear that only shows in some states (e.g. a selected row)."""
        return ""

    def grid(self, session: FormHost, form: OpenForm, name: str | None) -> Grid:
        grids = [g for s in self.all_sections(session, form) for g in s.grids]
        if name is None and len(grids) == 1:
            return grids[0]
        for grid in grids:
            if name is not None and grid.name.lower() == name.lower():
                return grid
        names = ", ".join(g.name for g in grids) or "none"
        raise NotFoundError(f"Grid {name!r} does not exist on form {self.name}. Grids: {names}.")

    def view(self, form: OpenForm, grid: Grid) -> Sequence[GridRow]:
        """The grid's rows after filters (column filters and the form's quick filter) and sort."""
        state = form.grid_state(grid.name)
        rows = filter_rows(grid, grid.rows, state.filters)
        if form.quick_filter and grid.name == self.primary_grid:
            needle = form.quick_filter.lower()
            rows = [r for r in rows if any(needle in v.lower() for v in r.values.values())]
        if state.sort:
            column, descending = state.sort
            data_type = next((c.data_type for c in grid.columns if c.name == column), "String")
            rows = sorted(rows, key=lambda r: _sort_key(r.values.get(column, ""), data_type), reverse=descending)
        return rows

    def page_rows(self, form: OpenForm, grid: Grid) -> tuple[list[GridRow], int, int]:
        """(rows on the current page, number of the first row on it, total rows)."""
        rows = self.view(form, grid)
        state = form.grid_state(grid.name)
        last_page = max(0, (len(rows) - 1) // PAGE_SIZE)
        state.page = min(state.page, last_page)
        start = state.page * PAGE_SIZE
        return list(rows[start : start + PAGE_SIZE]), start + 1, len(rows)

    def selected_row(self, session: FormHost, form: OpenForm, grid_name: str) -> GridRow | None:
        state = form.grid_state(grid_name)
        if state.selected_key is None:
            return None
        rows = self.grid(session, form, grid_name).rows
        keys = row_keys(rows)
        return rows[keys.index(state.selected_key)] if state.selected_key in keys else None

    def select_row(
        self, session: FormHost, form: OpenForm, grid_name: str | None, row_number: str, marking: str | None
    ) -> str:
        grid = self.grid(session, form, grid_name)
        text = str(row_number).strip()
        if not (text.isascii() and text.isdigit()):  # int() would also read "1_0", "+3" or other scripts' digits
            raise ValidationError(
                f"rowNumber: {row_number!r} is not a row number; use the RowNumber shown in the grid."
            )
        number = int(text)
        rows, first, total = self.page_rows(form, grid)
        if total == 0:
            raise FormStateError(f"Grid {grid.name} has no rows.")
        if not 1 <= number <= total:
            raise ValidationError(f"rowNumber: grid {grid.name} has no row {number}; its rows are 1-{total}.")
        if not first <= number < first + len(rows):
            page = LOAD_NEXT_PAGE if number >= first else LOAD_PREVIOUS_PAGE
            raise ValidationError(
                f"rowNumber: row {number} is not on the current page of {grid.name} (rows {first}-{first + len(rows) - 1} "
                f"of {total}); use actionId {page} on the grid to page."
            )
        row = rows[number - first]
        state = form.grid_state(grid.name)
        state.selected_key = row.key
        if marking and marking.lower() == "marked":
            state.marked.add(row.key)
        elif marking and marking.lower() == "unmarked":
            state.marked.discard(row.key)
        self.on_select(session, form, grid.name, row.key)
        return f"Row {number} of grid {grid.name} was selected."

    def grid_action(self, session: FormHost, form: OpenForm, grid_name: str, action_id: str) -> str:
        grid = self.grid(session, form, grid_name)
        state = form.grid_state(grid.name)
        _, _, total = self.page_rows(form, grid)
        pages = max(1, (total + PAGE_SIZE - 1) // PAGE_SIZE)
        action = action_id.strip().lower()
        if action == _NEXT_PAGE:
            if state.page + 1 >= pages:
                return f"Grid {grid.name} is already showing its last page ({total} rows)."
            state.page += 1
        elif action == _PREVIOUS_PAGE:
            if state.page == 0:
                return f"Grid {grid.name} is already showing its first page."
            state.page -= 1
        else:
            raise NotFoundError(
                f"actionId {action_id!r} is not available on grid {grid.name}; use {LOAD_NEXT_PAGE} or "
                f"{LOAD_PREVIOUS_PAGE}."
            )
        first = state.page * PAGE_SIZE + 1
        return f"Grid {grid.name} now shows rows {first}-{min(total, first + PAGE_SIZE - 1)} of {total}."

    def filter_grid(self, session: FormHost, form: OpenForm, grid_name: str, column: str, value: str) -> str:
        grid = self.grid(session, form, grid_name)
        column = _column_name(grid, column)
        state = form.grid_state(grid.name)
        state.page = 0
        if value:
            state.filters[column] = value
        else:
            state.filters.pop(column, None)
        _, _, total = self.page_rows(form, grid)
        return f"Grid {grid.name} was filtered: {total} matching row(s)."

    def sort_grid(self, session: FormHost, form: OpenForm, grid_name: str, column: str, descending: bool) -> str:
        grid = self.grid(session, form, grid_name)
        column = _column_name(grid, column)
        state = form.grid_state(grid.name)
        state.sort, state.page = (column, descending), 0
        return f"Grid {grid.name} was sorted by {column} {'descending' if descending else 'ascending'}."

    def toggle_section(self, session: FormHost, form: OpenForm, name: str, action: str) -> str:
        sections = {s.name.lower(): s for s in self.all_sections(session, form) if s.kind in COLLAPSIBLE_TYPES}
        if name.lower() not in sections:
            raise NotFoundError(
                f"Tab {name!r} does not exist on form {self.name}. Tabs: {', '.join(s.name for s in sections.values()) or 'none'}."
            )
        section = sections[name.lower()]
        if action.lower() == "open":
            form.collapsed.discard(section.name)
            return f"Tab {section.name} was opened."
        if action.lower() == "close":
            form.collapsed.add(section.name)
            return f"Tab {section.name} was closed."
        raise ValidationError(f"tabAction: expected Open or Close, got {action!r}.")


def filter_rows(grid: Grid, rows: Sequence[GridRow], filters: dict[str, str]) -> Sequence[GridRow]:
    """Those of ``rows`` (the grid's) that every column filter (column -> case-insensitive "contains") finds."""
    for column, text in filters.items():
        needle = text.lower()
        if _is_amount(grid, column):  # an amount as typed (1053.66) finds the one shown as 1,053.66
            rows = [
                r for r in rows if needle in (shown := r.values.get(column, "")).replace(",", "") or needle in shown
            ]
        else:
            rows = [r for r in rows if needle in r.values.get(column, "").lower()]
    return rows


def quick_filter_control(form: OpenForm) -> Control:
    """A list form's filter box (``QuickFilter``): typing in it filters the primary grid, as form_filter_form does."""
    return Control(
        QUICK_FILTER,
        "Filter",
        INPUT,
        form.quick_filter,
        editable=True,
        help="Type to filter all columns of the grid (form_filter_form).",
    )


def _column_name(grid: Grid, column: str) -> str:
    """The column's canonical name, matched case-insensitively, or NotFound listing the columns."""
    names = {c.name.lower(): c.name for c in grid.columns}
    if column.lower() not in names:
        raise NotFoundError(
            f"Column {column!r} does not exist in grid {grid.name}. Columns: {', '.join(names.values())}."
        )
    return names[column.lower()]


def _is_amount(grid: Grid, column: str) -> bool:
    return any(c.name == column and c.data_type == "Real" for c in grid.columns)


def _sort_key(value: str, data_type: str) -> tuple[int, float, str]:
    if data_type == "Real":
        try:
            return (0, float(value.replace(",", "")), "")
        except ValueError:
            return (1, 0.0, value)
    return (0, 0.0, value.lower())


# --- rendering -------------------------------------------------------------------------------
def render_control(control: Control, verbose: bool) -> dict[str, Any]:
    if not verbose:
        out = {NAME: control.name, VALUE: control.value}
        if control.editable:
            out[IS_EDITABLE] = True
        return out
    out = {
        NAME: control.name,
        LABEL: control.label,
        VALUE: control.value,
        IS_ENABLED: True,
        IS_EDITABLE: control.editable,
        IS_REQUIRED: control.required,
        IS_VISIBLE: True,
        HELP_TEXT: control.help,
        DATA_FIELD: control.data_field,
    }
    if control.options is not None:
        out[OPTIONS] = control.options
    return out


def render_grid(definition: FormDefinition, form: OpenForm, grid: Grid, verbose: bool) -> dict[str, Any]:
    rows, first, total = definition.page_rows(form, grid)
    state = form.grid_state(grid.name)
    rendered_rows = []
    for offset, row in enumerate(rows):
        item: dict[str, Any] = {ROW_NUMBER: str(first + offset)}
        if row.key == state.selected_key:
            item[IS_SELECTED] = True
        if row.key in state.marked:
            item[IS_MARKED] = True
        item[VALUES] = row.values
        rendered_rows.append(item)
    has_next = first + len(rows) - 1 < total
    out: dict[str, Any] = {NAME: grid.name, LABEL: grid.label} if verbose else {NAME: grid.name}
    if verbose:
        out[COLUMNS] = [
            {NAME: c.name, LABEL: c.label, DATA_TYPE: c.data_type, IS_SORTABLE: True, IS_FILTERABLE: True}
            for c in grid.columns
        ]
    else:
        out[COLUMNS] = [c.name for c in grid.columns]
    out[ROWS] = rendered_rows
    out[PAGINATION] = {
        FIRST_ROW: first if rows else 0,
        LAST_ROW: first + len(rows) - 1 if rows else 0,
        TOTAL_ROWS: total,
        PAGE_SIZE_KEY: PAGE_SIZE,
        HAS_NEXT_PAGE: has_next,
    }
    if verbose or has_next:
        out[ACTION_IDS] = ([LOAD_NEXT_PAGE] if has_next else []) + ([LOAD_PREVIOUS_PAGE] if state.page > 0 else [])
    if state.filters:
        out[FILTERS] = dict(state.filters)
    if state.sort and verbose:
        out[SORTED_BY] = {COLUMN: state.sort[0], DESCENDING: state.sort[1]}
    return out


def render_children(definition: FormDefinition, form: OpenForm, section: Section, verbose: bool) -> dict[str, Any]:
    children: dict[str, Any] = {}
    for control in section.controls:
        children.setdefault(control.kind, []).append(render_control(control, verbose))
    if section.grids:
        children[GRID] = [render_grid(definition, form, g, verbose) for g in section.grids]
    return children


def render_form_state(session: FormHost, form: OpenForm, definition: FormDefinition, verbose: bool) -> dict[str, Any]:
    body: dict[str, Any] = {}
    tab_pages = []
    for section in definition.all_sections(session, form):
        expanded = section.name not in form.collapsed
        rendered: dict[str, Any] = {NAME: section.name, LABEL: section.label} if verbose else {NAME: section.name}
        if section.kind in COLLAPSIBLE_TYPES:
            rendered[IS_EXPANDED] = expanded
        if expanded:
            rendered[CHILDREN] = render_children(definition, form, section, verbose)
        if section.kind == TAB_PAGE:
            tab_pages.append(rendered)
        else:
            body.setdefault(section.kind, []).append(rendered)
    if tab_pages:
        body.setdefault(TAB, []).append({NAME: f"{definition.name}Tab", CHILDREN: {TAB_PAGE: tab_pages}})
    buttons = definition.buttons(session, form)
    state: dict[str, Any] = {
        NAME: definition.name,
        CAPTION: definition.caption(session, form),
        COMPANY: session.company,
        SUMMARY: definition.summary(session, form),
        FORM: body,
    }
    if verbose:
        state[BUTTONS] = [{NAME: b.name, LABEL: b.label, IS_ENABLED: b.enabled, HELP_TEXT: b.help} for b in buttons]
        state[LINKS] = [{LABEL: label, MENU_ITEM_NAME: item} for label, item in definition.links]
        state[GUIDANCE] = list(definition.guidance)
        state[NAVIGATION_PATH] = [f.name for f in session.forms]
        state[HAS_UNSAVED_CHANGES] = definition.has_unsaved_changes(form)
    else:
        state[BUTTONS] = [b.name for b in buttons if b.enabled]
        if definition.has_unsaved_changes(form):
            state[HAS_UNSAVED_CHANGES] = True
    return state
