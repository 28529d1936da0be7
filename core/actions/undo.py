"""What a fork does not undo: the files the conversation edited after the fork point.

A fork restarts the conversation at a chosen point, but the files the agent edited after that point
stay edited. This module lists those files and writes a patch (unified diff, for `git apply`, paths
relative to the session's folder) that takes them back to their state at the fork point. It is
built only from what the records hold (Claude Code's `toolUseResult.originalFile` and
`structuredPatch`, edit strings, whole-file writes, Codex `apply_patch` patches, Aider SEARCH/REPLACE
blocks), and where those do not give a file's text at the fork point, from the copy Claude Code
took before editing it (its file history, kept in the archive as a side file); the working tree is
never read or touched. Where neither can rebuild a file, it says which and why.

Each applied edit is a `Step` holding what is known of the file just before and just after it.
Known texts are carried forward and backward along the file's steps; when the file's text at the
fork point and its text after the last edit are both known, the patch is one exact diff between
them, otherwise the edits are reversed one by one, newest first (git applies sections for the same
path in turn).
"""

from __future__ import annotations

import difflib
import ntpath
import posixpath
import re
import shlex
import sqlite3
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..adapters import ADAPTERS, tool_owner
from ..adapters.base import Adapter
from ..adapters.edits import (
    APPLIED_EDIT,
    PATH_KEYS,
    RESTORE,
    UNKNOWN,
    FileEdit,
    Hunk,
    apply_hunks,
    deleted_contents,
    lines_of,
    ops_from_changes,
    parse_apply_patch,
    patch_edits,
    patch_texts,
    replace_strings,
    string_param,
)
from ..base.text import one_line, printable
from ..read.query import ToolCall, fill_tool_io

CONTEXT = 3  # lines of context around each change, as git writes them
WINDOWS_ABSOLUTE = re.compile(r"[A-Za-z]:[\\/]")
NO_NEWLINE = "\\ No newline at end of file"
AIDER_COMMIT = re.compile(r"^Commit ([0-9a-f]{7,40})\b", re.M)  # Aider's auto-commit of its edits


# ---------------------------------------------------------------------- results


@dataclass
class FileChange:
    """One file the conversation changed after the fork point."""

    path: str  # relative to the session's folder where it lies under it, else as recorded
    tool: str  # the tools that changed it, in order ("Edit, Write")
    edits: int  # how many applied edits
    revertible: bool  # the patch takes it back to its state at the fork point
    why_not: str | None = None  # when not revertible: why, and what to do
    created: bool = False  # it did not exist at the fork point: the patch deletes it
    note: str | None = None  # something the user should know even so (a shell command also touched it)

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "tool": self.tool,
            "edits": self.edits,
            "revertible": self.revertible,
            "why_not": self.why_not,
            "created": self.created,
            "note": self.note,
        }


@dataclass
class UndoPlan:
    cwd: str | None  # the folder the patch is applied from
    files: list[FileChange] = field(default_factory=list)
    patch: str = ""  # empty when nothing can be reverted
    problems: list[str] = field(default_factory=list)  # "path: why", and what no file could carry
    notes: list[str] = field(default_factory=list)  # other ways back the records point to


def changes_after(conn: sqlite3.Connection, session_id: str, entry_id: int) -> list[FileChange]:
    """The files the conversation (and the subagents it started) edited after `entry_id` on its
    branch, in the order they were first edited."""
    return plan_undo(conn, session_id, entry_id).files


def undo_patch(conn: sqlite3.Connection, session_id: str, entry_id: int) -> tuple[str, list[str]]:
    """A patch taking the files edited after `entry_id` back to their state then, and what it cannot
    take back (one line per file, saying why)."""
    plan = plan_undo(conn, session_id, entry_id)
    return plan.patch, plan.problems


# ---------------------------------------------------------------------- steps


@dataclass
class Step:
    """One applied edit of one file, with what the records say about it."""

    path: str  # as recorded
    tool: str
    order: int  # position among all the edits after the fork point
    before: Any = UNKNOWN  # the file's text just before (None: it did not exist)
    after: Any = UNKNOWN  # just after
    hunks: list[Hunk] | None = None  # the change with its context
    strings: list[tuple[str, str, bool]] | None = None  # the change as replaced texts
    whole_line_delete: bool = False
    why: str | None = None  # why it cannot be undone on its own, when nothing above allows it
    problem: str | None = None  # the edit cannot be accounted for at all: the whole file is not revertible
    # where the call and its result were recorded, and in which session (file-history lookups)
    entry_id: int | None = None
    result_entry_id: int | None = None
    session_id: str | None = None
    backup: str | None = None  # the file-history copy `before` was read from

    def forward(self, before: Any) -> Any:
        if self.after is not UNKNOWN:
            return self.after
        if before is UNKNOWN:
            return UNKNOWN
        if before is None:
            before = ""  # a new file: only a change that needs nothing around it applies
        if self.hunks:
            result = apply_hunks(before, self.hunks)
            if result is not None:
                return result
        if self.strings:
            result = replace_strings(before, self.strings, whole_line_delete=self.whole_line_delete)
            if result is not None:
                return result
        return UNKNOWN

    def backward(self, after: Any) -> Any:
        if self.before is not UNKNOWN:
            return self.before
        if after is UNKNOWN or after is None or not self.hunks:
            return UNKNOWN
        if any(h.old_start is None for h in self.hunks):
            return UNKNOWN  # placed by context only: not sure enough to rebuild a whole text from
        result = apply_hunks(after, _reverse_all(self.hunks))
        return UNKNOWN if result is None else result


