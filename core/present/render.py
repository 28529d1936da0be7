"""Plain-terminal rendering of a session (`threadloom show`), with Rich but without Textual."""

from __future__ import annotations

import re
import sqlite3
from itertools import chain

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.text import Text

from ..adapters import tool_group
from ..adapters.edits import EDIT_SEARCH, edit_blocks
from ..base.markup import (
    Caveat,
    Command,
    CommandOutput,
    HookRun,
    OpenedFile,
    Part,
    Selection,
    Shell,
    ShellOutput,
    Todo,
    Typed,
    is_note,
    parse,
    todo_before,
    todo_changes,
    todos,
)
from ..base.text import (
    BIDI_CONTROLS,
    COLOURS,
    clock,
    count_of,
    flat,
    human_tokens,
    one_line,
    printable,
    short_when,
    task_notice,
)
from ..read.browse import tool_result_extra
from ..read.calls import call_params, tool_summary
from ..read.diffs import diff_rows
from ..read.images import describe
from ..read.query import (
    MessageRow,
    SessionSummary,
    children_of,
    display_title,
    get_session,
    message_pages,
)
from .markdown import has_markup, render_markdown

ROLE_STYLE = {"user": "bold cyan", "assistant": "bold green", "system": "dim"}
DIFF_STYLE = {"+": "green", "-": "red"}
STATUS_MARK = {"completed": "✓", "failed": "✗", "rejected": "⊘", "interrupted": "⏹", "pending": "…"}


# a message's text is drawn up to this many characters: Rich lays it out at about a second a
# megabyte, far longer for one long line (a 20 MB line froze the TUI for minutes and `show` for two
# and a half); the rest is a note away
MESSAGE_CHARS = 100_000


def long_text(text: str, style: str = "", rest: str = "show --json prints all of it") -> RenderableType:
    """`terminal_text` of at most MESSAGE_CHARS characters of `text`, then how many more there are
    and where the rest is (`rest`)."""
    if len(text) <= MESSAGE_CHARS:
        return terminal_text(text, style)
    more = Text(f"… {len(text) - MESSAGE_CHARS:,} more characters ({rest})", style="dim")
    return Group(terminal_text(text[:MESSAGE_CHARS], style), more)


# code in `show` is coloured from the terminal's own palette: a theme's fixed colours (monokai's
# near-white text) can vanish on a light terminal
SHOW_CODE_THEME = "ansi_dark"


def message_body(
    text: str,
    *,
    markdown: bool = True,
    style: str = "",
    rest: str = "show --json prints all of it",
    code_theme: str | None = SHOW_CODE_THEME,
    preview: int | None = None,
) -> RenderableType:
    """What a user or an assistant wrote: rendered as Markdown (`markdown`) or as written
    (`terminal_text`), cut after MESSAGE_CHARS characters with a note as `long_text` does.
    `preview`: only that many lines will be shown (`render_markdown`). A text with nothing
    Markdown could mean is drawn as it is, and so is one holding escape sequences: that is a
    terminal's output, whose colours and bold are kept as styles."""
    shown = text[:MESSAGE_CHARS]
    body: RenderableType
    if markdown and "\x1b" not in shown and has_markup(shown):
        body = render_markdown(shown, style=style, code_theme=code_theme, preview=preview)
    else:
        body = terminal_text(shown, style)
    if len(text) <= MESSAGE_CHARS:
        return body
    return Group(body, Text(f"… {len(text) - MESSAGE_CHARS:,} more characters ({rest})", style="dim"))


def _content(
    role: str | None, content: str, markdown: bool = True, code_theme: str | None = SHOW_CODE_THEME
) -> RenderableType:
    """A message's text, as Markdown unless not `markdown`; an assistant's SEARCH/REPLACE blocks
    as diffs under their file's name."""
    if role != "assistant" or EDIT_SEARCH not in content:
        return message_body(content, markdown=markdown, code_theme=code_theme)
    parts: list[RenderableType] = []
    for part in edit_blocks(content):
        if isinstance(part, str):
            parts.append(message_body(part, markdown=markdown, code_theme=code_theme))
            continue
        block = Text(part.path or "(no file named)", style="bold")
        for row in diff_rows(part.old, part.new):
            block.append("\n" + row, style=DIFF_STYLE.get(row[:1], "dim"))
        parts.append(block)
    return spaced(parts)


def spaced(parts: list[RenderableType]) -> Group:
    """`parts` one below the other, a blank line between each two."""
    return Group(*(view for i, part in enumerate(parts) for view in ((Text(""), part) if i else (part,))))


