"""What a user does with the archive: fork and resume, undo, export, clean up, hide, install the MCP
server into agents."""
