"""The tool registry: the 22 tool names of the Dynamics 365 ERP MCP server, defined once.

Each tool is a pydantic argument model (its JSON schema is what every front end shows:
the Gymnasium env's OpenAI function list, the MCP server's input schemas, the docs) plus
one implementation ``fn(session, args) -> Outcome``. Implementations raise ``ErpError``s;
``ErpSession.call`` turns them into error responses. Parameter names follow the ones seen
in public clients of the real server; where those are unknown we chose names in the same
style (``gridColumnName``, ``filterValue``, ``controlValues``, ``sqlQuery``, ``entities``,
``keys``, ``actionName``, ``parameters``), documented in each model.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StringConstraints

from erp_sim import actions, odata
from erp_sim.database import sql_sandbox
from erp_sim.errors import FormStateError, NotFoundError, ValidationError
from erp_sim.forms.base import FormHost

# The data tools import erp_sim.odata (and the SQL tool its sandbox) in their bodies, at their first call, with
# the workflow's entity sets (``Workflow.data``): about 10 ms that gym.make, --help and an episode of form tools
# need not pay (scripts/bench_startup.py).

if TYPE_CHECKING:
    from erp_sim.forms.base import FormDefinition, OpenForm
    from erp_sim.json_values import JsonObject
    from erp_sim.workflows import Workflow

Name = Annotated[str, StringConstraints(min_length=1, max_length=200)]
Text = Annotated[str, StringConstraints(max_length=2000)]
Scalar = str | int | float | bool | None


class ToolHost(FormHost, Protocol):
    """What the tools need of the session that runs them (``erp_sim.erp_session.ErpSession``): the forms'
    host, the workflow whose forms, menu items, entity sets and actions it holds, and closing a form.

    Tools depend on this protocol, not on the session module, so the session can import the tools."""

    workflow: Workflow[Any]

    def close_form(self) -> str: ...


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False, defer_build=True)


A = TypeVar("A", bound=Args)


@dataclass
class Outcome:
    """What a tool did: the ``Result`` line and any payload beside the form state."""

    result: str
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolSpec:
    """A tool as a model is shown it: the ERP's (``Tool``) and the harness's own (the memory tools)."""

    name: str
    description: str  # its handler's docstring on one line (``described``)
    args_model: type[BaseModel]

    @property
    def input_schema(self) -> dict[str, Any]:
        """A fresh copy: callers (fastmcp, env infos) may edit what they get."""
        return copy.deepcopy(args_schema(self.args_model))

    @property
    def openai_schema(self) -> dict[str, Any]:
        """The OpenAI function-tool form (what the env's ``info["tools"]`` carries)."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.input_schema},
        }


def described(fn: Callable[..., Any]) -> str:
    """A tool's description: its handler's docstring, on one line."""
    return " ".join((fn.__doc__ or "").split())


@dataclass(frozen=True)
class Tool(ToolSpec):
    fn: Callable[[ToolHost, Any], Outcome]
    read_only: bool