def new_start(old_start: int, shift: int, old_count: int, new_count: int) -> int:
    """Where a hunk's new side starts, as a unified diff numbers it: the old start moved by the
    changes above; an empty side names the line before it."""
    return old_start + shift + (0 if old_count else 1) - (0 if new_count else 1)


def _reverse_all(hunks: list[Hunk]) -> list[Hunk]:
    """The hunks that undo `hunks`: their sides swapped, numbered as lines of the new side."""
    out = []
    shift = 0
    for hunk in hunks:
        flipped = hunk.flipped()
        old, new = len(hunk.old), len(hunk.new)
        if hunk.old_start is not None:
            flipped.old_start = new_start(hunk.old_start, shift, old, new)
        shift += new - old
        out.append(flipped)
    return out


# ---------------------------------------------------------------------- the patch text

QUOTE_NEEDED = re.compile(r'[\x00-\x1f\x7f"\\]')


def quoted_path(path: str) -> str:
    """A path as git writes it in a patch: C-quoted when it holds quotes, backslashes or controls."""
    if not QUOTE_NEEDED.search(path):
        return path
    escapes = {
        "\a": "\\a",
        "\b": "\\b",
        "\t": "\\t",
        "\n": "\\n",
        "\v": "\\v",
        "\f": "\\f",
        "\r": "\\r",
        '"': '\\"',
        "\\": "\\\\",
    }
    return (
        '"'
        + "".join(escapes.get(c, f"\\{ord(c):03o}" if ord(c) < 0x20 or ord(c) == 0x7F else c) for c in path)
        + '"'
    )


def _side(prefix: str, path: str) -> str:
    return quoted_path(prefix + path)


def _header(path: str, old_exists: bool, new_exists: bool) -> list[str]:
    rows = [f"diff --git {_side('a/', path)} {_side('b/', path)}"]
    if not old_exists:
        rows.append("new file mode 100644")
    if not new_exists:
        rows.append("deleted file mode 100644")
    return rows


def _hunk_rows(rows: list[tuple[str, str]]) -> list[str]:
    out = []
    for op, line in rows:
        if line.endswith("\n"):
            out.append(op + line[:-1])
        else:
            out += [op + line, NO_NEWLINE]
    return out


def diff_section(path: str, old: str | None, new: str | None) -> str:
    """One file's section of a git patch turning `old` into `new` (None: the file does not exist)."""
    a, b = lines_of(old or ""), lines_of(new or "")
    rows = _header(path, old is not None, new is not None)
    if a or b:
        rows += [
            f"--- {_side('a/', path)}" if old is not None else "--- /dev/null",
            f"+++ {_side('b/', path)}" if new is not None else "+++ /dev/null",
        ]
    for group in _grouped_opcodes(a, b):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        hunk: list[tuple[str, str]] = []
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                hunk += [(" ", line) for line in a[x1:x2]]
                continue
            hunk += [("-", line) for line in a[x1:x2]]
            hunk += [("+", line) for line in b[y1:y2]]
        rows.append(f"@@ -{i1 + 1 if i2 > i1 else i1},{i2 - i1} +{j1 + 1 if j2 > j1 else j1},{j2 - j1} @@")
        rows += _hunk_rows(hunk)
    return "\n".join(rows) + "\n"


def _grouped_opcodes(a: list[str], b: list[str]) -> list[list[tuple[str, int, int, int, int]]]:
    """difflib's hunks of `a` → `b` with CONTEXT lines around each; the common first and last lines
    are set aside first, which keeps a long file with a few changes fast."""
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    start = max(0, head - CONTEXT)
    a_end, b_end = len(a) - max(0, tail - CONTEXT), len(b) - max(0, tail - CONTEXT)
    matcher = difflib.SequenceMatcher(None, a[start:a_end], b[start:b_end])
    return [
        [(tag, x1 + start, x2 + start, y1 + start, y2 + start) for tag, x1, x2, y1, y2 in group]
        for group in matcher.get_grouped_opcodes(CONTEXT)
    ]


def hunks_section(path: str, hunks: list[Hunk]) -> str:
    """One file's section from hunks whose line numbers may be guesses (git finds each by its
    context near the number given)."""
    rows = _header(path, True, True) + [f"--- {_side('a/', path)}", f"+++ {_side('b/', path)}"]
    shift = 0
    for number, hunk in enumerate(hunks):
        old, new = hunk.old, hunk.new
        # no line number recorded: 2 keeps git from pinning the hunk to the top of the file
        start = hunk.old_start if hunk.old_start is not None else 2 + number
        rows.append(
            f"@@ -{start},{len(old)} +{max(0, new_start(start, shift, len(old), len(new)))},{len(new)} @@"
        )
        rows += _hunk_rows(hunk.rows)
        shift += len(new) - len(old)
    return "\n".join(rows) + "\n"


