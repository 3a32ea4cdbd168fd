"""Layer 5, the ways in: the command line (:mod:`.cli`), the MCP server (:mod:`.mcp_server`) and
the pytest plugin (:mod:`.pytest_plugin`). Nothing in the package imports this layer."""
