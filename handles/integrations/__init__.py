"""mcp-handles inside other MCP frameworks.

- ``handles.integrations.fastmcp``: FastMCP 4.x (``pip install 'mcp-handles[fastmcp]'``);
- ``handles.integrations.mcp_sdk``: the official SDK's ``MCPServer``, mcp 2.x
  (``pip install 'mcp-handles[mcp]'``).

Each offers ``HandleTools`` with the verbs of ``handles.HandleTools`` and the same
semantics (``handles.verbs``), schemas and texts; neither imports our MCP core.
"""
