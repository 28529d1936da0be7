"""Plain-terminal rendering of a session (`threadloom show`), with Rich but without Textual."""

from __future__ import annotations

import gc
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from itertools import chain
from typing import Any

import orjson
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
    elapsed,
    flat,
    one_line,
    printable,
    short_when,
    task_notice,
)
from ..read.browse import COMPACTION_SUBTYPES, rewind_seqs, tool_result_extra, withdrawn_seqs
from ..read.calls import call_params, tool_summary
from ..read.diffs import diff_rows
from ..read.images import describe
from ..read.query import (
    FIRST_PAGE,
    MessageRow,
    SessionSummary,
    children_of,
    display_title,
    get_session,
    message_pages,
    messages,
    response_before,
    turn_messages,
)
from .markdown import Markdown, has_markup, render_markdown, wrap_plain

ROLE_STYLE = {"user": "bold cyan", "assistant": "bold green", "system": "dim"}
DIFF_STYLE = {"+": "green", "-": "red"}
# what a compaction's summary (Claude Code writes it as a user record) is called, and its colour
COMPACT_SUMMARY = "summary of the earlier conversation"
SUMMARY_STYLE = "#87afaf"
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
    typed: bool = False,
) -> RenderableType:
    """What a user or an assistant wrote: rendered as Markdown (`markdown`) or as written
    (`terminal_text`), cut after MESSAGE_CHARS characters with a note as `long_text` does.
    `preview`: only that many lines will be shown (`render_markdown`); `typed`: a person's prompt,
    its backslashes kept (`render_markdown`). A text with nothing Markdown could mean is drawn as
    it is, and so is one holding escape sequences: that is a terminal's output, whose colours and
    bold are kept as styles."""
    shown = text[:MESSAGE_CHARS]
    body: RenderableType
    if markdown and "\x1b" not in shown and has_markup(shown):
        body = render_markdown(shown, style=style, code_theme=code_theme, preview=preview, typed=typed)
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
        return message_body(content, markdown=markdown, code_theme=code_theme, typed=role == "user")
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
    and any other control is drawn as text ("␛[2J"), never sent, never lost. A CRLF ends a line; a
    carriage return alone is drawn (␍): Rich's reading kept only what followed it (a prompt
    "X␛[31mR␛[0m\rY" was shown as "Y"), and dropped it where there was no colour ("XY"). A form
    feed or a vertical tab breaks the line as Rich reads them."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\u240d")
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


class PlainConsole:
    """Where `render_session` prints when no colour will be shown (`show` piped to a file, a pager,
    grep): the same renderables written as the lines a colourless Rich console writes, character
    for character (`tests/unit/test_plain_show.py` compares the two), without Rich's pipeline of
    segments, padding and cropping around each one: that was most of the 32 s a session of
    100,000 messages took. Texts and Markdown are laid out here; anything else by `rich`, the
    console it stands in for (writing to the same file)."""

    no_color = True
    color_system = None

    def __init__(self, rich: Console) -> None:
        self.rich = rich
        self.width = rich.width
        self.pending: list[str] = []  # lines printed, not written yet

    def print(self, renderable: RenderableType | None = None) -> None:
        self.pending.extend([""] if renderable is None else self.lines(renderable, self.width))
        if len(self.pending) >= 256:  # written a few hundred lines at a time: a write costs per call
            self.flush()

    def flush(self) -> None:
        """Write the lines printed so far (a long session's first ones come at once, not at its end)."""
        if self.pending:
            self.pending.append("")
            self.rich.file.write("\n".join(self.pending))
            self.pending.clear()
        self.rich.file.flush()

    @contextmanager
    def drawing(self) -> Iterator[None]:
        """The cyclic garbage collector paused while a session is drawn: what a message is drawn
        with is freed by reference counting once it is printed (a session of 100,000 messages
        peaks at the same 101 MB either way), and the collector's passes over it were a tenth of
        the time. Whatever is printed then is written."""
        paused = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            if paused:
                gc.enable()
            self.flush()

    def write(self, text: str) -> None:
        """Lines drawn elsewhere (by `page_worker`), after those printed here so far."""
        self.flush()
        self.rich.file.write(text)

    def lines(self, renderable: RenderableType, width: int) -> list[str]:
        """`renderable` at `width` as text, a line each (trailing spaces are the file's to trim)."""
        if isinstance(renderable, Text) and _plain_layout(renderable):
            return wrap_plain(renderable, width, self.rich)
        if isinstance(renderable, Padding) and renderable.expand:  # its style is no colour here
            inner = width - renderable.left - renderable.right
            if inner >= 1:
                pad = " " * renderable.left
                # each line is at most `inner` cells but for spaces at its end, which the file trims
                body = [pad + line for line in self.lines(renderable.renderable, inner)]
                return [""] * renderable.top + body + [""] * renderable.bottom
        if isinstance(renderable, Group):
            return [line for part in renderable.renderables for line in self.lines(part, width)]
        if isinstance(renderable, Markdown):
            return renderable.plain_lines(self.rich, width)
        # anything else (a table): Rich's own lines, cut at `width`
        drawn = self.rich.render_lines(renderable, self.rich.options.update_width(width), pad=False)
        return ["".join(segment.text for segment in line) for line in drawn]


