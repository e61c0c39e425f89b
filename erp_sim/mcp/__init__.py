"""The MCP face of erp-sim: the fake ERP served to external agents over stdio or streamable HTTP.

``server`` builds the FastMCP app and the ``erp-sim serve`` command, ``tools`` exposes the one tool
registry (``erp_sim.tools``) as MCP tools, ``sessions`` maps MCP sessions to episodes, and ``http``
adds the HTTP transport's limits and the evaluator's admin routes.
"""
