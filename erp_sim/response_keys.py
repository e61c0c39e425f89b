"""The keys of the ERP's response JSON, named once for the writer and every reader.

A rename on one side must fail loudly on the other (an unknown constant), not silently
read nothing: the envelope (``erp_sim.response``), the form renderer (``erp_sim.forms``)
and the readers (``erp_sim.formstate``, the agents' facts and scripted agent) share these.
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

# Message levels an agent must heed.
LEVEL_WARNING = "Warning"
LEVEL_ERROR = "Error"

# -- a FormState -----------------------------------------------------------------------------
NAME = "Name"
CAPTION = "Caption"
FORM = "Form"
BUTTONS = "Buttons"
HAS_UNSAVED_CHANGES = "HasUnsavedChanges"
CHILDREN = "Children"
VALUE = "Value"

# Control kinds under ``Form`` (and a container's ``Children``).
INPUT = "Input"
GRID = "Grid"
CONTAINER_TYPES = ("Group", "Tab", "TabPage", "FastTab")

# -- a grid ----------------------------------------------------------------------------------
COLUMNS = "Columns"
ROWS = "Rows"
ROW_NUMBER = "RowNumber"
IS_SELECTED = "IsSelected"
SELECTED_LEGACY = "Selected"  # older D365 samples' name for IsSelected
VALUES = "Values"
PAGINATION = "Pagination"
HAS_NEXT_PAGE = "HasNextPage"
TOTAL_ROWS = "TotalRows"

# Grid action ids (``form_click_control`` on a grid).
LOAD_NEXT_PAGE = "LoadNextPage"
LOAD_PREVIOUS_PAGE = "LoadPreviousPage"