def terminal_text(text: str, style: str = "") -> Text:
    """Text as a terminal showed it to the user: the colours and bold of the escape sequences a
    tool printed become styles; any other sequence (a cursor move, a clear screen, a window title)
    and any other control is drawn as text ("␛[2J"), never sent, never lost. Line breaks (a
    carriage return, a form feed) break lines as Rich reads them."""
    if not SHOWN_AS_TEXT.search(text):
        return Text(text, style=style)
    parts = COLOUR_PARTS.split(text)  # odd items are the colour sequences
    shown = "".join(part if i % 2 else SHOWN_AS_TEXT.sub(_visible, part) for i, part in enumerate(parts))
    return Text.from_ansi(shown, style=style) if "\x1b" in shown else Text(shown, style=style)


COLOUR_PARTS = re.compile(f"({COLOURS.pattern})")
# what a terminal would act on in a tool's output, but the line breaks Rich reads (CR, VT, FF)
SHOWN_AS_TEXT = re.compile(f"[\x00-\x08\x0e-\x1f\x7f-\x9f\ud800-\udfff{BIDI_CONTROLS}]")


def _visible(match: re.Match[str]) -> str:
    return printable(match.group())


def render_session(
    console: Console,
    conn: sqlite3.Connection,
    session: SessionSummary,
    *,
    expand_subagents: bool = True,
    indent: int = 0,
    markdown: bool = True,
    note: str = "",
) -> None:
    """The session as it reads: each message's text (rendered as Markdown unless not `markdown`),
    thinking and tool calls, with subagents nested under the calls that started them. `note`: a
    line under the header (a session whose files were rewritten says so)."""
    header = Text()
    header.append(display_title(session), style="bold")
    header.append(f"  {session.id}", style="dim")
    facts = (
        session.agent,
        flat(session.project_path or session.project or "?"),
        short_when(session.started_at),
        count_of(session.message_count, "message"),
        f"{human_tokens(session.total_tokens)} tokens",
        session.cost_text,
        session.model or "",
    )
    meta = " · ".join(fact for fact in facts if fact)  # what is unknown is left out, not shown as "·  ·"
    console.print(Padding(header, (0, 0, 0, indent)))
    console.print(Padding(Text(meta, style="dim"), (0, 0, 0 if note else 1, indent)))
    if note:
        console.print(Padding(Text(note, style="yellow"), (0, 0, 1, indent)))
    children = {
        c.tool_call_id: c for c in children_of(conn, session.id, include_warmup=False) if c.tool_call_id
    }
    code_theme = None if console.no_color or console.color_system is None else SHOW_CODE_THEME
    # printed as read, a page at a time; no call's result is printed, so none is read
    for msg in chain.from_iterable(message_pages(conn, session.id, tool_results=False)):
        if msg.role == "system" or msg.entry_type == "system":
            if msg.hooks:
                for run in msg.hooks:
                    console.print(Padding(hook_text(run), (0, 0, 0, indent)))
            elif msg.content:
                console.print(
                    Padding(
                        Text(
                            f"── {flat(msg.subtype or 'system')}: {one_line(msg.content, 100)}", style="dim"
                        ),
                        (0, 0, 0, indent),
                    )
                )
            continue
        for run in msg.hooks:
            if run.before:
                console.print(Padding(hook_text(run), (0, 0, 0, indent + 2)))
        parts = parse(msg.content) if msg.role == "user" and msg.content else []
        if parts and any(not isinstance(p, Typed) for p in parts):
            ends = _print_parts(console, msg, parts, indent, markdown, code_theme)
            _print_hooks(console, msg, indent)
            if ends or any(not run.before for run in msg.hooks):
                console.print()
            continue
        notice = task_notice(msg.content) if msg.role == "user" else None
        if notice is not None:
            label = Text("background task ", style="bold yellow")
            label.append(clock(msg.timestamp), style="dim")
            status = notice.status if notice.status and notice.status not in notice.headline else ""
            body = Text(notice.headline + (f"  ({status})" if status else ""), style="yellow")
            if notice.result:
                body.append("\n").append_text(terminal_text(notice.result))
            console.print(Padding(label, (0, 0, 0, indent)))
            console.print(Padding(body, (0, 0, 1, indent + 2)))
            continue
        label = Text(f"{msg.role or msg.entry_type}", style=ROLE_STYLE.get(msg.role or "", "bold"))
        if msg.timestamp is not None:
            label.append(f" {clock(msg.timestamp)}", style="dim")
        if msg.model:
            label.append(f"  {flat(msg.model)}", style="dim")
        if msg.content or msg.thinking:
            console.print(Padding(label, (0, 0, 0, indent)))
        if msg.thinking:
            console.print(
                Padding(
                    Text(f"(thinking) {one_line(msg.thinking, 100)}", style="dim italic"),
                    (0, 0, 0, indent + 2),
                )
            )
        if msg.content:
            console.print(
                Padding(_content(msg.role, msg.content, markdown, code_theme), (0, 0, 0, indent + 2))
            )
        for image in msg.images:
            console.print(Padding(Text(f"▣ {describe(image)}", style="#d7af5f"), (0, 0, 0, indent + 2)))
        for call in msg.tool_calls:
            mark = STATUS_MARK.get(call.status or "pending", "?")
            line = Text(f"▸ {flat(call.name)}  ", style="yellow")
            line.append(tool_summary(call))
            line.append(f"  {mark}", style="red" if call.status == "failed" else "green")
            duration = call.duration_ms
            if duration is not None:
                line.append(f" · {duration / 1000:.1f} s", style="dim")
            console.print(Padding(line, (0, 0, 0, indent + 2)))
            items = todos(call_params(call)) if tool_group(call.agent, call.name) == "todo" else None
            if items is not None:
                before = todo_before(tool_result_extra(conn, call))
                console.print(Padding(todo_text(items, before), (0, 0, 0, indent + 6)))
            child_id = call.child_session_id or (children[call.id].id if call.id in children else None)
            if expand_subagents and child_id:
                child = get_session(conn, child_id)
                if child is not None:
                    render_session(
                        console, conn, child, expand_subagents=True, indent=indent + 4, markdown=markdown
                    )
        _print_hooks(console, msg, indent)
        if msg.content or msg.tool_calls or msg.images or any(not run.before for run in msg.hooks):
            console.print()