def _plain_layout(text: Text) -> bool:
    """Whether Rich lays `text` out as `wrap_plain` does: a line at its end, no justification, long
    words folded, wrapped."""
    return (
        text.end == "\n"
        and text.justify in (None, "default")
        and text.overflow in (None, "fold")
        and not text.no_wrap
    )


Printer = Console | PlainConsole  # where `show` prints a session


def render_session(
    console: Printer,
    conn: sqlite3.Connection,
    session: SessionSummary,
    *,
    expand_subagents: bool = True,
    indent: int = 0,
    markdown: bool = True,
    note: str = "",
    workers: int = 0,
    turn: int | None = None,
) -> None:
    """The session as it reads: each message's text (rendered as Markdown unless not `markdown`),
    thinking and tool calls, with subagents nested under the calls that started them. `note`: a
    line under the header (a session whose files were rewritten says so). `workers`: as many
    other processes draw pages of it too (`render_pages`), when printing plain lines from a
    database file. `turn`: only the turn holding message #turn (`show 'SESSION#n'`, as answers cite it)."""
    render_header(console, session, indent=indent, note=note)
    rewinds, withdrawn = rewinds_of(conn, session), withdrawn_seqs(conn, session.id)
    if turn is not None:
        render_messages(
            console, conn, session.id, turn_messages(conn, session.id, turn, tool_results=False),
            expand_subagents=expand_subagents,
            indent=indent, markdown=markdown, rewinds=rewinds, withdrawn=withdrawn,
        )  # fmt: skip
        return
    path = database_file(conn)
    if workers and isinstance(console, PlainConsole) and path:
        render_pages(
            console, conn, path, session.id, workers=workers, expand_subagents=expand_subagents, indent=indent,
            markdown=markdown, rewinds=rewinds, withdrawn=withdrawn,
        )  # fmt: skip
        return
    # printed as read, a page at a time; no call's result is printed, so none is read
    pages = message_pages(conn, session.id, tool_results=False)
    render_messages(
        console, conn, session.id, chain.from_iterable(pages), expand_subagents=expand_subagents, indent=indent,
        markdown=markdown, rewinds=rewinds, withdrawn=withdrawn,
    )  # fmt: skip


