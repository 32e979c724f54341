"""mcp-handles: principal-bound state handles for MCP tool servers."""
