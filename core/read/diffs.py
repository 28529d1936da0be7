"""What a file-editing tool call changed, as plain diff lines any front end can style.

The call's agent's adapter reads it (`Adapter.file_edits`, the one parser the stats and undo share,
in `core.adapters.edits`); this draws it as `DiffLine`s: the terminal viewer colours them, an
export writes them as HTML or text. A call whose agent is not known is drawn as no edit: one
agent's tool name can be another's, so a name alone says nothing.
"""

from __future__ import annotations

from typing import Any

from ..adapters import tool_owner
from ..adapters.edits import HUNK_GAP as HUNK_GAP
from ..adapters.edits import DiffLine as DiffLine
from ..adapters.edits import LineKind as LineKind
from ..adapters.edits import diff_between as diff_between
from ..adapters.edits import diff_rows as diff_rows


def is_edit(name: str, params: dict[str, Any], agent: str | None = None) -> bool:
    """Whether the call changes files in a way a diff shows."""
    adapter = tool_owner(agent, name)
    return adapter is not None and adapter.is_edit(name, params)


def call_diff(
    name: str, params: dict[str, Any], extra: Any = None, agent: str | None = None
) -> list[DiffLine]:
    """The diff of an editing call. `extra` is what the agent's adapter reads from the call's result
    record (`Adapter.edit_result`: Claude Code's `toolUseResult`, whose `structuredPatch` has the
    file's real line numbers)."""
    adapter = tool_owner(agent, name)
    return adapter.edit_diff(name, params, extra) if adapter is not None else []
