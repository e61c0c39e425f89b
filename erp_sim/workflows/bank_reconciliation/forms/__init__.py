"""Bank reconciliation's forms (D365 Cash and bank management) and the menu item that opens them."""

from __future__ import annotations

from erp_sim.forms.base import FormDefinition, MenuItem
from erp_sim.workflows.bank_reconciliation import reading as R
from erp_sim.workflows.bank_reconciliation.forms.reconciliation_header import ReconciliationHeader
from erp_sim.workflows.bank_reconciliation.forms.reconciliation_list import ReconciliationList
from erp_sim.workflows.bank_reconciliation.forms.worksheet import Worksheet

FORMS: dict[str, FormDefinition] = {
    form.name: form for form in [ReconciliationList(), ReconciliationHeader(), Worksheet()]
}

# Menu items: name -> what it opens. The header and the worksheet open from the list, as in D365.
MENU_ITEMS: dict[str, MenuItem] = {
    R.LIST_FORM: MenuItem(
        "Bank reconciliation",
        "Display",
        "Cash and bank management > Bank statement reconciliation > Bank reconciliation",
        R.LIST_FORM,
    )
}