def render_header(console: Printer, session: SessionSummary, *, indent: int = 0, note: str = "") -> None:
    """A session's title and id, then what it is (agent, project, start, size, cost, model), then `note`."""
    header = Text()
    header.append(display_title(session), style="bold")
    header.append(f"  {session.id}", style="dim")
    facts = (
        session.agent,
        flat(session.project_path or session.project or "?"),
        short_when(session.started_at),
        count_of(session.message_count, "message"),
        f"{session.tokens_text} tokens",
        session.cost_text,
        session.model or "",
    )
    meta = " · ".join(fact for fact in facts if fact)  # what is unknown is left out, not shown as "·  ·"
    console.print(Padding(header, (0, 0, 0, indent)))
    console.print(Padding(Text(meta, style="dim"), (0, 0, 0 if note else 1, indent)))
    if note:
        console.print(Padding(Text(note, style="yellow"), (0, 0, 1, indent)))


def render_messages(
    console: Printer,
    conn: sqlite3.Connection,
    session_id: str,
    messages: Iterable[MessageRow],
    *,
    expand_subagents: bool = True,
    indent: int = 0,
    markdown: bool = True,
    response: str | None = None,
    rewinds: frozenset[int] = frozenset(),
    withdrawn: frozenset[int] = frozenset(),
) -> None:
    """`messages` of the session `session_id` (all of them, or a run of them: each is printed the
    same whatever comes before it, given `response`: the API response the run's first message may
    continue, `response_before`), as `render_session` prints them below its header; a rewind's
    line above each prompt at a position of `rewinds` (`rewinds_of`), and the messages at the
    positions of `withdrawn` (`withdrawn_seqs`) marked as withdrawn, a line above each run of them."""
    children: dict[str, list[str]] = {}  # by the call that started them (a swarm's call, several)
    for c in children_of(conn, session_id, include_warmup=False):
        if c.tool_call_id:
            children.setdefault(c.tool_call_id, []).append(c.id)
    code_theme = None if console.no_color or console.color_system is None else SHOW_CODE_THEME
    for msg in messages:
        if msg.seq in rewinds:
            console.print(Padding(rewind_line(), (0, 0, 1, indent)))
        if starts_withdrawn(msg.seq, withdrawn):
            console.print(Padding(withdrawn_line(), (0, 0, 1, indent)))
        if msg.role == "system" or msg.entry_type == "system":
            response = None
            if msg.hooks:
                for run in msg.hooks:
                    console.print(Padding(hook_text(run), (0, 0, 0, indent)))
            elif msg.subtype in COMPACTION_SUBTYPES:  # as the viewer draws it, the summary beside it
                # (Claude Code's boundary says only that it compacted: its summary is the next message)
                summary = (
                    f": {one_line(msg.content, 100)}"
                    if msg.content and msg.subtype != "compact_boundary"
                    else ""
                )
                console.print(
                    Padding(Text(f"── {COMPACTED}{summary}", style=COMPACTED_STYLE), (0, 0, 0, indent))
                )
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
        drawn = bool(msg.content or msg.thinking or msg.tool_calls)
        # a later line of an API response drawn above goes on under its header (as the viewer
        # draws it); calls of another response have a header of their own, not the prompt's
        goes_on = msg.message_id is not None and msg.message_id == response
        if drawn:
            response = msg.message_id
        elif msg.role != "user" and msg.message_id != response:  # not a call's result: another response
            response = None
        parts = parse(msg.content) if msg.role == "user" and msg.content else []
        if parts and any(not isinstance(p, Typed) for p in parts):
            ends = _print_parts(console, msg, parts, indent, markdown, code_theme)
            _print_images(console, msg, indent)  # pasted beside an IDE note or a command: still there
            _print_hooks(console, msg, indent)
            if ends or msg.images or any(not run.before for run in msg.hooks):
                console.print()
            continue
        if msg.is_compact_summary:  # no one's message: named as the viewer names it
            label = Text(f"≡ {COMPACT_SUMMARY}", style=f"bold {SUMMARY_STYLE}")
            label.append(f" {clock(msg.timestamp)}" if msg.timestamp is not None else "", style="dim")
            console.print(Padding(label, (0, 0, 0, indent)))
            console.print(Padding(long_text(msg.content or "", SUMMARY_STYLE), (0, 0, 1, indent + 2)))
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
        if msg.model and msg.role != "user":  # a prompt or a tool's output is no model's (as the exports say)
            label.append(f"  {flat(msg.model)}", style="dim")
        if msg.seq in withdrawn:
            label.append(f"  {WITHDRAWN_TAG}", style=WITHDRAWN_STYLE)
        if (msg.content or msg.thinking or msg.tool_calls) and not goes_on:  # one header a response
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
        _print_images(console, msg, indent)
        for call in msg.tool_calls:
            mark = STATUS_MARK.get(call.status or "pending", "?")
            line = Text(f"▸ {flat(call.name)}  ", style="yellow")
            line.append(tool_summary(call))
            line.append(f"  {mark}", style="red" if call.status == "failed" else "green")
            duration = call.duration_ms
            if duration is not None:
                line.append(f" · {elapsed(duration)}", style="dim")
            console.print(Padding(line, (0, 0, 0, indent + 2)))
            items = todos(call_params(call)) if tool_group(call.agent, call.name) == "todo" else None
            if items is not None:
                before = todo_before(tool_result_extra(conn, call))
                console.print(Padding(todo_text(items, before), (0, 0, 0, indent + 6)))
            started = children.get(call.id, [])
            if call.child_session_id and call.child_session_id not in started:
                started = [call.child_session_id, *started]
            for child_id in started if expand_subagents else []:
                child = get_session(conn, child_id)
                if child is not None:
                    render_session(
                        console, conn, child, expand_subagents=True, indent=indent + 4, markdown=markdown
                    )
                    response = None  # what its response says next is under a header again, not the child's
        _print_hooks(console, msg, indent)
        if msg.content or msg.tool_calls or msg.images or any(not run.before for run in msg.hooks):
            console.print()


