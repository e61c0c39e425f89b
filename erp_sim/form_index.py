"""A FormState's grids and controls by name, from one walk of its tree: what a client reading responses looks up.

For the scripted agent and a workflow's reading of its own forms (``erp_sim.workflows.<name>.scripted``):
``erp_sim.formstate``'s look-ups walk the tree once each; an index walks it once for all of them.
"""

from __future__ import annotations

from collections import OrderedDict
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any, NamedTuple

from erp_sim import formstate
from erp_sim import response_keys as K

PAGE_ROWS = 25  # the ERP's grid page, as the agent's prompt states it
READ_CACHE_SIZE = 4096  # texts whose reading is kept (an episode shows a few hundred)


def read_money(text: object) -> str | None:
    """An amount as shown ("1,234.5") as two-decimal text ("1234.50"), or None when it is not one."""
    return _money(str(text))


@lru_cache(maxsize=READ_CACHE_SIZE)  # every call re-reads the grid rows it is shown: the same few amounts
def _money(text: str) -> str | None:
    try:
        return str(Decimal(text.replace(",", "")).quantize(Decimal("0.01")))
    except (InvalidOperation, ValueError):
        return None


def row_index(number: object) -> int:
    """A grid row's number ("12") as an int; 0 when it is not one."""
    return int(number) if isinstance(number, str) and number.isdigit() else 0


class FormIndex(NamedTuple):
    """A FormState's grids and controls by name, from one walk of its tree: what ``erp_sim.formstate``'s
    look-ups (a walk each) find, for names that are strings."""

    grids: dict[str, dict[str, Any]]  # the last grid of each name (``formstate.grids``)
    first_grids: dict[str, dict[str, Any]]  # the first (``formstate.find_grid``, ``grid_rows``, ``has_next_page``)
    controls: dict[
        str, dict[str, Any]
    ]  # the first control or container (``formstate.find_control``, ``control_value``)

    def grid_rows(self, name: str) -> list[dict[str, Any]]:
        """``formstate.grid_rows``'s rows (a row's values plus its ``RowNumber``)."""
        return formstate.grid_row_dicts(self.first_grids.get(name))

    def first_row(self, name: str) -> int:
        """The row number of the grid's first row on the page shown (0: none)."""
        grid = self.first_grids.get(name) or {}
        row = next((row for row in grid.get(K.ROWS) or [] if isinstance(row, dict)), None)
        return row_index(row.get(K.ROW_NUMBER)) if row is not None else 0

    def has_next_page(self, name: str) -> bool:
        return formstate.grid_has_next_page(self.first_grids.get(name))

    def control_value(self, name: str) -> Any:
        control = self.controls.get(name)
        return control.get(K.VALUE) if control else None

    def control_text(self, name: str) -> str | None:
        """``formstate.control_text``: the control's value as text, None when the form has no such control."""
        control = self.controls.get(name)
        return None if control is None else formstate.text_of(control.get(K.VALUE))


def index_form(state: dict[str, Any] | None) -> FormIndex:
    grids: dict[str, dict[str, Any]] = {}
    first_grids: dict[str, dict[str, Any]] = {}
    controls: dict[str, dict[str, Any]] = {}
    for kind, control in formstate.walk_controls((state or {}).get(K.FORM)):
        name = control.get(K.NAME)
        if not isinstance(name, str):  # looked up by string names only
            continue
        if kind == K.GRID:
            grids[name] = control
            first_grids.setdefault(name, control)
        else:
            controls.setdefault(name, control)
    return FormIndex(grids, first_grids, controls)


NO_FORM = index_form(None)

# state id -> (the state, its index): holding the state keeps its id from being reused while the entry lives
_INDEXES: OrderedDict[int, tuple[dict[str, Any], FormIndex]] = OrderedDict()


def form_index_of(state: dict[str, Any]) -> FormIndex:
    """``index_form(state)``, walked once per FormState object for every reader of it: the scripted agent and a
    summarizer read the same responses (``formstate.parse_response`` hands out one parsed object per text), so
    the second reader's look-ups cost no walk. The index holds the controls themselves; like the parsed response
    it must not be changed, nor the state's tree once indexed."""
    entry = _INDEXES.get(id(state))
    if entry is not None and entry[0] is state:
        try:
            _INDEXES.move_to_end(id(state))
        except KeyError:  # evicted meanwhile by another thread's reading: the index is still this state's
            pass
        return entry[1]
    index = index_form(state)
    _INDEXES[id(state)] = (state, index)
    while len(_INDEXES) > READ_CACHE_SIZE:
        _INDEXES.popitem(last=False)
    return index
