"""What a file-editing tool call changed: the one parser the viewer, the exports, the stats and undo share.

An adapter turns each of its edit and write calls into `FileEdit`s (`Adapter.file_edits`), from the
call's input and, where the agent records one, the tool's structured result: what is known of the
file just before and just after, the change as hunks (with or without line numbers) or as replaced
texts. `diff_of` draws them as `DiffLine`s (any front end styles those), the stats count the added
and removed lines of that drawing, and `core.actions.undo` carries the known texts along a file's edits to
write a patch that reverses them.

What is shared here is format knowledge no single agent owns: unified-diff hunks, the
`*** Begin Patch` format that Codex's apply_patch (and any agent that borrows it) writes, and the
reading of edit tools from their parameters alone (`generic_edits`), which most agents need.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal


class _Unknown:
    """A file text the records do not give (distinct from None: the file did not exist)."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()
RESTORE = "; restore it by hand (from git, a backup, or the editor's history)"
HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
PATCH_BEGIN, PATCH_END = "*** Begin Patch", "*** End Patch"

# parameter names edit tools use for the file, its new content and the replaced texts
# `absolutePath`: Cline 3.x's native write_to_file / replace_in_file; `targetFile`: Cursor 1.x
PATH_KEYS = (
    "file_path",
    "filePath",
    "path",
    "target_file",
    "absolute_path",
    "absolutePath",
    "targetFile",
    "notebook_path",
    "filename",
)
CONTENT_KEYS = ("content", "file_text", "contents", "text")
OLD_KEYS = ("old_string", "oldString", "old_str")
NEW_KEYS = ("new_string", "newString", "new_str")

# ---------------------------------------------------------------------- diff lines, for drawing

HUNK_GAP = "⋯"  # between two hunks of one edit
LineKind = Literal["file", "hunk", "added", "removed", "context"]


@dataclass(frozen=True, slots=True)
class DiffLine:
    kind: LineKind
    text: str  # an added/removed/context line keeps its "+", "-" or " " in front


def diff_between(old: list[str], new: list[str]) -> list[DiffLine]:
    """The lines turning `old` into `new` (see `diff_rows`)."""
    return [DiffLine("hunk", row) if row == HUNK_GAP else diff_line(row) for row in diff_rows(old, new)]


def diff_line(line: str) -> DiffLine:
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
    import difflib  # here: most runs draw no diff

    rows: list[str] = []
    for line in list(difflib.unified_diff(old, new, lineterm="", n=2))[2:]:
        if not line.startswith("@@"):
            rows.append(line)
        elif rows:
            rows.append(HUNK_GAP)
    return rows


# ---------------------------------------------------------------------- hunks


@dataclass
class Hunk:
    """A change with its context: `rows` are (" " | "-" | "+", line with its newline)."""

    rows: list[tuple[str, str]]
    # 1-based number of the first old line (of the line before, when the old side is empty), as a
    # unified diff numbers it; None when the record gives no line number
    old_start: int | None = None
    at_end: bool = False  # the change ends at the end of the file (Codex `*** End of File`)
    header: str | None = None  # the "@@ … @@" line as the record wrote it, for drawing

    @property
    def old(self) -> list[str]:
        return [line for op, line in self.rows if op != "+"]

    @property
    def new(self) -> list[str]:
        return [line for op, line in self.rows if op != "-"]

    def flipped(self) -> Hunk:
        """The same change the other way round (line number left to the caller)."""
        flip = {"+": "-", "-": "+", " ": " "}
        return Hunk([(flip[op], line) for op, line in self.rows], None, self.at_end)

    def trailing_context(self) -> int:
        count = 0
        for op, _ in reversed(self.rows):
            if op != " ":
                break
            count += 1
        return count


