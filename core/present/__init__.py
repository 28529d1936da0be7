"""Presentation: tool calls, edits and Markdown as Rich renderables for the terminal."""