# ---------------------------------------------------------------------- which records are after the fork


def _after_turns(
    conn: sqlite3.Connection, session_id: str, fork_turn: str | None
) -> tuple[set[str], set[str]]:
    """The turns after `fork_turn`: those on its branch (its latest child, that one's latest child,
    …), and those of branches that were rewound (abandoned for another) after it."""
    children: dict[str | None, list[tuple[int, int, str]]] = {}
    for tid, parent, ts, seq in conn.execute(
        "SELECT id, parent_turn_id, timestamp, sequence FROM agent_turns WHERE session_id = ?", (session_id,)
    ):
        children.setdefault(parent, []).append((ts or 0, seq, tid))
    branch: set[str] = set()
    node = fork_turn
    while children.get(node):
        node = max(children[node])[2]
        if node in branch:
            break
        branch.add(node)
    rewound: set[str] = set()
    seen = {fork_turn}
    stack = [fork_turn] if fork_turn is not None else []
    while stack:  # every descendant, once (a damaged log can make a turn its own parent)
        for _, _, child in children.get(stack.pop(), []):
            if child not in seen:
                seen.add(child)
                stack.append(child)
                if child not in branch:
                    rewound.add(child)
    return branch, rewound


def _calls_after(
    conn: sqlite3.Connection, session_id: str, entry_id: int
) -> tuple[list[ToolCall], list[ToolCall], str | None]:
    """The tool calls made after the fork point on its branch (later turns, the rest of its turn
    but the other blocks of its own API message, which the fork keeps), and those made after it on
    branches rewound since."""
    row = conn.execute(
        "SELECT session_id, turn_id, message_id FROM entries WHERE id = ?", (entry_id,)
    ).fetchone()
    if row is None or row[0] != session_id:
        raise LookupError(f"record {entry_id} is not part of session {session_id}")
    _, fork_turn, fork_message = row
    later, rewound = _after_turns(conn, session_id, fork_turn)

    def after(turn: str | None, call_entry: int | None, message: str | None) -> bool:
        if turn in later:
            return True
        if call_entry is None or call_entry <= entry_id or (turn is not None and turn != fork_turn):
            return False  # before the point, or on another branch
        # a block of the fork point's own API message: the fork keeps it, with its result
        return fork_message is None or message != fork_message

    calls, elsewhere = [], []
    for cols in conn.execute(
        "SELECT c.id, c.tool_name, c.params_json, c.result_json, c.status, c.child_session_id, c.started_at, "
        "c.completed_at, c.result_entry_id, c.entry_id, c.turn_id, e.message_id FROM agent_tool_calls c "
        "LEFT JOIN entries e ON e.id = c.entry_id WHERE c.session_id = ? ORDER BY c.entry_id, c.tool_number",
        (session_id,),
    ):
        if after(cols[10], cols[9], cols[11]):
            calls.append(ToolCall(*cols[:10]))
        elif cols[10] in rewound:
            elsewhere.append(ToolCall(*cols[:10]))
    return calls, elsewhere, fork_turn


def _with_subagents(
    conn: sqlite3.Connection, calls: list[ToolCall], sid: str, depth: int = 0
) -> list[tuple[ToolCall, str]]:
    """`calls` (of session `sid`) with, right after each call that started a subagent, every call of
    that subagent (its edits happened while the call ran). Pairs of (call, session id)."""
    out: list[tuple[ToolCall, str]] = []
    for call in calls:
        out.append((call, sid))
        if depth > 8:
            continue
        children = {call.child_session_id} if call.child_session_id else set()
        children |= {
            r[0]
            for r in conn.execute(
                "SELECT id FROM agent_sessions WHERE parent_session_id = ? AND tool_call_id = ?",
                (sid, call.id),
            )
        }
        for child in sorted(c for c in children if c):
            child_calls = [
                ToolCall(*r)
                for r in conn.execute(
                    "SELECT id, tool_name, params_json, result_json, status, child_session_id, started_at, completed_at, "
                    "result_entry_id, entry_id FROM agent_tool_calls WHERE session_id = ? ORDER BY entry_id, tool_number",
                    (child,),
                )
            ]
            out += _with_subagents(conn, child_calls, child, depth + 1)
    return out


def _raw_objects(conn: sqlite3.Connection, entry_ids: set[int]) -> dict[int, Any]:
    """The parsed records of `entry_ids` (those that are JSON)."""
    out: dict[int, Any] = {}
    if not entry_ids:
        return out
    for eid, raw in conn.execute(
        "SELECT id, raw FROM entries WHERE id IN (SELECT value FROM json_each(?))",
        (orjson.dumps(sorted(entry_ids)).decode(),),
    ):
        try:
            out[eid] = orjson.loads(bytes(raw).lstrip(b"\x00"))
        except orjson.JSONDecodeError:
            continue
    return out


# ---------------------------------------------------------------------- reading edits from calls


