"""The forms framework: what every simulated D365 form shares (``base``: sections, grids, paging, filters,
rendering the form state; ``pending``: a form's unsaved edits). A workflow's forms and the menu items that
open them are in its folder (``erp_sim.workflows.itemization.forms``)."""