NOTE_STYLE = "dim"
STDERR_STYLE = "red"


def _print_hooks(console: Console, msg: MessageRow, indent: int) -> None:
    for run in msg.hooks:
        if not run.before:
            console.print(Padding(hook_text(run), (0, 0, 0, indent + 2)))


def _print_parts(
    console: Console,
    msg: MessageRow,
    parts: list[Part],
    indent: int,
    markdown: bool,
    code_theme: str | None = SHOW_CODE_THEME,
) -> bool:
    """A user message holding Claude Code's markup (`core.base.markup`), each part for what it is: a
    command's output and the caveat as quiet notes without the user's label, a slash command as
    typed, a `!` command and what it printed (as the terminal showed it, never as Markdown), IDE
    notes as chips beside the words typed. Returns whether a blank line ends it."""
    pad = (0, 0, 0, indent + 2)
    if not is_note(parts):
        label = Text("user", style=ROLE_STYLE["user"])
        if msg.timestamp is not None:
            label.append(f" {clock(msg.timestamp)}", style="dim")
        console.print(Padding(label, (0, 0, 0, indent)))
    chips = [p for p in parts if isinstance(p, (Selection, OpenedFile))]
    if chips:
        console.print(
            Padding(
                Text("  ".join(f"[{chip_mark(c)} {printable(c.chip)}]" for c in chips), style="cyan"), pad
            )
        )
    for part in parts:
        if isinstance(part, Command):
            console.print(Padding(Text(printable(part.line), style="bold magenta"), pad))
        elif isinstance(part, Shell):
            console.print(Padding(Text("! " + printable(part.command), style="bold yellow"), pad))
        elif isinstance(part, ShellOutput):
            console.print(Padding(shell_output_text(part), (0, 0, 0, indent + 4)))
        elif isinstance(part, CommandOutput) and part.text.strip():
            text = Text("↳ ", style=NOTE_STYLE).append_text(
                terminal_text(part.text.strip("\n"), STDERR_STYLE if part.stream == "stderr" else NOTE_STYLE)
            )
            console.print(Padding(text, (0, 0, 0, indent + 4)))
        elif isinstance(part, Caveat):
            console.print(Padding(Text(CAVEAT_NOTE, style="dim italic"), (0, 0, 0, indent)))
        elif isinstance(part, Typed):
            console.print(Padding(message_body(part.text, markdown=markdown, code_theme=code_theme), pad))
    # a command's output follows it: the blank line after the two
    return not all(isinstance(p, (Command, Shell, Caveat)) for p in parts)


