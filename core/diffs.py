"""What a file-editing tool call changed, as plain diff lines any front end can style.

Claude Code's Edit / MultiEdit / Write / NotebookEdit (from the call's input, or from the
structured patch its result carries) and Codex's `apply_patch` (`*** Begin Patch` text) become one
list of `DiffLine`s: the terminal viewer colours them, an export writes them as HTML or text.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Literal

HUNK_GAP = "⋯"  # between two hunks of one edit
EDIT_TOOLS = ("Edit", "MultiEdit", "Write", "NotebookEdit", "apply_patch")

LineKind = Literal["file", "hunk", "added", "removed", "context"]


@dataclass(frozen=True, slots=True)
class DiffLine:
    kind: LineKind
    text: str  # an added/removed/context line keeps its "+", "-" or " " in front


def patch_text(params: dict[str, Any]) -> str | None:
    """The `*** Begin Patch` text of a Codex apply_patch call (its own input, or the argument of a
    shell call running `apply_patch`)."""
    candidates = [params.get("input"), params.get("patch")]
    command = params.get("command")
    if isinstance(command, list):
        candidates += command
    for value in candidates:
        if isinstance(value, str) and "*** Begin Patch" in value:
            return value
    return None


def is_edit(name: str, params: dict[str, Any]) -> bool:
    """Whether the call changes files in a way a diff shows."""
    return name in EDIT_TOOLS or patch_text(params) is not None


def call_diff(name: str, params: dict[str, Any], extra: Any = None) -> list[DiffLine]:
    """The diff of an editing call. `extra` is the tool's own structured result (Claude Code's
    `toolUseResult`): its `structuredPatch` has the file's real line numbers, so it wins over a
    diff rebuilt from the input's snippets."""
    patch = patch_text(params)
    if patch is not None:
        return _codex_patch(patch)
    path = params.get("file_path") or params.get("notebook_path") or ""
    out = [DiffLine("file", str(path))]
    hunks = extra.get("structuredPatch") if isinstance(extra, dict) else None
    if isinstance(hunks, list) and hunks:
        for hunk in hunks:
            if not isinstance(hunk, dict):
                continue
            out.append(
                DiffLine(
                    "hunk",
                    f"@@ -{hunk.get('oldStart')},{hunk.get('oldLines')} +{hunk.get('newStart')},"
                    f"{hunk.get('newLines')} @@",
                )
            )
            out += [_line(str(line)) for line in hunk.get("lines", [])]
    elif name == "Write" and isinstance(params.get("content"), str):
        out += diff_between([], params["content"].splitlines())  # a new file: every line added
    else:
        edits = params.get("edits")
        for edit in edits if isinstance(edits, list) else [params]:
            if isinstance(edit, dict):
                old = str(edit.get("old_string") or "").splitlines()
                out += diff_between(old, str(edit.get("new_string") or "").splitlines())
    return out


def _codex_patch(patch: str) -> list[DiffLine]:
    out = []
    for line in patch.splitlines():
        if line.startswith(("*** Begin Patch", "*** End Patch")):
            continue
        if line.startswith("*** "):
            out.append(DiffLine("file", line[4:]))
        elif line.startswith("@@"):
            out.append(DiffLine("hunk", line))
        else:
            out.append(_line(line))
    return out


def diff_between(old: list[str], new: list[str]) -> list[DiffLine]:
    """The lines turning `old` into `new` (see `diff_rows`)."""
    return [DiffLine("hunk", row) if row == HUNK_GAP else _line(row) for row in diff_rows(old, new)]


def _line(line: str) -> DiffLine:
    if line.startswith("+"):
        return DiffLine("added", line)
    if line.startswith("-"):
        return DiffLine("removed", line)
    return DiffLine("context", line)


def diff_rows(old: list[str], new: list[str]) -> list[str]:
    """The rows (" kept", "-removed", "+added") turning `old` into `new`, two lines of context. The
    hunks' line numbers would count from the start of the snippet, not of the file: hunks are only
    set apart by HUNK_GAP. Nothing old (a new file): every line added."""
    if not old:
        return [f"+{line}" for line in new]
    rows: list[str] = []
    for line in list(difflib.unified_diff(old, new, lineterm="", n=2))[2:]:
        if not line.startswith("@@"):
            rows.append(line)
        elif rows:
            rows.append(HUNK_GAP)
    return rows
