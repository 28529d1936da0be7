"""The read API: sessions, messages, tool calls, search, diffs and images, as named rows from the store."""