# ---------------------------------------------------------------------- pages drawn by workers

SHOW_WORKERS_ENV = "THREADLOOM_SHOW_WORKERS"  # how many worker processes `show` starts; 0: none
# a shorter session is drawn in well under a second: starting a worker (a fresh interpreter, about
# 0.3 s of imports) would cost more than it saves
PARALLEL_MIN_MESSAGES = 5_000
MAX_SHOW_WORKERS = 4  # past a few, this process writing what they draw sets the pace
PAGE_MESSAGES = 500  # messages drawn by one process at a time
LEAD_PAGES = 8  # drawn here while the workers start, so the first lines come at once
WORKER_MAIN = "from threadloom.core.present.render import page_worker; page_worker()"


def show_workers(messages: int) -> int:
    """How many worker processes draw pages of a session of `messages` messages: one fewer than
    the cores this process may use (it draws pages too), none for a short session; the setting
    SHOW_WORKERS_ENV says otherwise."""
    asked = os.environ.get(SHOW_WORKERS_ENV, "")
    if asked.strip().isdigit():
        return min(int(asked), MAX_SHOW_WORKERS)
    if messages < PARALLEL_MIN_MESSAGES:
        return 0
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(0, min(cores - 1, MAX_SHOW_WORKERS))


def database_file(conn: sqlite3.Connection) -> str:
    """The file `conn` reads, "" for a database in memory (a session rebuilt as it was: --as-of)."""
    row = conn.execute("PRAGMA database_list").fetchone()
    return str(row[2] or "") if row else ""


