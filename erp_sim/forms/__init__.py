"""The simulated D365 forms and the menu items that open them."""

from __future__ import annotations

from erp_sim.forms.base import FormDefinition, OpenForm
from erp_sim.forms.category_lists import CategoryList, SubcategoryList
from erp_sim.forms.expense_list import ExpenseReportList
from erp_sim.forms.expense_report import ExpenseReportForm
from erp_sim.forms.itemization import ItemizationForm
from erp_sim.forms.receipt_viewer import ReceiptViewer

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

# Menu items: name -> (label, type, navigation path, form). Only items that really open a form.
MENU_ITEMS: dict[str, tuple[str, str, str, str]] = {
    "TrvExpenses": ("Expense reports", "Display", "Expense management > My expenses > Expense reports", "TrvExpenses"),
    "TrvCostType": ("Expense categories", "Display", "Expense management > Setup > Expense categories", "TrvCostType"),
    "TrvExpSubCategory": (
        "Expense subcategories",
        "Display",
        "Expense management > Setup > Expense subcategories",
        "TrvExpSubCategory",
    ),
}

__all__ = ["FORMS", "MENU_ITEMS", "FormDefinition", "OpenForm"]
