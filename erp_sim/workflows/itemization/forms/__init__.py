"""Itemization's forms (D365 Expense management) and the menu items that open them."""

from __future__ import annotations

from erp_sim.forms.base import FormDefinition, MenuItem
from erp_sim.workflows.itemization.forms.category_lists import CategoryList, SubcategoryList
from erp_sim.workflows.itemization.forms.expense_list import ExpenseReportList
from erp_sim.workflows.itemization.forms.expense_report import ExpenseReportForm
from erp_sim.workflows.itemization.forms.itemization import ItemizationForm
from erp_sim.workflows.itemization.forms.receipt_viewer import ReceiptViewer

FORMS: dict[str, FormDefinition] = {
    form.name: form
    for form in [
        ExpenseReportList(),
        ExpenseReportForm(),
        ReceiptViewer(),
        ItemizationForm(),
        CategoryList(),
        SubcategoryList(),
    ]
}

# Menu items: name -> what it opens. Only items that really open a form.
MENU_ITEMS: dict[str, MenuItem] = {
    "TrvExpenses": MenuItem(
        "Expense reports", "Display", "Expense management > My expenses > Expense reports", "TrvExpenses"
    ),
    "TrvCostType": MenuItem(
        "Expense categories", "Display", "Expense management > Setup > Expense categories", "TrvCostType"
    ),
    "TrvExpSubCategory": MenuItem(
        "Expense subcategories", "Display", "Expense management > Setup > Expense subcategories", "TrvExpSubCategory"
    ),
}
