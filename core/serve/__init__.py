"""Long-running services: the watcher, agent hooks, the background service and the MCP server."""
