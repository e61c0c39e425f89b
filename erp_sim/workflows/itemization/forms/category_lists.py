"""TrvCostType and TrvExpSubCategory: read-only setup lists of categories and subcategories."""

from __future__ import annotations

from erp_sim.forms.base import Column, FormDefinition, FormHost, Grid, GridRow, OpenForm, Section


class CategoryList(FormDefinition):
    name = "TrvCostType"
    menu_item = "TrvCostType"
    primary_grid = "CategoriesGrid"
    guidance = ["Expense categories (cost types). Itemize = Yes means lines of the category must be itemized."]

    def caption(self, session: FormHost, form: OpenForm) -> str:
        return "Expense categories"

    def sections(self, session: FormHost, form: OpenForm) -> list[Section]:
        rows = [
            GridRow(
                r["id"],
                {
                    "TrvCostType_CostType": r["category_id"],
                    "TrvCostType_Name": r["name"],
                    "TrvCostType_Itemize": "Yes" if r["itemize"] else "No",
                },
            )
            for r in session.db.execute("SELECT * FROM expense_category ORDER BY category_id")
        ]
        columns = [
            Column("TrvCostType_CostType", "Category"),
            Column("TrvCostType_Name", "Name"),
            Column("TrvCostType_Itemize", "Itemize"),
        ]
        return [
            Section(
                "CategoriesGroup", "Categories", grids=[Grid("CategoriesGrid", "Expense categories", columns, rows)]
            )
        ]


class SubcategoryList(FormDefinition):
    name = "TrvExpSubCategory"
    menu_item = "TrvExpSubCategory"
    primary_grid = "SubcategoriesGrid"
    guidance = ["Expense subcategories per category. Filter by TrvExpSubCategory_CostType to see one category."]

    def caption(self, session: FormHost, form: OpenForm) -> str:
        return "Expense subcategories"

    def sections(self, session: FormHost, form: OpenForm) -> list[Section]:
        rows = [
            GridRow(r["id"], {"TrvExpSubCategory_CostType": r["category_id"], "TrvExpSubCategory_Name": r["name"]})
            for r in session.db.execute("SELECT * FROM expense_subcategory ORDER BY category_id, id")
        ]
        columns = [Column("TrvExpSubCategory_CostType", "Category"), Column("TrvExpSubCategory_Name", "Subcategory")]
        return [
            Section(
                "SubcategoriesGroup",
                "Subcategories",
                grids=[Grid("SubcategoriesGrid", "Expense subcategories", columns, rows)],
            )
        ]