def hunks_from_rows(
    groups: list[tuple[int | None, list[str]]], headers: list[str | None] | None = None
) -> list[Hunk]:
    """Hunks from rows written as in a unified diff ("-old", "+new", " same", and "\\ No newline at
    end of file" after a line that has no newline); `headers`: each group's "@@" line, for drawing."""
    out = []
    for number, (start, raw_rows) in enumerate(groups):
        rows: list[tuple[str, str]] = []
        for row in raw_rows:
            if row.startswith("\\"):
                if rows and rows[-1][1].endswith("\n"):
                    rows[-1] = (rows[-1][0], rows[-1][1][:-1])
                continue
            op = row[:1] if row[:1] in ("+", "-", " ") else " "
            rows.append((op, (row[1:] if row[:1] in ("+", "-", " ") else row) + "\n"))
        if rows:
            out.append(Hunk(rows, start, header=headers[number] if headers else None))
    return out


def parse_unified_diff(text: str) -> list[Hunk]:
    """The hunks of a unified diff text; each hunk ends where its header's line counts say (so a
    removed "-- x" line is not taken for a file header), and anything between hunks is skipped."""
    groups: list[tuple[int | None, list[str]]] = []
    headers: list[str | None] = []
    old_left = new_left = 0
    for row in text.split("\n"):
        if old_left > 0 or new_left > 0:
            op = row[:1] if row else " "
            old_left -= op in (" ", "-")
            new_left -= op in (" ", "+")
            groups[-1][1].append(row if row else " ")
            continue
        m = HUNK_HEADER.match(row)
        if m:
            groups.append((int(m.group(1)), []))
            headers.append(row)
            old_left = int(m.group(2)) if m.group(2) is not None else 1
            new_left = int(m.group(4)) if m.group(4) is not None else 1
        elif groups and row.startswith("\\"):
            groups[-1][1].append(row)  # "\ No newline at end of file" after the hunk's last line
    return hunks_from_rows(groups, headers)


# ---------------------------------------------------------------------- text as lines