def render_pages(
    printer: PlainConsole,
    conn: sqlite3.Connection,
    path: str,
    session_id: str,
    *,
    workers: int,
    expand_subagents: bool = True,
    indent: int = 0,
    markdown: bool = True,
    page: int = PAGE_MESSAGES,
    lead: int = LEAD_PAGES,
    rewinds: frozenset[int] | None = None,
    withdrawn: frozenset[int] | None = None,
) -> None:
    """A session's messages as `render_messages` prints them, drawn a page at a time by this
    process and `workers` others (`page_worker`, reading the database at `path`), on every core:
    a page draws the same whoever draws it. This process draws a short first page (its lines come
    at once), starts the workers, draws the next pages up to `lead` while they start, then the
    pages are dealt in turn (this process, worker 1, worker 2, …) and written in order as they
    come. A worker that cannot start or stops leaves its pages to this
    process."""
    # each page as (its first seq, its messages): a short first one, whose lines come at once
    # (as `message_pages` reads), then `page` at a time
    seqs = conn.execute(
        "SELECT seq FROM entries WHERE session_id = ? AND seq IS NOT NULL ORDER BY seq", (session_id,)
    ).fetchall()
    cuts = [0, *range(min(FIRST_PAGE, page), len(seqs), page)] if seqs else []
    pages = [(seqs[at][0], page if at else min(FIRST_PAGE, page)) for at in cuts]

    def owner(index: int) -> int:  # 0: this process; k: worker k
        return 0 if index < max(lead, 1) else (index - lead) % (workers + 1)

    options: dict[str, Any] = {"expand_subagents": expand_subagents, "indent": indent, "markdown": markdown}
    if rewinds is None:  # the caller that drew the header knows them already
        session = get_session(conn, session_id)
        rewinds = rewinds_of(conn, session) if session is not None else frozenset()
    if withdrawn is None:
        withdrawn = withdrawn_seqs(conn, session_id)
    job = {
        "db": path,
        "session": session_id,
        "width": printer.width,
        "height": printer.rich.height,
        "rewinds": sorted(rewinds),
        "withdrawn": sorted(withdrawn),
        **options,
    }
    pool: list[_PageWorker] = []
    try:
        for i, (start, size) in enumerate(pages):
            if i == 1:  # the workers start once the first lines are written, not competing with them
                printer.flush()
                pool = [
                    _PageWorker({**job, "pages": [p for j, p in enumerate(pages) if owner(j) == k]})
                    for k in range(1, workers + 1)
                ]
            k = owner(i)
            drawn = pool[k - 1].next_page() if k else None
            if drawn is not None:
                printer.write(drawn)
                continue
            shown = messages(conn, session_id, limit=size, from_seq=start, tool_results=False)
            response = response_before(conn, session_id, start)
            render_messages(
                printer,
                conn,
                session_id,
                shown,
                response=response,
                rewinds=rewinds,
                withdrawn=withdrawn,
                **options,
            )
    finally:
        for worker in pool:
            worker.stop()


class _PageWorker:
    """A process drawing its share of a session's pages (`page_worker`), as it is sent them."""

    def __init__(self, job: dict[str, Any]) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        if not job["pages"]:
            return
        try:
            self.proc = subprocess.Popen(
                # -P: the folder `show` runs in is not where the worker imports from
                [sys.executable, "-P", "-c", WORKER_MAIN],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,  # one that fails has its pages drawn here: nothing to say
            )
            assert self.proc.stdin is not None
            self.proc.stdin.write(orjson.dumps(job) + b"\n")
            self.proc.stdin.close()
        except OSError:
            self.stop()

    def next_page(self) -> str | None:
        """The next of its pages as it drew it; None once it has stopped (that page is not drawn)."""
        if self.proc is None:
            return None
        assert self.proc.stdout is not None
        head = self.proc.stdout.read(8)
        size = int.from_bytes(head, "big") if len(head) == 8 else -1
        data = self.proc.stdout.read(size) if size >= 0 else b""
        if size < 0 or len(data) != size:
            self.stop()
            return None
        return data.decode("utf-8", "surrogatepass")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            if self.proc.stdout is not None:
                self.proc.stdout.close()
            self.proc = None