CAVEAT_NOTE = "◇ local commands follow (Claude Code's caveat to the model)"


def chip_mark(part: Selection | OpenedFile) -> str:
    """§ for lines selected in the IDE, ▤ for the file open in it."""
    return "§" if isinstance(part, Selection) else "▤"


def shell_output_text(out: ShellOutput) -> Text:
    """What a `!` command printed, as the terminal showed it: stdout, then stderr in red."""
    if out.empty:
        return Text("↳ (no output)", style=NOTE_STYLE)
    text = Text()
    if out.stdout.strip():
        text.append_text(terminal_text(out.stdout.rstrip("\n")[:MESSAGE_CHARS]))
    if out.stderr.strip():
        if text:
            text.append("\n")
        text.append_text(terminal_text(out.stderr.rstrip("\n")[:MESSAGE_CHARS], STDERR_STYLE))
    return text


def hook_duration(ms: int) -> str:
    """`106 ms`, `1.2 s`, `2m 05s`: hooks are short, their milliseconds matter."""
    if ms < 1000:
        return f"{ms:,} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    return f"{ms // 60_000}m {ms // 1000 % 60:02d}s"


def hook_text(run: HookRun) -> Text:
    """`⚙ PostToolUse:Edit hook  uv run ruff check  exit 1 · 75 ms`, then what it said."""
    style = "yellow" if run.failed else "green"
    text = Text(f"⚙ {run.name or run.event or 'hook'} hook", style=style)
    if run.command:
        text.append("  " + printable(one_line(run.command, 100)))
    text.append(f"  {run.outcome}", style=f"bold {style}" if run.failed else "dim")
    if run.duration_ms is not None:
        text.append(f" · {hook_duration(run.duration_ms)}", style="dim")
    said = run.message or (run.stderr if run.failed else "")
    if said.strip():
        text.append("\n  " + printable(one_line(said, 200)), style=STDERR_STYLE if run.failed else NOTE_STYLE)
    return text


TODO_STYLES = {"completed": "dim", "in_progress": "bold cyan", "pending": ""}
CHANGE_SIGNS = {"added": "+", "removed": "−", "reopened": "↺"}


def todo_text(items: list[Todo], before: list[Todo] | None) -> Text:
    """A TodoWrite list as a checklist: all of it when new, else what this write changed (a sign
    column: + added, − removed, ↺ reopened; a status change shows its new mark)."""
    text = Text()
    rows = (
        [("", t) for t in items]
        if not before
        else [(CHANGE_SIGNS.get(c.kind, ""), c.todo) for c in todo_changes(before, items)]
    )
    for sign, todo in rows:
        if text:
            text.append("\n")
        if before:
            text.append(f"{sign or ' '} ", style="dim")
        style = "strike dim" if sign == "−" else TODO_STYLES.get(todo.status, "")
        text.append(f"{todo.mark} {printable(todo.content if sign == '−' else todo.shown)}", style=style)
    return text


def render_files_changed(
    console: Console, conn: sqlite3.Connection, session_id: str, *, subagents: bool = True
) -> None:
    """`show`'s closing summary: each file the session changed (with `subagents`, its subagents'
    edits counted in) with the lines added and removed, then the totals and how much of them the
    subagents wrote; nothing when it changed none. Paths come from the logs: escaped."""
    from ..base.text import printable
    from ..insight.changes import changed_files, tree_change_calls

    files = changed_files(tree_change_calls(conn, session_id, subagents=subagents))
    if not files:
        return
    width = max(len(printable(f.path)) for f in files)
    console.print(Text("Files changed", style="bold"))
    for f in files:
        line = Text(f"  {printable(f.path):<{width}}  ")
        line.append(f"+{f.added:,}", style="green").append(" ").append(f"−{f.removed:,}", style="red")
        console.print(line)
    added, removed = sum(f.added for f in files), sum(f.removed for f in files)
    total = Text(f"  {len(files):,} file{'' if len(files) == 1 else 's'} · ", style="dim")
    total.append(f"+{added:,} −{removed:,}")
    theirs = [c for f in files for c in f.calls if c.by]
    if theirs:
        agents = len({c.session_id for c in theirs})
        total.append(
            f" (+{sum(c.lines_added for c in theirs):,} −{sum(c.lines_removed for c in theirs):,} "
            f"by {count_of(agents, 'subagent')})",
            style="dim",
        )
    console.print(total)
