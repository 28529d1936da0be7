"""threadloom core: the headless ledger of AI coding-agent sessions.

Nothing in this package imports Textual; the CLI, scripts and tests use it directly.
"""

__version__ = "0.1.0"