def _applied(call: ToolCall) -> bool | None:
    """True when the call's result says it ran, False when it failed or was refused, None when no
    result was recorded (the session ended, or was interrupted, while it ran)."""
    if call.status in ("failed", "rejected", "interrupted"):
        return False
    if call.status == "completed":
        return True
    return None


def _call_steps(
    adapter: Adapter, call: ToolCall, params: dict[str, Any], result: Any, order: int
) -> list[Step]:
    """The steps of an edit or write call, as its agent's adapter reads it (`Adapter.file_edits`)."""
    return [_step(edit, order) for edit in adapter.file_edits(call.name, params, result)]


def _step(edit: FileEdit, order: int) -> Step:
    step = Step(edit.path, edit.tool, order, edit.before, edit.after, edit.hunks)
    step.strings = edit.strings if edit.strings_apply else None
    step.whole_line_delete, step.why, step.problem = edit.whole_line_delete, edit.why, edit.problem
    if edit.move_to and step.problem is None:
        step.problem = (
            f"{edit.tool} moved it to {edit.move_to}: moves are not undone by the patch; "
            f"move it back by hand (git mv {shlex.quote(edit.move_to)} {shlex.quote(edit.path)})"
        )
    return step


# ---------------------------------------------------------------------- patches applied


def _patch_applied_changes(conn: sqlite3.Connection, session_ids: set[str]) -> dict[str, dict[str, Any]]:
    """Codex's own account of each applied patch (`patch_apply_end`): call id → {success, changes}."""
    out: dict[str, dict[str, Any]] = {}
    for sid in session_ids:
        for (raw,) in conn.execute(
            "SELECT raw FROM entries WHERE session_id = ? AND subtype = 'patch_apply_end'", (sid,)
        ):
            try:
                obj = orjson.loads(bytes(raw))
            except orjson.JSONDecodeError:
                continue
            payload = obj.get("payload") if isinstance(obj, dict) else None
            if isinstance(payload, dict) and isinstance(payload.get("call_id"), str):
                out[payload["call_id"]] = payload
    return out


def _patch_steps(
    call: ToolCall, params: dict[str, Any], applied_end: dict[str, Any] | None, order: int
) -> list[Step]:
    """Steps of a patch call, from the agent's own record of the change when it kept one (exact line
    numbers), else from the patch the model wrote."""
    ops = None
    if applied_end is not None:
        ops = ops_from_changes(applied_end.get("changes"))
    if ops is None:
        ops = [op for text in patch_texts(params) for op in parse_apply_patch(text)]
        if applied_end is not None:  # the written patch, with what was recorded of a deleted file
            contents = deleted_contents(applied_end.get("changes"))
            for op in ops:
                if op.kind == "delete" and op.content is None:
                    op.content = contents.get(op.path)
    return [_step(edit, order) for edit in patch_edits(ops)]


# ---------------------------------------------------------------------- Aider


def _aider_steps(
    conn: sqlite3.Connection, session_id: str, entry_id: int, fork_turn: str | None, order: int
) -> tuple[list[Step], list[str]]:
    """Aider's SEARCH/REPLACE blocks answered after the fork point, those its "Applied edit to"
    lines confirm (a block it could not apply is not in the file); and the commits Aider made of
    them, oldest first."""
    from ..adapters.edits import EditBlock, edit_blocks

    later, _ = _after_turns(conn, session_id, fork_turn)
    applied: dict[str | None, set[str]] = {}
    replies: list[tuple[str | None, str]] = []
    commits: list[str] = []
    for eid, turn, role, content in conn.execute(
        "SELECT id, turn_id, role, content FROM entries WHERE session_id = ? AND seq IS NOT NULL AND content IS NOT NULL "
        "ORDER BY seq",
        (session_id,),
    ):
        if not (turn in later or (turn == fork_turn and eid > entry_id)):
            continue
        if role == "assistant":
            replies.append((turn, content))
        elif role == "system":
            applied.setdefault(turn, set()).update(m.group(1) for m in APPLIED_EDIT.finditer(content))
            commits += AIDER_COMMIT.findall(content)
    steps = []
    for turn, content in replies:
        for part in edit_blocks(content):
            if not isinstance(part, EditBlock) or not part.path:
                continue
            step = Step(part.path, "SEARCH/REPLACE", order)
            order += 1
            if part.path not in applied.get(turn, set()):
                continue  # no "Applied edit to" line: Aider did not write it
            old = [line + "\n" for line in part.old]
            new = [line + "\n" for line in part.new]
            if not old:
                step.before, step.after = None, "".join(new)  # an empty SEARCH: a new file
            else:
                step.hunks = [_hunk_from_blocks(old, new)]
                step.why = (
                    "the block changes its last lines without any after them, so where it sits in the "
                    "file is not known" + RESTORE
                )
            steps.append(step)
    return steps, list(dict.fromkeys(commits))


