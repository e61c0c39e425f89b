"""The keys of the ERP's response JSON, named once for the writer and every reader.

A rename on one side must fail loudly on the other (an unknown constant), not silently
read nothing: the envelope (``erp_sim.response``), the form renderer (``erp_sim.forms``)
and the readers (``erp_sim.formstate``, the agents' facts and scripted agent, the terminal
player) share these. Plain module constants: a dict literal built from them costs what one
spelled with string literals does, give or take a global lookup per key.
"""

from __future__ import annotations

# -- the envelope ----------------------------------------------------------------------------
SESSION_ID = "SessionId"
RESULT = "Result"
MESSAGES = "Messages"
LEVEL = "Level"
TEXT = "Text"
ERROR = "Error"
CODE = "Code"
MESSAGE = "Message"
FORM_STATE = "FormState"
ACTIVITY_ID = "MCPActivityId"
DEEP_LINKS = "DeepLinks"
URL = "Url"  # a deep link's address, beside its LABEL
# The envelope's own keys; any other top-level key is the payload of the tool that answered.
ENVELOPE_KEYS = (SESSION_ID, RESULT, MESSAGES, ERROR, FORM_STATE, ACTIVITY_ID, DEEP_LINKS)

# Message levels (an agent must heed the last two).
LEVEL_INFO = "Info"
LEVEL_WARNING = "Warning"
LEVEL_ERROR = "Error"

# -- a FormState -----------------------------------------------------------------------------
NAME = "Name"
CAPTION = "Caption"
COMPANY = "Company"
SUMMARY = "Summary"
FORM = "Form"
BUTTONS = "Buttons"
LINKS = "Links"
MENU_ITEM_NAME = "MenuItemName"  # a link's target
GUIDANCE = "Guidance"
NAVIGATION_PATH = "NavigationPath"
HAS_UNSAVED_CHANGES = "HasUnsavedChanges"
CHILDREN = "Children"
IS_EXPANDED = "IsExpanded"  # a TabPage's or FastTab's

# -- a control (and a button: Name, Label, IsEnabled, HelpText) ------------------------------
VALUE = "Value"
LABEL = "Label"
IS_ENABLED = "IsEnabled"
IS_EDITABLE = "IsEditable"
IS_REQUIRED = "IsRequired"
IS_VISIBLE = "IsVisible"
HELP_TEXT = "HelpText"
DATA_FIELD = "DataField"
OPTIONS = "Options"  # a Combobox's values

# Control kinds under ``Form`` (and a container's ``Children``): each kind is the key of its list.
INPUT = "Input"
REAL_INPUT = "RealInput"
DATE_INPUT = "DateInput"
COMBOBOX = "Combobox"
CHECKBOX = "Checkbox"
CONTROL_KINDS = (INPUT, REAL_INPUT, DATE_INPUT, COMBOBOX, CHECKBOX)
GRID = "Grid"
GROUP = "Group"
TAB = "Tab"
TAB_PAGE = "TabPage"
FAST_TAB = "FastTab"
CONTAINER_TYPES = (GROUP, TAB, TAB_PAGE, FAST_TAB)
COLLAPSIBLE_TYPES = (TAB_PAGE, FAST_TAB)  # the containers form_open_or_close_tab opens and closes

# -- a grid ----------------------------------------------------------------------------------
COLUMNS = "Columns"  # also an SQL result's (erp_sim.database.sql_sandbox), with ``Rows`` as lists of values
ROWS = "Rows"
DATA_TYPE = "DataType"  # a column's (verbose), beside Name and Label
IS_SORTABLE = "IsSortable"
IS_FILTERABLE = "IsFilterable"
ROW_NUMBER = "RowNumber"
IS_SELECTED = "IsSelected"
SELECTED_LEGACY = "Selected"  # older D365 samples' name for IsSelected
IS_MARKED = "IsMarked"
VALUES = "Values"
PAGINATION = "Pagination"
FIRST_ROW = "FirstRow"
LAST_ROW = "LastRow"
TOTAL_ROWS = "TotalRows"
PAGE_SIZE = "PageSize"
HAS_NEXT_PAGE = "HasNextPage"
HAS_PREVIOUS_PAGE = "HasPreviousPage"  # the terminal player reads it; this simulator lists ActionIds instead
ACTION_IDS = "ActionIds"
FILTERS = "Filters"
SORTED_BY = "SortedBy"
COLUMN = "Column"  # of SortedBy
DESCENDING = "Descending"

# Grid action ids (``form_click_control`` on a grid).
LOAD_NEXT_PAGE = "LoadNextPage"
LOAD_PREVIOUS_PAGE = "LoadPreviousPage"