def page_worker() -> None:
    """A worker of `render_pages`: the job on standard input (a JSON line: the database, the
    session, the console's size, the options, its pages as (first seq, messages)), each page
    drawn as plain lines and written to standard output as its length in bytes (8, big-endian)
    then its UTF-8. Ends when its pages are drawn, or when nobody reads them any more."""
    import io
    import signal

    from ..store import db

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C reaches `show`, which stops its workers
    gc.disable()  # as `show` itself does while it draws (see PlainConsole.drawing)
    job = orjson.loads(sys.stdin.buffer.readline())
    conn = db.connect(job["db"], readonly=True)
    out = io.StringIO()
    printer = PlainConsole(Console(highlight=False, width=job["width"], height=job["height"], file=out))
    options = {key: job[key] for key in ("expand_subagents", "indent", "markdown")}
    rewinds, withdrawn = frozenset(job["rewinds"]), frozenset(job["withdrawn"])
    pipe = sys.stdout.buffer
    try:
        for start, size in job["pages"]:
            shown = messages(conn, job["session"], limit=size, from_seq=start, tool_results=False)
            response = response_before(conn, job["session"], start)
            render_messages(
                printer,
                conn,
                job["session"],
                shown,
                response=response,
                rewinds=rewinds,
                withdrawn=withdrawn,
                **options,
            )
            printer.flush()
            data = out.getvalue().encode("utf-8", "surrogatepass")
            out.seek(0)
            out.truncate()
            pipe.write(len(data).to_bytes(8, "big") + data)
            pipe.flush()
    except BrokenPipeError:  # `show` ended (its reader left): so does its worker
        pass


NOTE_STYLE = "dim"
STDERR_STYLE = "red"


def _print_hooks(console: Printer, msg: MessageRow, indent: int) -> None:
    for run in msg.hooks:
        if not run.before:
            console.print(Padding(hook_text(run), (0, 0, 0, indent + 2)))


REWIND_NOTE = "── ↶ rewound: a new branch starts here, from an earlier message ──"
REWIND_STYLE = "#5fafaf"


def rewind_line() -> Text:
    """Where the user went back (Esc Esc, "redo from here") and asked again: a later branch's first
    prompt, whose branch follows the one above it in the session's order."""
    return Text(REWIND_NOTE, style=REWIND_STYLE)


COMPACTED = "✂ conversation compacted"  # a compaction's line, in the viewer and `show`
COMPACTED_STYLE = "#87afaf"
WITHDRAWN_MARK = "⤺"
WITHDRAWN_NOTE = f"── {WITHDRAWN_MARK} withdrawn by an undo or a rewind below ──"
WITHDRAWN_TAG = f"{WITHDRAWN_MARK} withdrawn"
WITHDRAWN_STYLE = "dim italic #d78787"


def withdrawn_line() -> Text:
    """Above a run of messages an undo or a rewind took back out of the model's context, which
    the log still holds (`withdrawn_seqs`): read as ordinary messages, they looked still in play."""
    return Text(WITHDRAWN_NOTE, style=WITHDRAWN_STYLE)


def starts_withdrawn(seq: int, withdrawn: Collection[int]) -> bool:
    """Whether message `seq` opens a run of withdrawn messages (the one before it is not one)."""
    return seq in withdrawn and seq - 1 not in withdrawn


def rewinds_of(conn: sqlite3.Connection, session: SessionSummary) -> frozenset[int]:
    """The positions of the prompts that start a later branch (none in a session of one branch)."""
    return frozenset(rewind_seqs(conn, session.id)) if session.branch_count else frozenset()


def _print_images(console: Printer, msg: MessageRow, indent: int) -> None:
    for image in msg.images:
        console.print(Padding(Text(f"▣ {describe(image)}", style="#d7af5f"), (0, 0, 0, indent + 2)))


def _print_parts(
    console: Printer,
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
            typed = message_body(part.text, markdown=markdown, code_theme=code_theme, typed=True)
            console.print(Padding(typed, pad))
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
    console: Printer, conn: sqlite3.Connection, session_id: str, *, subagents: bool = True
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