@cache
def args_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of a tool's argument model without pydantic's titles, as tool lists show it (cached:
    callers that may edit it take a copy; the harness's own tools use it too)."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema


TOOLS: dict[str, Tool] = {}


def tool(
    name: str, args_model: type[A], *, read_only: bool
) -> Callable[[Callable[[ToolHost, A], Outcome]], Callable[[ToolHost, A], Outcome]]:
    """Register ``fn`` under ``name``; its docstring is the tool description. Returns fn unchanged."""

    def register(fn: Callable[[ToolHost, A], Outcome]) -> Callable[[ToolHost, A], Outcome]:
        TOOLS[name] = Tool(name, described(fn), args_model, fn, read_only)
        return fn

    return register


def _top(session: ToolHost) -> tuple[OpenForm, FormDefinition]:
    if not session.forms:
        raise FormStateError("No form is open. Open one with form_open_menu_item (find it with form_find_menu_item).")
    form = session.forms[-1]
    return form, session.workflow.forms[form.name]


def _check_company(session: ToolHost, company_id: str | None) -> None:
    if company_id and company_id.strip().upper() != session.company:
        raise NotFoundError(
            f"Company {company_id!r} does not exist or you have no access; available: {session.company}."
        )


# --- form tools ------------------------------------------------------------------------------
class FindMenuItemArgs(Args):
    menuItemFilter: Name = Field(description="Text to search in menu item names, labels and navigation paths.")
    companyId: Name | None = Field(None, description="Legal entity (data area) id, e.g. USMF.")
    topHitCount: StrictInt = Field(10, ge=1, le=50, description="Maximum number of menu items returned.")


@tool("form_find_menu_item", FindMenuItemArgs, read_only=True)
def form_find_menu_item(session: ToolHost, args: FindMenuItemArgs) -> Outcome:
    """Find menu items (forms) by name, label or navigation path. Returns their names, labels and types."""
    _check_company(session, args.companyId)
    words = args.menuItemFilter.lower().split()
    hits = [
        {"Name": name, "Label": label, "Type": kind, "NavigationPath": path}
        for name, (label, kind, path, _) in session.workflow.menu_items.items()
        if all(w in f"{name} {label} {path}".lower() for w in words)
    ]
    return Outcome(
        f"Found {len(hits[: args.topHitCount])} menu item(s) matching {args.menuItemFilter!r}.",
        {"MenuItems": hits[: args.topHitCount]},
    )


class OpenMenuItemArgs(Args):
    name: Name = Field(description="Menu item name, as returned by form_find_menu_item (e.g. TrvExpenses).")
    type: Name = Field("Display", description="Menu item type: Display (opens a form), Action or Output.")
    companyId: Name | None = Field(None, description="Legal entity (data area) id, e.g. USMF.")


@tool("form_open_menu_item", OpenMenuItemArgs, read_only=True)
def form_open_menu_item(session: ToolHost, args: OpenMenuItemArgs) -> Outcome:
    """Open a menu item: the form it points to is opened on top of the navigation stack and its state returned."""
    _check_company(session, args.companyId)
    menu_items = session.workflow.menu_items
    match = next((n for n in menu_items if n.lower() == args.name.lower()), None)
    if match is None:
        raise NotFoundError(f"Menu item {args.name!r} does not exist. Use form_find_menu_item to search.")
    _label, kind, _, form_name = menu_items[match]
    if args.type.lower() != kind.lower():
        raise ValidationError(f"type: menu item {match} is of type {kind}, not {args.type}.")
    return Outcome(session.open_form(form_name, {}))


class FindControlsArgs(Args):
    controlSearchTerm: Name = Field(description="Text to search in control names and labels of the open form.")


@tool("form_find_controls", FindControlsArgs, read_only=True)
def form_find_controls(session: ToolHost, args: FindControlsArgs) -> Outcome:
    """Find controls on the open form whose name or label contains the search term, with their values."""
    form, definition = _top(session)
    term = args.controlSearchTerm.lower()
    hits = [
        {"Name": c.name, "Label": c.label, "Type": c.kind, "Value": c.value, "IsEditable": c.editable}
        for c in definition.controls(session, form)
        if term in c.name.lower() or term in c.label.lower()
    ]
    return Outcome(f"Found {len(hits)} control(s) matching {args.controlSearchTerm!r}.", {"Controls": hits})


class ControlValue(Args):
    controlName: Name = Field(description="Control name, e.g. TrvExpTrans_AmountCurr.")
    value: Annotated[str, StringConstraints(max_length=2000)] | int | float | bool | None = Field(
        description="New value. Amounts accept a number or a numeric string; dates YYYY-MM-DD."
    )


class SetControlValuesArgs(Args):
    controlValues: list[ControlValue] = Field(
        min_length=1, max_length=50, description="Controls and the values to set, applied in order."
    )


@tool("form_set_control_values", SetControlValuesArgs, read_only=False)
def form_set_control_values(session: ToolHost, args: SetControlValuesArgs) -> Outcome:
    """Set values of controls on the open form. Values stay unsaved until form_save_form. All or nothing: if one value is invalid, none is set."""
    form, definition = _top(session)
    snapshot = form.snapshot()
    controls = {c.name.lower(): c for c in definition.controls(session, form)}  # looked up once per call
    try:
        for item in args.controlValues:
            control = controls.get(item.controlName.lower()) or definition.control(session, form, item.controlName)
            if not control.editable:
                raise FormStateError(f"Control {control.name} is read-only on form {definition.name}.")
            definition.set_value(session, form, control, item.value)
    except Exception:
        form.restore(snapshot)
        raise
    names = ", ".join(item.controlName for item in args.controlValues)
    return Outcome(f"The value(s) of {names} were set.")


class ClickControlArgs(Args):
    controlName: Name = Field(description="Button or grid name, e.g. NewLine or ExpenseReportsGrid.")
    actionId: Name | None = Field(None, description="Grid action, e.g. LoadNextPage or LoadPreviousPage.")


@tool("form_click_control", ClickControlArgs, read_only=False)
def form_click_control(session: ToolHost, args: ClickControlArgs) -> Outcome:
    """Click a button on the open form, or run a grid action (actionId LoadNextPage / LoadPreviousPage) on a grid."""
    form, definition = _top(session)
    if args.actionId:
        return Outcome(definition.grid_action(session, form, args.controlName, args.actionId))
    button = next((b for b in definition.buttons(session, form) if b.name.lower() == args.controlName.lower()), None)
    if button is None:
        names = ", ".join(b.name for b in definition.buttons(session, form)) or "none"
        raise NotFoundError(f"Button {args.controlName!r} does not exist on form {definition.name}. Buttons: {names}.")
    if not button.enabled:
        raise FormStateError(f"Button {button.name} is disabled: {button.disabled_reason or button.help}")
    result = definition.click(session, form, button.name)
    return Outcome(f"Button {button.name} was clicked. {result}")


class SelectGridRowArgs(Args):
    gridName: Name = Field(description="Grid name, e.g. ExpenseLinesGrid.")
    rowNumber: Annotated[str, StringConstraints(min_length=1, max_length=12)] = Field(
        description="Row number as a string, as shown in the grid's RowNumber (1-based over all pages)."
    )
    marking: Literal["Marked", "Unmarked"] | None = Field(None, description="Also mark or unmark the row's check box.")


@tool("form_select_grid_row", SelectGridRowArgs, read_only=True)
def form_select_grid_row(session: ToolHost, args: SelectGridRowArgs) -> Outcome:
    """Select a row of a grid on the open form; detail controls then show the selected record."""
    form, definition = _top(session)
    return Outcome(definition.select_row(session, form, args.gridName, args.rowNumber, args.marking))


class FilterGridArgs(Args):
    gridName: Name = Field(description="Grid name.")
    gridColumnName: Name = Field(description="Column (control) name to filter on, e.g. TrvExpTable_ExpNumber.")
    filterValue: Text = Field(
        "", description="Rows whose column contains this text (case-insensitive) are kept; empty clears the filter."
    )


@tool("form_filter_grid", FilterGridArgs, read_only=True)
def form_filter_grid(session: ToolHost, args: FilterGridArgs) -> Outcome:
    """Filter a grid on one column (contains, case-insensitive). An empty filterValue removes the column's filter."""
    form, definition = _top(session)
    return Outcome(definition.filter_grid(session, form, args.gridName, args.gridColumnName, args.filterValue))


class FilterFormArgs(Args):
    filterValue: Text = Field(
        description="Text to match in any column of the form's main grid; empty clears the filter."
    )


@tool("form_filter_form", FilterFormArgs, read_only=True)
def form_filter_form(session: ToolHost, args: FilterFormArgs) -> Outcome:
    """Apply the form's quick filter: keep rows of the main grid with the text in any column."""
    form, definition = _top(session)
    if definition.primary_grid is None:
        raise FormStateError(
            f"Form {definition.name} has no filterable list; use form_filter_grid on one of its grids."
        )
    form.quick_filter = args.filterValue
    form.grid_state(definition.primary_grid).page = 0
    _, _, total = definition.page_rows(form, definition.grid(session, form, definition.primary_grid))
    return Outcome(f"The form was filtered: {total} matching row(s).")


class SortGridArgs(Args):
    gridName: Name = Field(description="Grid name.")
    gridColumnName: Name = Field(description="Column to sort by.")
    isDescending: StrictBool = Field(False, description="Sort descending instead of ascending.")


@tool("form_sort_grid_column", SortGridArgs, read_only=True)
def form_sort_grid_column(session: ToolHost, args: SortGridArgs) -> Outcome:
    """Sort a grid by one column."""
    form, definition = _top(session)
    return Outcome(definition.sort_grid(session, form, args.gridName, args.gridColumnName, args.isDescending))


class TabArgs(Args):
    tabName: Name = Field(description="Tab page or fast tab name, e.g. LineDetailsFastTab.")
    tabAction: Literal["Open", "Close"] = Field(description="Open (expand) or Close (collapse).")


@tool("form_open_or_close_tab", TabArgs, read_only=True)
def form_open_or_close_tab(session: ToolHost, args: TabArgs) -> Outcome:
    """Expand or collapse a tab page or fast tab; collapsed tabs hide their controls from the form state."""
    form, definition = _top(session)
    return Outcome(definition.toggle_section(session, form, args.tabName, args.tabAction))


class LookupArgs(Args):
    controlName: Name = Field(description="Control with a lookup, e.g. TrvExpTrans_ExpSubCategory.")


@tool("form_open_lookup", LookupArgs, read_only=True)
def form_open_lookup(session: ToolHost, args: LookupArgs) -> Outcome:
    """Show the values a lookup control accepts."""
    form, definition = _top(session)
    control = definition.control(session, form, args.controlName)
    if control.options is None:
        raise FormStateError(f"Control {control.name} has no lookup.")
    return Outcome(
        f"Lookup of {control.name} opened: {len(control.options)} value(s).",
        {"Lookup": {"ControlName": control.name, "Values": list(control.options)}},
    )


class NoArgs(Args):
    pass


@tool("form_save_form", NoArgs, read_only=False)
def form_save_form(session: ToolHost, args: NoArgs) -> Outcome:
    """Save the unsaved changes of the open form (all or nothing)."""
    form, definition = _top(session)
    return Outcome(definition.save(session, form))


@tool("form_close_form", NoArgs, read_only=False)
def form_close_form(session: ToolHost, args: NoArgs) -> Outcome:
    """Close the open form and return to the previous one. With unsaved changes the first close is refused with a warning; closing again discards them."""
    return Outcome(session.close_form())


# --- data tools ------------------------------------------------------------------------------
class FindEntityTypeArgs(Args):
    tableSearchFilter: Name = Field(description="Text to search in entity set names, labels and table names.")
    topHitCount: StrictInt = Field(10, ge=1, le=50, description="Maximum number of entity sets returned.")


@tool("data_find_entity_type", FindEntityTypeArgs, read_only=True)
def data_find_entity_type(session: ToolHost, args: FindEntityTypeArgs) -> Outcome:
    """Find OData entity sets by name or label."""
    hits = odata.find_entity_sets(session.workflow.data(), args.tableSearchFilter)[: args.topHitCount]
    return Outcome(f"Found {len(hits)} entity set(s) matching {args.tableSearchFilter!r}.", {"EntitySets": hits})


class EntityMetadataArgs(Args):
    entitySetName: Name = Field(description="Entity set name, e.g. ExpenseLines.")


@tool("data_get_entity_metadata", EntityMetadataArgs, read_only=True)
def data_get_entity_metadata(session: ToolHost, args: EntityMetadataArgs) -> Outcome:
    """Describe an entity set: key, properties with types and descriptions, and the rules for writes."""
    metadata = odata.entity_metadata(session.workflow.data(), args.entitySetName)
    return Outcome(f"Metadata of {metadata['Name']}.", {"Metadata": metadata})


class FindEntitiesArgs(Args):
    odataPath: Annotated[str, StringConstraints(min_length=1, max_length=2000)] = Field(
        description="Entity set, optionally with a key or query: ExpenseLines, ExpenseLines(1234), ExpenseLines?$filter=..."
    )
    odataQueryOptions: Text | None = Field(
        None, description="OData query options: $filter, $select, $orderby, $top, $skip, $count."
    )


@tool("data_find_entities", FindEntitiesArgs, read_only=True)
def data_find_entities(session: ToolHost, args: FindEntitiesArgs) -> Outcome:
    """Query an entity set with OData options ($filter with eq/ne/gt/ge/lt/le, and/or/not, contains/startswith; $select; $orderby; $top; $skip; $count)."""
    payload = odata.find_entities(session.workflow.data(), session.db, args.odataPath, args.odataQueryOptions)
    return Outcome(f"Found {len(payload['value'])} record(s) in {payload['EntitySet']}.", {"Data": payload})


class FindEntitiesSqlArgs(Args):
    sqlQuery: Annotated[str, StringConstraints(min_length=1, max_length=4000)] = Field(
        description="One read-only SELECT over the tables company, worker, expense_category, expense_subcategory, expense_report, expense_line, receipt, receipt_item."
    )


@tool("data_find_entities_sql", FindEntitiesSqlArgs, read_only=True)
def data_find_entities_sql(session: ToolHost, args: FindEntitiesSqlArgs) -> Outcome:
    """Run one read-only SQL SELECT on the expense tables (at most 200 rows)."""
    payload = sql_sandbox.run_sql(session.db, args.sqlQuery)
    return Outcome(f"The query returned {len(payload['Rows'])} row(s).", {"Data": payload})


Entity = dict[str, Scalar]


def _write_entities(
    session: ToolHost, args: CreateEntitiesArgs | UpdateEntitiesArgs, write: Callable[..., list[JsonObject]], verb: str
) -> Outcome:
    """A data write tool's call: ``write`` (``odata.create_entities`` or ``update_entities``) the entities, and
    answer how many records it wrote, and them (their properties after the write)."""
    records = write(session.workflow.data(), session.db, args.entitySetName, args.entities)
    return Outcome(f"{len(records)} record(s) {verb} in {args.entitySetName}.", {"Data": {"value": records}})


class CreateEntitiesArgs(Args):
    entitySetName: Name = Field(description="Entity set name, e.g. ExpenseLines.")
    entities: list[Entity] = Field(min_length=1, max_length=50, description="Records to create (property -> value).")


@tool("data_create_entities", CreateEntitiesArgs, read_only=False)
def data_create_entities(session: ToolHost, args: CreateEntitiesArgs) -> Outcome:
    """Create records under the same business rules as the forms (all or nothing)."""
    return _write_entities(session, args, odata.create_entities, "created")


class UpdateEntitiesArgs(Args):
    entitySetName: Name = Field(description="Entity set name.")
    entities: list[Entity] = Field(
        min_length=1,
        max_length=50,
        description="Records to update: each has its key (RecId) and the properties to change.",
    )


@tool("data_update_entities", UpdateEntitiesArgs, read_only=False)
def data_update_entities(session: ToolHost, args: UpdateEntitiesArgs) -> Outcome:
    """Update records under the same business rules as the forms (all or nothing)."""
    return _write_entities(session, args, odata.update_entities, "updated")


class DeleteEntitiesArgs(Args):
    entitySetName: Name = Field(description="Entity set name.")
    keys: list[StrictInt] = Field(min_length=1, max_length=50, description="RecIds of the records to delete.")


@tool("data_delete_entities", DeleteEntitiesArgs, read_only=False)
def data_delete_entities(session: ToolHost, args: DeleteEntitiesArgs) -> Outcome:
    """Delete records under the same business rules as the forms (all or nothing)."""
    odata.delete_entities(session.workflow.data(), session.db, args.entitySetName, args.keys)
    return Outcome(f"{len(args.keys)} record(s) deleted from {args.entitySetName}.")


# --- action tools ----------------------------------------------------------------------------
class FindActionsArgs(Args):
    actionSearchFilter: Text = Field(
        "", description="Text to search in action names and descriptions; empty lists all."
    )


@tool("api_find_actions", FindActionsArgs, read_only=True)
def api_find_actions(session: ToolHost, args: FindActionsArgs) -> Outcome:
    """Find callable business actions and their parameters."""
    hits = actions.find_actions(session.workflow.actions, args.actionSearchFilter)
    return Outcome(f"Found {len(hits)} action(s).", {"Actions": hits})


class InvokeActionArgs(Args):
    actionName: Name = Field(description="Action name, as returned by api_find_actions.")
    parameters: dict[str, Scalar] = Field(default_factory=dict, description="Action parameters (name -> value).")


@tool("api_invoke_action", InvokeActionArgs, read_only=False)
def api_invoke_action(session: ToolHost, args: InvokeActionArgs) -> Outcome:
    """Invoke a business action with parameters."""
    result, payload = actions.invoke_action(session.workflow.actions, session.db, args.actionName, args.parameters)
    return Outcome(result, {"ActionResult": payload})


assert len(TOOLS) == 22, sorted(TOOLS)


def openai_tool_schemas() -> list[dict[str, Any]]:
    """The registry in OpenAI function-tool form (what the env's ``info["tools"]`` carries)."""
    return [t.openai_schema for t in TOOLS.values()]
