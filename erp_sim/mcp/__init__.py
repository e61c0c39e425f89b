"""The MCP face of erp-sim: the fake ERP served to external agents over stdio or streamable HTTP.

``server`` builds the FastMCP app and the ``erp-sim serve`` command, ``routing`` exposes the one tool
registry (``erp_sim.tool_registry``) as MCP tools, ``episode_store`` maps MCP sessions to episodes, and ``http``
adds the HTTP transport's limits and the evaluator's admin routes.
"""