def lines_of(text: str) -> list[str]:
    """`text` as lines that keep their "\\n" (the last one may have none). Only "\\n" ends a line, as
    for git: a "\\r" stays part of its line."""
    parts = text.split("\n")
    out = [line + "\n" for line in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def apply_hunks(text: str, hunks: list[Hunk]) -> str | None:
    """`text` with `hunks` applied in order, each found where its line number says or else by its
    context nearest to it; None when one does not match."""
    lines = lines_of(text)
    offset = 0  # how far the earlier hunks moved the lines below them
    searched_from = 0
    for hunk in hunks:
        old = hunk.old
        last = len(lines) - len(old)
        if hunk.at_end:
            candidates: list[int] | range = [last]
        elif hunk.old_start is None:  # as Codex does: onward from the previous change, then from the top
            candidates = [*range(searched_from, last + 1), *range(0, min(searched_from, last + 1))]
        else:
            hint = (
                hunk.old_start - 1 + offset if old else hunk.old_start + offset
            )  # (an insertion: after that line)
            hint = max(0, min(hint, len(lines)))
            if lines[hint : hint + len(old)] == old:
                candidates = [hint]  # where the record says: the usual case, no search
            else:
                candidates = sorted(range(last + 1), key=lambda i: (abs(i - hint), i))
        at = next((i for i in candidates if i >= 0 and lines[i : i + len(old)] == old), None)
        if at is None:
            return None
        new = hunk.new
        lines[at : at + len(old)] = new
        offset += len(new) - len(old)
        searched_from = at + len(new)
    return "".join(lines)


def replace_strings(text: str, edits: list[tuple[str, str, bool]], *, whole_line_delete: bool) -> str | None:
    """`text` with each (old, new, replace_all) applied in order; None when an old text is missing.
    `whole_line_delete`: Claude Code's rule that deleting a line's text deletes its newline too."""
    for old, new, replace_all in edits:
        if old == "":
            if text != "":
                return None
            text = new
            continue
        if old not in text:
            return None
        if whole_line_delete and new == "" and not old.endswith("\n") and old + "\n" in text:
            old += "\n"
        text = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    return text


# ---------------------------------------------------------------------- what one call changed


@dataclass
class FileEdit:
    """What one edit or write call did to one file, as far as its records tell."""

    path: str  # as recorded
    tool: str
    before: Any = UNKNOWN  # the file's text just before (None: it did not exist)
    after: Any = UNKNOWN  # just after (None: the call deleted it)
    hunks: list[Hunk] | None = None  # the change with its context
    strings: list[tuple[str, str, bool]] | None = None  # the change as (old, new, replace all) texts
    # applying `strings` to the file's text reproduces the change (False: a notebook cell's source,
    # which sits JSON-escaped in the file: shown, never applied)
    strings_apply: bool = True
    whole_line_delete: bool = False  # deleting a line's text deletes its newline too (Claude Code)
    why: str | None = None  # why it cannot be undone on its own, when nothing above allows it
    problem: str | None = None  # the edit cannot be accounted for at all: the file is not revertible
    move_to: str | None = None  # the call also renamed the file (a patch's `*** Move to:`)
    label: str | None = None  # the file's line in a drawn diff, when not its path

    @property
    def overwrites_unknown(self) -> bool:
        """A whole new text over a file whose text before the records do not give: drawn and
        counted as every line added unless an earlier call says what the file held."""
        return isinstance(self.after, str) and self.before is UNKNOWN and not self.hunks and not self.strings

    def forward(self, before: Any) -> Any:
        """The file's text after this edit, given its text before (UNKNOWN when neither the edit
        nor `before` tells it): how the stats carry a file's text from one call to the next."""
        if self.after is not UNKNOWN:
            return self.after
        before = self.before if self.before is not UNKNOWN else before
        if before is UNKNOWN or self.move_to:
            return UNKNOWN
        text = before or ""  # a new file: only a change that needs nothing around it applies
        if self.hunks:
            result = apply_hunks(text, self.hunks)
            return UNKNOWN if result is None else result
        if self.strings and self.strings_apply:
            result = replace_strings(text, self.strings, whole_line_delete=self.whole_line_delete)
            return UNKNOWN if result is None else result
        return UNKNOWN


def generic_edits(name: str, params: dict[str, Any], *, writes: frozenset[str]) -> list[FileEdit]:
    """An edit or write tool read from its parameters alone: a whole new content (the tools in
    `writes`, or a `create` command), or replaced texts."""
    path = string_param(params, PATH_KEYS)
    if path is None:
        return []
    edit = FileEdit(path, name)
    command = params.get("command") if isinstance(params.get("command"), str) else None
    content = string_param(params, CONTENT_KEYS)
    old, new = string_param(params, OLD_KEYS), string_param(params, NEW_KEYS)
    if command == "create" or (name in writes and content is not None):
        edit.after = content if content is not None else UNKNOWN
        edit.why = f"{name} replaced the whole file and the records do not hold what it held before" + RESTORE
    elif old is not None and new is not None and command in (None, "str_replace"):
        edit.strings = [(old, new, bool(params.get("replace_all") or params.get("replaceAll")))]
        edit.why = (
            "the records hold the replaced text but not the file around it, so where it sits is not known"
            + RESTORE
        )
    else:
        edit.why = f"{name}: the records do not hold the change in a form that can be reversed" + RESTORE
    return [edit]


def string_param(params: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    value = next((params[k] for k in keys if k in params), None)
    return value if isinstance(value, str) else None


# ---------------------------------------------------------------------- the `*** Begin Patch` format


@dataclass
class PatchOp:
    kind: str  # add | delete | update
    path: str
    content: str | None = None  # add: the new file
    hunks: list[Hunk] = field(default_factory=list)
    move_to: str | None = None


def patch_texts(value: Any) -> list[str]:
    """Every `*** Begin Patch … *** End Patch` text inside a call's parameters, however it was
    passed (the apply_patch tool's input, a shell command's argument, a heredoc)."""
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            start = item.find(PATCH_BEGIN)
            while start != -1:
                end = item.find(PATCH_END, start)
                found.append(item[start : end + len(PATCH_END)] if end != -1 else item[start:])
                start = item.find(PATCH_BEGIN, end) if end != -1 else -1
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return found


def parse_apply_patch(text: str) -> list[PatchOp]:
    """The file operations of a patch in Codex's format (`*** Add File:`, `*** Update File:` with
    `@@` chunks of " ", "-", "+" lines, `*** Delete File:`)."""
    ops: list[PatchOp] = []
    rows: list[tuple[str, str]] | None = None
    header: str | None = None

    def close_chunk() -> None:
        nonlocal rows, header
        if rows and ops and ops[-1].kind == "update":
            ops[-1].hunks.append(Hunk(rows, header=header))
        rows, header = None, None

    for line in text.split("\n"):
        bare = line.rstrip("\r")
        if bare.startswith(("*** Add File: ", "*** Delete File: ", "*** Update File: ")):
            close_chunk()
            kind, _, path = bare[4:].partition(" File: ")
            ops.append(PatchOp(kind.lower(), path.strip(), "" if kind == "Add" else None))
            if kind == "Update":
                rows = []
        elif bare.startswith("*** Move to: ") and ops:
            ops[-1].move_to = bare[len("*** Move to: ") :].strip()
        elif bare.strip() == "*** End of File":
            if rows is not None and ops and ops[-1].kind == "update":
                ops[-1].hunks.append(Hunk(rows, at_end=True, header=header))
                rows, header = [], None
        elif bare.startswith((PATCH_BEGIN, PATCH_END)):
            close_chunk()
        elif ops and ops[-1].kind == "add":
            if line.startswith("+"):
                ops[-1].content = (ops[-1].content or "") + line[1:] + "\n"
        elif ops and ops[-1].kind == "update":
            if line.startswith("@@"):
                if rows:
                    ops[-1].hunks.append(Hunk(rows, header=header))
                rows, header = [], line
            elif line[:1] in (" ", "-", "+"):
                rows = rows if rows is not None else []
                rows.append((line[0], line[1:] + "\n"))
            elif line == "" and rows is not None:
                rows.append((" ", "\n"))  # an empty context line written without its space, as Codex reads it
    close_chunk()
    for op in ops:
        op.hunks = [h for h in op.hunks if any(o != " " for o, _ in h.rows)]
    return ops


def ops_from_changes(changes: Any) -> list[PatchOp] | None:
    """A patch's applied changes as Codex records them (`patch_apply_end.changes`: {path: {type,
    content | unified_diff, move_path}}; older Codex: {path: {"add": {content}} …}) as operations.
    None when a change lacks what it needs."""
    if not isinstance(changes, dict):
        return None
    ops = []
    for path, change in changes.items():
        if not isinstance(change, dict):
            return None
        kind = change.get("type")
        body = change
        if kind is None and len(change) == 1:
            kind, body = next(iter(change.items()))
            body = body if isinstance(body, dict) else {}
        if kind == "update":
            hunks = (
                parse_unified_diff(body.get("unified_diff") or "")
                if isinstance(body.get("unified_diff"), str)
                else []
            )
            if not hunks:
                return None
            ops.append(PatchOp("update", path, hunks=hunks, move_to=body.get("move_path") or None))
        elif kind in ("add", "delete"):
            content = body.get("content")
            ops.append(PatchOp(kind, path, content if isinstance(content, str) else None))
        else:
            return None
    return ops


def deleted_contents(changes: Any) -> dict[str, str]:
    """What each file a patch's applied changes report deleted held, by the path they name."""
    out: dict[str, str] = {}
    for path, change in changes.items() if isinstance(changes, dict) else ():
        body = change.get("delete", change) if isinstance(change, dict) else None
        if isinstance(body, dict) and isinstance(body.get("content"), str):
            out[path] = body["content"]
    return out


def patch_edits(ops: list[PatchOp], tool: str = "apply_patch") -> list[FileEdit]:
    """The file edits of a patch's operations."""
    edits = []
    for op in ops:
        kind = {"add": "Add", "delete": "Delete"}.get(op.kind, "Update")
        edit = FileEdit(op.path, tool, label=f"{kind} File: {op.path}", move_to=op.move_to)
        if op.kind == "add":
            edit.before, edit.after = None, op.content if op.content is not None else UNKNOWN
            edit.why = f"{tool} added it but the records do not hold its content; delete it by hand if it is not wanted"
        elif op.kind == "delete":
            edit.before, edit.after = (op.content if op.content is not None else UNKNOWN), None
            edit.why = f"{tool} deleted it and the records do not hold what it held" + RESTORE
        else:
            edit.hunks = op.hunks
            edit.why = (
                "the patch gives a change without the lines after it, so where it sits in the file is not known"
                + RESTORE
            )
        edits.append(edit)
    return edits


def edits_of_patches(params: dict[str, Any], tool: str = "apply_patch") -> list[FileEdit]:
    """The file edits of every `*** Begin Patch` text in a call's parameters."""
    return patch_edits([op for text in patch_texts(params) for op in parse_apply_patch(text)], tool)


# ---------------------------------------------------------------------- drawing


def diff_of(edits: list[FileEdit]) -> list[DiffLine]:
    """The diff lines of a call's file edits: for each file its line, then its hunks (with their
    headers when recorded), else its replaced texts, else its texts before and after."""
    out: list[DiffLine] = []
    for edit in edits:
        out.append(DiffLine("file", edit.label if edit.label is not None else edit.path))
        if edit.move_to:
            out.append(DiffLine("file", f"Move to: {edit.move_to}"))
        if edit.hunks:
            for hunk in edit.hunks:
                if hunk.header is not None:
                    out.append(DiffLine("hunk", hunk.header))
                out += [diff_line(op + line.removesuffix("\n")) for op, line in hunk.rows]
        elif edit.strings:
            for old, new, _ in edit.strings:
                out += diff_between(old.splitlines(), new.splitlines())
        elif isinstance(edit.after, str):
            before = edit.before.splitlines() if isinstance(edit.before, str) else []
            out += diff_between(before, edit.after.splitlines())
    return out


def line_counts(edits: list[FileEdit]) -> list[tuple[str, int, int]]:
    """(file, lines added, lines removed) of a call's file edits, from their drawing; a moved file
    is counted under its new name."""
    counts: dict[str, list[int]] = {}
    for edit in edits:
        path = edit.move_to or edit.path
        total = counts.setdefault(path, [0, 0])
        for line in diff_of([edit]):
            if line.kind == "added":
                total[0] += 1
            elif line.kind == "removed":
                total[1] += 1
    return [(p, a, r) for p, (a, r) in counts.items() if p]


APPLIED_EDIT = re.compile(r"^Applied edit to (.+?)\s*$", re.M)  # Aider's confirmation, one per file


# Aider's edit blocks (its "diff" edit format), written by the model in its answer
EDIT_SEARCH, EDIT_DIVIDER, EDIT_REPLACE = "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"


@dataclass
class EditBlock:
    """One SEARCH/REPLACE block of an assistant's answer: the file, the lines searched for, and the
    lines that replace them."""

    path: str
    old: list[str]
    new: list[str]


def edit_blocks(content: str) -> list[str | EditBlock]:
    """`content` cut into its text and its SEARCH/REPLACE blocks (with the path line and the code
    fence around each one taken into the block). An unfinished block stays text."""
    lines = content.split("\n")
    parts: list[str | EditBlock] = []
    text: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != EDIT_SEARCH:
            text.append(lines[i])
            i += 1
            continue
        middle = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == EDIT_DIVIDER), None)
        end = (
            next(
                (j for j in range(middle + 1, len(lines)) if lines[j].strip().startswith(EDIT_REPLACE)), None
            )
            if middle is not None
            else None
        )
        if middle is None or end is None:
            text.append(lines[i])
            i += 1
            continue
        if text and text[-1].startswith("```"):
            text.pop()  # the fence opened for this block
        path = text.pop().strip() if text and text[-1].strip() and " " not in text[-1].strip() else ""
        if "\n".join(text).strip():
            parts.append("\n".join(text).strip("\n"))
        text = []
        parts.append(EditBlock(path, lines[i + 1 : middle], lines[middle + 1 : end]))
        i = end + 1
        if i < len(lines) and lines[i].startswith("```"):
            i += 1  # and the fence closed after it
    if text and "\n".join(text).strip():
        parts.append("\n".join(text).strip("\n"))
    return parts