def _hunk_from_blocks(old: list[str], new: list[str]) -> Hunk:
    """The hunk of replacing `old` lines by `new` ones, their common first and last lines as context."""
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    rows = [(" ", line) for line in old[:head]]
    rows += [("-", line) for line in old[head : len(old) - tail]]
    rows += [("+", line) for line in new[head : len(new) - tail]]
    rows += [(" ", line) for line in old[len(old) - tail :]]
    return Hunk(rows)


# ---------------------------------------------------------------------- shell commands

WRITING_COMMANDS = frozenset({"rm", "mv", "cp", "touch", "truncate", "tee", "unlink", "install", "ln"})
GIT_WRITING = frozenset(
    {
        "checkout",
        "restore",
        "reset",
        "apply",
        "am",
        "stash",
        "revert",
        "merge",
        "rebase",
        "cherry-pick",
        "pull",
        "mv",
        "rm",
        "switch",
        "clean",
    }
)
HEREDOC = re.compile(r"(?<!<)<<(?!<)-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


def shell_script(params: dict[str, Any]) -> str | None:
    """The command line a shell call ran ("bash -lc SCRIPT" unwrapped)."""
    command = params.get("command", params.get("cmd"))
    if isinstance(command, list) and all(isinstance(w, str) for w in command):
        words: list[str] = command  # every word is a string, as just checked
        if (
            len(words) >= 3
            and words[1] in ("-c", "-lc", "-l", "-ic")
            and words[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh")
        ):
            return words[-1]
        return shlex.join(words)
    return command if isinstance(command, str) else None


def written_by_shell(script: str) -> tuple[list[str], bool]:
    """(files a shell script visibly writes or removes, whether it may change files in ways not
    named: git checkout, patch…). A reading aid, not a shell parser: heredoc bodies are left out,
    and a script that does not tokenize names nothing."""
    kept: list[str] = []
    closing: str | None = None
    for line in script.split("\n"):
        if closing is not None:
            if line.strip() == closing:
                closing = None
            continue
        kept.append(line)
        heredoc = HEREDOC.search(line)
        if heredoc:
            closing = heredoc.group(2)
    try:
        lexer = shlex.shlex("\n".join(kept), posix=True, punctuation_chars=";&|()<>\n")
        lexer.whitespace = " \t\r"
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return [], False
    files: list[str] = []
    vague = False
    command: list[str] = []
    for token in tokens + [";"]:
        if token.strip("\n") in ("", ";", "&&", "||", "|", "&", "(", ")", ";;"):
            more, unclear = _command_writes(command)
            files += more
            vague = vague or unclear
            command = []
        else:
            command.append(token)
    return list(dict.fromkeys(files)), vague


def _command_writes(argv: list[str]) -> tuple[list[str], bool]:
    files: list[str] = []
    words: list[str] = []
    i = 0
    while i < len(argv):  # redirections: > FILE, >> FILE (not >&2, not /dev/null)
        token = argv[i]
        if token in (">", ">>", ">|", "&>", "&>>") and i + 1 < len(argv):
            target = argv[i + 1]
            if not target.startswith(("&", "/dev/")) and not target.isdigit():
                files.append(target)
            i += 2
            continue
        if token in (">&", "<", "<<", "<<<") and i + 1 < len(argv):
            i += 2
            continue
        words.append(token)
        i += 1
    while words and "=" in words[0] and not words[0].startswith("-"):
        words.pop(0)  # VAR=value before the command
    while words and words[0] in ("sudo", "env", "command", "time", "nohup"):
        words.pop(0)
    if not words:
        return files, False
    name = words[0].rsplit("/", 1)[-1]
    args = [w for w in words[1:] if not w.startswith("-")]
    in_place = any(
        w.startswith("--in-place") or (w.startswith("-") and not w.startswith("--") and "i" in w[1:])
        for w in words[1:]
    )
    if name in ("sed", "perl") and in_place:
        files += _script_operands(words[1:])
    elif name in ("cp", "install", "ln"):
        files += args[-1:]  # only the destination changes
    elif name in WRITING_COMMANDS:
        files += args
    elif (name == "git" and len(words) > 1 and words[1] in GIT_WRITING) or name in ("patch", "dd"):
        return files, True
    return files, False


def _script_operands(words: list[str]) -> list[str]:
    """The file operands of `sed -i` / `perl -i`: what follows the options, less the script (the
    first operand, unless one was given with -e)."""
    operands: list[str] = []
    script_given = False
    skip_next = False
    for word in words:
        if skip_next:
            skip_next = False
            continue
        if word.startswith("-") and word != "-":
            if word in ("-e", "-f", "--expression", "--file") or (
                not word.startswith("--") and word[-1] in "ef"
            ):
                script_given = True
                skip_next = True  # its value is the script, not a file
            continue
        operands.append(word)
    return operands if script_given else operands[1:]


# ---------------------------------------------------------------------- the plan


def _resolve(path: str, cwd: str | None) -> tuple[str, str | None]:
    """(the path made absolute and normal, the path relative to `cwd` or None when outside it)."""
    windows = bool(cwd and WINDOWS_ABSOLUTE.match(cwd)) or bool(WINDOWS_ABSOLUTE.match(path))
    pathmod = ntpath if windows else posixpath
    if cwd and not pathmod.isabs(path):
        path = pathmod.join(cwd, path)
    full = pathmod.normpath(path)
    if not cwd:
        return full, None if pathmod.isabs(full) else full
    base = pathmod.normpath(cwd)
    try:
        rel = pathmod.relpath(full, base)
    except ValueError:  # another drive
        return full, None
    if rel == pathmod.curdir or rel == pathmod.pardir or rel.startswith(pathmod.pardir + pathmod.sep):
        return full, None
    return full, rel.replace("\\", "/") if windows else rel


Section = tuple[Any, Any] | list[Hunk]  # (text before, text after) of a change to undo, or hunks undoing it


def _file_result(steps: list[Step]) -> tuple[str | None, list[Section], str | None, bool]:
    """(why not revertible, the patch sections for the file, an extra note, created) for one file's
    steps in order. Known texts are carried forward and backward; see the module's docstring."""
    problem = next((s.problem for s in steps if s.problem), None)
    if problem:
        return problem, [], None, False
    befores = [UNKNOWN] * len(steps)
    afters = [UNKNOWN] * len(steps)
    for _ in range(2):
        state = UNKNOWN
        for i, step in enumerate(steps):  # forward: each edit from the text before it
            b = (
                step.before
                if step.before is not UNKNOWN
                else befores[i]
                if befores[i] is not UNKNOWN
                else state
            )
            a = afters[i] if afters[i] is not UNKNOWN else step.forward(b)
            if b is UNKNOWN and a is not UNKNOWN:
                b = step.backward(a)
            befores[i], afters[i] = b, a
            state = a
        following = UNKNOWN
        for i in range(
            len(steps) - 1, -1, -1
        ):  # backward: the text after an edit is the text before the next
            if afters[i] is UNKNOWN and following is not UNKNOWN:
                afters[i] = following
            if befores[i] is UNKNOWN and afters[i] is not UNKNOWN:
                befores[i] = steps[i].backward(afters[i])
            following = befores[i]
    base, final = befores[0], afters[-1]
    note = None
    if any(
        steps[i].before is not UNKNOWN and afters[i - 1] is not UNKNOWN and steps[i].before != afters[i - 1]
        for i in range(1, len(steps))
    ):
        note = (
            "something besides these edits changed it between them (a formatter, a shell command, the user)"
        )
    created = base is None and final is not None
    if base is not UNKNOWN and final is not UNKNOWN:
        return None, ([] if base == final else [(base, final)]), note, created
    sections: list[Section] = []
    for i in range(len(steps) - 1, -1, -1):
        step = steps[i]
        undo = _reverse_all(step.hunks) if step.hunks else []
        if befores[i] is not UNKNOWN and afters[i] is not UNKNOWN:
            if befores[i] != afters[i]:
                sections.append((befores[i], afters[i]))
        elif undo and all(h.old_start is not None or h.at_end or h.trailing_context() for h in undo):
            # git pins a hunk without lines after its change to the end of the file: only one
            # with a line number, at the end, or with such lines can be placed by its context
            sections.append(undo)
        else:
            return step.why or f"{step.tool}: the records do not hold the change", [], note, False
    return None, sections, note, created


def plan_undo(conn: sqlite3.Connection, session_id: str, entry_id: int) -> UndoPlan:
    """Everything `changes_after` and `undo_patch` report, worked out once."""
    row = conn.execute(
        "SELECT source, project_path FROM agent_sessions WHERE id = ?", (session_id,)
    ).fetchone()
    if row is None:
        raise LookupError(f"no session {session_id!r}")
    agent, cwd = row
    calls, rewound_calls, fork_turn = _calls_after(conn, session_id, entry_id)
    ordered = _with_subagents(conn, calls, session_id)
    tool_calls = [c for c, _ in ordered]
    fill_tool_io(conn, tool_calls + rewound_calls)
    agents = {
        sid: a
        for sid, a in conn.execute(
            "SELECT id, source FROM agent_sessions WHERE id IN (SELECT value FROM json_each(?))",
            (orjson.dumps(sorted({sid for _, sid in ordered})).decode(),),
        )
    }
    owners = {sid: _owner(a) for sid, a in agents.items()}

    def owner(sid: str, call: ToolCall) -> Adapter | None:
        return owners.get(sid) or tool_owner(agent, call.name)

    wanted = set()
    for call, sid in ordered:
        reader = owner(sid, call)
        if call.result_entry_id is not None and reader is not None and call.name in _edit_names(reader):
            wanted.add(call.result_entry_id)
    records = _raw_objects(conn, wanted)
    styles = {sid: _undo_style(a) for sid, a in agents.items()}
    applied_ends = _patch_applied_changes(
        conn, {sid for _, sid in ordered if styles.get(sid) == "patch-events"}
    )

    steps: list[Step] = []
    unsure: list[tuple[str, str]] = []  # (path, why): edits whose outcome is not recorded
    shell: list[tuple[str, str]] = []  # (path, the command)
    vague: list[str] = []
    for order, (call, sid) in enumerate(ordered):
        adapter = owner(sid, call)
        if adapter is None:
            continue
        try:
            params = orjson.loads(call.params_json) if call.params_json else {}
        except orjson.JSONDecodeError:
            params = {}
        params = params if isinstance(params, dict) else {}
        patches = (
            patch_texts(params)
            if "Begin Patch" in (call.params_json or "") and call.name not in _edit_names(adapter)
            else []
        )
        if patches or call.name in adapter.patch_tools:
            end = applied_ends.get(call.id)
            done = _applied(call) if end is None else bool(end.get("success", True))
            found = _patch_steps(call, params, end, order)
            if done is False:
                continue
            if done is None:
                unsure += [
                    (s.path, f"{s.tool} has no recorded result, so whether it was applied is not known")
                    for s in found
                ]
                continue
            steps += found
            continue
        if call.name in adapter.shell_tools:
            if _applied(call) is False:
                continue
            script = shell_script(params)
            if script:
                named, unclear = written_by_shell(script)
                shell += [(path, script) for path in named]
                if unclear:
                    vague.append(script)
            continue
        if call.name not in _edit_names(adapter):
            continue
        done = _applied(call)
        if done is False:
            continue
        record = records.get(call.result_entry_id) if call.result_entry_id is not None else None
        result = adapter.edit_result(record, call.id) if isinstance(record, dict) else None
        found = _call_steps(adapter, call, params, result, order)
        if adapter.undo_style == "file-history":  # may hold the file before the edit
            for step in found:
                step.entry_id, step.result_entry_id, step.session_id = (
                    call.entry_id,
                    call.result_entry_id,
                    sid,
                )
        if done is None:
            unsure += [
                (s.path, f"{call.name} has no recorded result, so whether it was applied is not known")
                for s in found
            ]
            continue
        steps += found
    commits: list[str] = []
    if _undo_style(agent) == "git-commits":
        aider_steps, commits = _aider_steps(conn, session_id, entry_id, fork_turn, len(ordered))
        steps += aider_steps
    _bases_from_file_history(conn, steps, entry_id, cwd)
    plan = _assemble(cwd, steps, unsure, shell, vague)
    if commits:
        plan.notes.append(
            f"Aider committed its edits after this point ({', '.join(commits)}): "
            f"{shlex.join(['git', 'revert', '--no-edit', *reversed(commits)])} takes back what those "
            "commits hold (instead of the patch, not with it)"
        )
    for path in _edited_paths(rewound_calls, _owner(agent)):
        full, rel = _resolve(path, cwd)
        plan.problems.append(
            f"{printable(rel or full)}: also edited on a branch of the conversation that was rewound "
            "after this point; if the rewind did not restore it, those edits are still in it and "
            "the patch may not apply to it"
        )
    return plan


def _bases_from_file_history(
    conn: sqlite3.Connection, steps: list[Step], fork_entry: int, cwd: str | None
) -> None:
    """A file's text at the fork point, where its first edit after it does not record it, from
    Claude Code's file history: before editing a file it copies it to `file-history/<session>/
    <hash>@v<n>` and notes the copy in a `file-history-snapshot` record (null: the file did not
    exist). The first such note for the file after the fork point and before that edit's result
    names its text then (nothing edited it in between). Used only when the archive kept the copy."""
    first: dict[str, Step] = {}
    for step in sorted(steps, key=lambda s: s.order):
        first.setdefault(_resolve(step.path, cwd)[0], step)
    wanted = {
        full: step
        for full, step in first.items()
        if step.before is UNKNOWN and step.session_id is not None and step.result_entry_id is not None
    }
    for full, step in wanted.items():
        session = (step.session_id or "").split(":", 1)[0]  # a subagent's edits are in its session's history
        assert step.result_entry_id is not None
        for (raw,) in conn.execute(
            "SELECT raw FROM entries WHERE session_id = ? AND id > ? AND id < ? AND entry_type = 'file-history-snapshot' "
            "ORDER BY id",
            (step.session_id, fork_entry, step.result_entry_id),
        ):
            try:
                record = orjson.loads(bytes(raw))
            except orjson.JSONDecodeError:
                continue
            snapshot = record.get("snapshot") if isinstance(record, dict) else None
            backups = snapshot.get("trackedFileBackups") if isinstance(snapshot, dict) else None
            noted = next(
                (
                    v
                    for k, v in (backups.items() if isinstance(backups, dict) else [])
                    if _resolve(k, cwd)[0] == full
                ),
                UNKNOWN,
            )
            if not isinstance(noted, dict) or "backupFileName" not in noted:
                continue
            name = noted["backupFileName"]
            if name is None:
                step.before, step.backup = (
                    None,
                    "Claude Code's file history, which says it did not exist then",
                )
            elif isinstance(name, str) and "/" not in name and "\\" not in name:
                text = _kept_copy(conn, session, name)
                if text is not None:
                    step.before, step.backup = (
                        text,
                        f"Claude Code's file-history copy {name}, kept in the archive",
                    )
            break


def _kept_copy(conn: sqlite3.Connection, session: str, name: str) -> str | None:
    """The text of a file-history copy the archive kept (None: not kept, or not text)."""
    from ..read.archive import file_bytes

    tail = f"/file-history/{session}/{name}"
    row = conn.execute(
        "SELECT id FROM source_files WHERE kind = 'side' AND substr(path, -?) = ? ORDER BY id DESC LIMIT 1",
        (len(tail), tail),
    ).fetchone()
    if row is None:
        return None
    data, complete = file_bytes(conn, row[0])
    if not complete:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return None


def _owner(agent: str | None) -> Adapter | None:
    return ADAPTERS.get(agent) if agent is not None else None


def _edit_names(adapter: Adapter) -> frozenset[str]:
    """The adapter's tools that edit or write files by name (its patch tools are read as patches)."""
    return adapter.edit_tools | adapter.write_tools


def _undo_style(agent: str | None) -> str | None:
    """How the outcome of this agent's edits is read (its adapter's `undo_style`)."""
    adapter = ADAPTERS.get(agent) if agent is not None else None
    return adapter.undo_style if adapter is not None else None


def _edited_paths(calls: list[ToolCall], adapter: Adapter | None) -> list[str]:
    """The files the applied edit calls among `calls` name, in order."""
    paths: list[str] = []
    for call in calls:
        if _applied(call) is False or not call.params_json:
            continue
        try:
            params = orjson.loads(call.params_json)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(params, dict):
            continue
        owner = adapter or tool_owner(None, call.name)
        if owner is None:
            continue
        if call.name in _edit_names(owner):
            path = string_param(params, PATH_KEYS)
            paths += [path] if path else []
        elif "Begin Patch" in call.params_json:
            paths += [op.path for text in patch_texts(params) for op in parse_apply_patch(text)]
    return list(dict.fromkeys(paths))


def _assemble(
    cwd: str | None,
    steps: list[Step],
    unsure: list[tuple[str, str]],
    shell: list[tuple[str, str]],
    vague: list[str],
) -> UndoPlan:
    plan = UndoPlan(cwd)
    by_file: dict[str, list[Step]] = {}
    names: dict[str, str] = {}  # absolute path → how the patch and the report name it
    outside: set[str] = set()
    for step in sorted(steps, key=lambda s: s.order):
        full, rel = _resolve(step.path, cwd)
        by_file.setdefault(full, []).append(step)
        names.setdefault(full, rel or full)
        if rel is None:
            outside.add(full)
    doubts: dict[str, str] = {}
    for path, doubt in unsure:
        full, rel = _resolve(path, cwd)
        doubts.setdefault(full, doubt)
        names.setdefault(full, rel or full)
    shelled: dict[str, str] = {}
    for path, script in shell:
        full, rel = _resolve(path, cwd)
        if rel is not None:  # a scratch file elsewhere (/tmp) is not the project's
            shelled.setdefault(full, script)
            names.setdefault(full, rel)
    sections: list[str] = []
    for full in dict.fromkeys([*by_file, *doubts, *shelled]):
        name = names[full]
        file_steps = by_file.get(full, [])
        tools = ", ".join(dict.fromkeys(s.tool for s in file_steps)) or ("shell" if full in shelled else "?")
        change = FileChange(name, tools, len(file_steps), False)
        shelled_by = shelled.get(full)  # the shell command that changed it
        if full in doubts:
            change.why_not = doubts[full] + "; look at the file and restore it by hand if needed"
        elif not file_steps:
            change.tool = "shell"
            change.why_not = (
                f"changed by a shell command (`{one_line(shelled_by, 80)}`) and the records do not say how"
                + RESTORE
            )
        elif full in outside:
            change.why_not = (
                f"outside the session's folder {cwd}: a patch applied there cannot reach it; "
                "restore it by hand"
                if cwd
                else "the log does not say which folder the session ran in, so the patch cannot name it"
            )
        else:
            why, file_sections, note, created = _file_result(file_steps)
            change.why_not, change.note, change.created = why, note, created and why is None
            backed = next((st.backup for st in file_steps if st.backup), None)
            if backed is not None and why is None:
                said = f"its text at the fork point comes from {backed}"
                change.note = f"{change.note}; {said}" if change.note else said
            if why is None:
                change.revertible = True
                for section in file_sections:
                    if isinstance(section, tuple):
                        sections.append(diff_section(name, section[1], section[0]))
                    else:
                        sections.append(hunks_section(name, section))
            if shelled_by is not None and why is None:
                also = (
                    f"a shell command (`{one_line(shelled_by, 60)}`) also changed it: the patch may not apply"
                )
                change.note = f"{change.note}; {also}" if change.note else also
        if not change.revertible:
            plan.problems.append(f"{printable(name)}: {change.why_not}")
        plan.files.append(change)
    for script in vague:
        plan.problems.append(
            f"a shell command after the fork point may have changed files it does not name: "
            f"`{one_line(script, 100)}`"
        )
    if sections:
        head = (
            (
                f"threadloom undo patch: apply it from {printable(cwd)} with `git apply` "
                "(check first with `git apply --check`)\n\n"
            )
            if cwd
            else ""
        )
        plan.patch = head + "".join(sections)
    return plan
