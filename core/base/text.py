"""Small formatting helpers shared by the CLI and the TUI."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

# The search syntax, shown by `threadloom search --help` and the TUI (kept here: importing
# core.read.search pulls in rapidfuzz, which `threadloom --help` and a no-change ingest do not need).
SEARCH_HELP = """\
words            any order, typos forgiven; with search by meaning (hybrid, the default), a sentence
                 as you remember it finds its turn even when it shares no word (--mode words: all must match)
"exact phrase"   the words in this order
parseConf        prefixes match identifiers (parseConfigFile)
agent:codex      only this agent            project:api     project name or path contains
role:user        user | assistant | system  session:3f2a    a session id prefix
tool:Bash        tool calls of this tool (searches tool input and output)
file:parser.py   turns that read or changed a file  cmd:pytest  turns that ran a command
error:Timeout    turns whose tool calls failed with it
in:tools         also tool inputs/outputs   in:thinking     also thinking
in:main          main sessions only (subagents are searched by default)
signal:retry-loop  sessions showing this signal (see `threadloom signals --help`)
tag:flaky        what you tagged (`threadloom tag`, t)       note:UTC  with a note holding the word
machine:laptop   sessions of that machine (synced)  who:ana   pushed by that person
after:2026-03-01 before:yesterday  after:7d (also 12h, 2w)
filters alone    the newest records they let through (tool:Edit project:api)"""


# What "now" is for the dates shown (which year is this one, how long ago): the system's clock,
# or the one the TUI was started with (tests and screenshots pin one).
_clock: Callable[[], float] = time.time


def use_clock(now: Callable[[], float]) -> None:
    """Read the time of day from `now` when a date is written without one given."""
    global _clock
    _clock = now


def human_when(ms: int | None, now: float | None = None) -> str:
    """'3m ago', 'yesterday', '12 Mar', '12 Mar 2024' (another year's) — short enough for a column."""
    if ms is None:
        return "—"
    now = _clock() if now is None else now
    delta = now - ms / 1000
    if delta < 0:
        delta = 0
    if delta < 60:
        return "just now"
    if delta < 3600:
        return f"{int(delta // 60)}m ago"
    if delta < 86400:
        return f"{int(delta // 3600)}h ago"
    if delta < 2 * 86400:
        return "yesterday"
    if delta < 7 * 86400:
        return f"{int(delta // 86400)}d ago"
    dt = datetime.fromtimestamp(ms / 1000)
    if dt.year == datetime.fromtimestamp(now).year:
        return dt.strftime("%d %b")
    return dt.strftime("%d %b %Y")  # a day of another year is never read as this year's


def short_when(ms: int | None, now: float | None = None) -> str:
    """'12 Jun 14:05' in the current year, '12 Jun 2025' before it: the one style of a session's
    dates (the TUI's list, `threadloom sessions`, `show`'s header). A list sorted by time reads in
    order across a new year, and an old session says how old."""
    if ms is None:
        return ""
    dt = datetime.fromtimestamp(ms / 1000)
    this_year = datetime.fromtimestamp(_clock() if now is None else now).year
    return dt.strftime("%d %b %H:%M" if dt.year == this_year else "%d %b %Y")


def shorter_when(text: str) -> str:
    """A `short_when` date for a column that has no room for it whole: '12 Jun' this year (the
    time dropped), 'Jun 2025' before it (the day dropped, never the year)."""
    parts = text.split()
    if len(parts) != 3:
        return text
    return " ".join(parts[:2]) if ":" in parts[2] else " ".join(parts[1:])


def moment(ms: int | None, now: float | None = None) -> str:
    """'12 Jun 14:05:09' this year, '12 Jun 2025 14:05:09' before it: a message's time, the year
    said where it is not this year's."""
    if ms is None:
        return ""
    dt = datetime.fromtimestamp(ms / 1000)
    this_year = datetime.fromtimestamp(_clock() if now is None else now).year
    return dt.strftime("%d %b %H:%M:%S" if dt.year == this_year else "%d %b %Y %H:%M:%S")


def human_duration(ms: int | None) -> str:
    """'45s', '12m', '3h 05m', '2d 4h': how long a session went on, short enough for a column."""
    if ms is None:
        return ""
    seconds = ms // 1000
    if seconds < 60:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 24:
        return f"{hours}h {minutes % 60:02d}m"
    return f"{hours // 24}d {hours % 24}h"


def elapsed(ms: int | None) -> str:
    """'3.1 s', '4m 05s', then as `human_duration` ('3h 05m', '3d 3h'): how long a call or a turn
    took, its tenths of a second while they matter (a call left unanswered for days read '271672.0 s')."""
    if ms is None or ms >= 3_600_000:
        return human_duration(ms)
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    minutes, secs = divmod(int(ms) // 1000, 60)
    return f"{minutes}m {secs:02d}s"


# what a stats row of no model is called: messages and calls of a session whose agent recorded none
NO_MODEL = "(no model recorded)"


def count_of(n: int, noun: str) -> str:
    """'1 message', '2,310 messages'."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def left_as_is(n: int) -> str:
    """What a fork does not undo, said of `n` files: 'stays as it is', 'stay as they are'."""
    return "stays as it is" if n == 1 else "stay as they are"


def it_or_them(n: int) -> str:
    """What stands for `n` things (files, turns): 'it', 'them'."""
    return "it" if n == 1 else "them"


def human_tokens(n: int | None) -> str:
    if not n:
        return "0"
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if n >= size:
            value = n / size
            return f"{value:.1f}{unit}" if value < 100 else f"{value:.0f}{unit}"
    return str(n)


def clock(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M")


# what terminals read as commands rather than text: CSI (colours, cursor moves), OSC (titles,
# links) and the two-character escapes
ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
# the one kind that only colours text (Select Graphic Rendition): kept as styles, or dropped
COLOURS = re.compile(r"\x1b\[[0-9;:]*m")


def strip_escapes(text: str) -> str:
    """`text` without the escape sequences tools print (a hook's "\x1b[1mPostToolUse\x1b[22m", a
    coloured test run). What is shown to a reader goes through `drop_colours` and `printable`
    instead: a sequence that would do something is seen, not lost."""
    return ESCAPE.sub("", text) if "\x1b" in text else text


def drop_colours(text: str) -> str:
    """`text` without its colour sequences (they only colour, and where it is shown has no colours
    to give); every other escape sequence is left for `printable` to draw (ESC as ␛)."""
    return COLOURS.sub("", text) if "\x1b" in text else text


# The bidirectional controls: embeddings and overrides (U+202A-U+202E), isolates (U+2066-U+2069)
# and the marks (U+200E, U+200F, U+061C). A terminal that honours them shows text in another order
# than it is (a command, a path or a title that reads as something else: "Trojan Source").
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
# what a terminal acts on rather than shows, once escape sequences are dealt with: the C0
# controls but newline and tab, DEL, the C1 controls (U+009B starts a CSI on some terminals), the
# bidirectional controls and lone surrogates (which cannot even be encoded for the terminal)
UNPRINTABLE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff{BIDI_CONTROLS}]")


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return chr(0x2400 + code) if code < 0x20 else f"\\u{code:04x}"  # ␛ for ESC, \u009b for CSI


def printable(text: str) -> str:
    """`text` with every character a terminal would act on made visible: a C0 control as its
    picture (ESC → ␛, so an escape sequence reads "␛[2J"), anything else as `\\uXXXX` (a bidi
    override as `\\u202e`; a JSON reader also takes it back as the character). What a damaged
    database or an odd log holds never reaches the terminal raw, nor is any of it lost."""
    return UNPRINTABLE.sub(_shown, text)


def one_line_name(text: str) -> str:
    """A path or name printed where a line break or tab in it would forge another line or column
    (a folder named "a\nrestored: /etc/passwd"): `printable`, those two drawn as ␊ and ␉ too."""
    return printable(text).replace("\n", "\u240a").replace("\t", "\u2409")


def flat(text: str | None) -> str:
    """`text` as one line of what a reader is shown: colours dropped, whitespace collapsed, and
    whatever else a terminal would act on drawn visibly (`printable`)."""
    if not text:
        return ""
    return printable(" ".join(drop_colours(text).split()))


def one_line(text: str | None, width: int = 80) -> str:
    """`text` on one line of at most `width` characters (`flat`)."""
    shown = flat(text)
    return shown if len(shown) <= width else shown[: max(1, width - 1)] + "…"


NOTICE = re.compile(r"^\s*<task-notification>(.*?)</task-notification>(.*)$", re.S)
NOTICE_FIELD = re.compile(r"<([a-z-]+)>(.*?)</\1>", re.S)


@dataclass
class TaskNotice:
    """A background task's completion, which Claude Code hands the model as a user message made of
    `<task-notification>` tags: shown as a notice, never as something the user typed."""

    task_id: str
    status: str
    summary: str
    result: str
    usage: str
    trailer: str  # what follows the tags ("Full transcript available at: …")

    @property
    def headline(self) -> str:
        return self.summary or f"background task {self.task_id} {self.status}".replace("  ", " ").strip()

    @property
    def title(self) -> str:
        """What names it in a title or a branch row."""
        return f"⚑ {self.headline}"


def readable(text: str | None) -> str:
    """`text` as a person reads it in a list (a search hit, a fork point, a branch): a background
    task's notification as its title and result, Claude Code's markup as what it stands for
    (`/model opus`, `! uv run pytest`, a command's output as its text: `core.base.markup.plain`)."""
    notice = task_notice(text)
    if notice is None:
        from .markup import plain  # here: a run that draws no text does not load the markup's parser

        return plain(text)
    return notice.title + (f": {notice.result}" if notice.result else "")


def task_notice(text: str | None) -> TaskNotice | None:
    # the tags open the message: looking at its head keeps this cheap on a search's big candidates
    match = NOTICE.match(text) if text and "<task-notification>" in text[:64] else None
    if match is None:
        return None
    fields = {name: value.strip() for name, value in NOTICE_FIELD.findall(match.group(1))}
    return TaskNotice(
        fields.get("task-id", ""),
        fields.get("status", ""),
        fields.get("summary", ""),
        fields.get("result", ""),
        fields.get("usage", ""),
        match.group(2).strip(),
    )


# ---------------------------------------------------------------------- prompts as titles
# The tags Claude Code wraps around what is typed; a prompt of any agent is titled the same way.

CONTEXT_TAGS = re.compile(
    r"<(ide_selection|ide_opened_file|system-reminder|local-command-caveat)>.*?</\1>", re.S
)
TEAMMATE_WRAPPER = re.compile(r"^\s*<teammate-message[^>]*>\s*(.*?)\s*</teammate-message>\s*$", re.S)
# Claude Code 2.1's `/btw` side question: a forked agent (`subagents/agent-aside_question-<id>.jsonl`)
# asked the question wrapped in this reminder, after a copy of the conversation so far
SIDE_QUESTION_MARK = "<system-reminder>This is a side question from the user."


def side_question(text: str | None) -> str | None:
    """The question of a `/btw` side question's wrapped prompt (None for any other text)."""
    if not text or not text.lstrip().startswith(SIDE_QUESTION_MARK):
        return None
    _, closed, after = text.partition("</system-reminder>")
    return (after if closed else text.lstrip()[len(SIDE_QUESTION_MARK) :]).strip() or None


def prompt_title(text: str) -> str:
    """A one-line title from a prompt: slash commands as `/cmd args`, `!` commands as `! command`,
    IDE notes left out, teammate wrappers removed, a background task's notification by its
    summary, a side question as one."""
    question = side_question(text)
    if question is not None:
        return one_line("Side question: " + question, 200)
    notice = task_notice(text)
    if notice is not None:
        return one_line(notice.title, 200)
    wrapped = TEAMMATE_WRAPPER.match(text)
    if wrapped:
        text = wrapped.group(1)
    from .markup import plain

    # Claude Code's markup (core.base.markup): `/cmd args`, `! command`, IDE notes left out
    text = plain(text)
    cleaned = CONTEXT_TAGS.sub(" ", text)  # a system reminder inside the words
    if cleaned.strip():
        text = cleaned
    return _cut_at_word(" ".join(text.split()), TITLE_CHARS)


TITLE_CHARS = 200  # a title made from a prompt: the prompt's start, cut at a word


def _cut_at_word(text: str, width: int) -> str:
    """`text` cut to `width` characters with an ellipsis, after its last whole word when one ends
    in the last quarter (a long word is cut where it must be)."""
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > width * 3 // 4 else cut) + "…"


def is_bare_command(text: str) -> bool:
    """`/clear`, `/compact` and friends: real prompts, but poor session titles."""
    title = prompt_title(text)
    return title.startswith("/") and " " not in title


# what each signal a session can show means (core.insight.signals finds them; `signal:NAME` in search and
# `threadloom signals --help` name them): kept here, where starting a command costs nothing to read
SIGNALS: dict[str, str] = {
    "retry-loop": "the same tool with near-identical input failing several times in a row",
    "error-cascade": "several different tool calls failing in a row",
    "interrupted": "the user interrupted a tool call or a reply",
    "rejected": "the user refused a tool call (permission friction)",
    "context-thrashing": "compactions close together: the context keeps refilling",
    "abandoned-branch": "cost spent on a branch the user rewound away from",
    "unused-subagent": "a subagent whose result never came back to be used",
    "cache-miss": "a request within a turn that re-read its context without the prompt cache",
    "model-change": "the model changed within the session",
    "long-pause": "a long wait before an assistant message",
    "repeated-prompt": "the same prompt sent more than once in the session",
}
# raised when what the signal pass finds changes (2: Codex's turn_aborted, Cline's condensing): the
# next ingest finds every session's signals again, not only those of the sessions it read
SIGNALS_VERSION = "2"
SIGNALS_VERSION_KEY = "signals_version"


ASCII_RUNS = re.compile(r"[\x20-\x7e]+")  # printable ASCII: one cell a character


@dataclass(frozen=True, slots=True)
class TableColumn:
    """One column of `text_table`: its header, and how its cells are fitted."""

    name: str
    right: bool = False  # justified to the right (numbers)
    min_width: int | None = None
    max_width: int | None = None  # longer cells end in "…"


def text_table(columns: list[TableColumn], rows: Sequence[tuple[str, ...]], width: int) -> list[str] | None:
    """The lines of a table as Rich draws a `Table(box=None, pad_edge=False)` of one-line cells
    (no_wrap, overflow="ellipsis"), each line's trailing spaces dropped; None when it does not fit
    in `width` (Rich would squeeze the columns: the caller draws it with Rich). Rich measures and
    renders every cell as a styled object: 20,000 sessions took it 20 s, these lines 0.2 s."""
    from rich.cells import cell_len, set_cell_size

    def length(cell: str) -> int:
        """Terminal cells, Rich's count (which goes character by character: only the rest's)."""
        if cell.isascii():
            return len(cell)
        rest = ASCII_RUNS.sub("", cell)
        return len(cell) - len(rest) + cell_len(rest)

    widths = [length(c.name) for c in columns]
    for row in rows:
        for i, cell in enumerate(row):
            n = length(cell)
            if n > widths[i]:
                widths[i] = n
    for i, column in enumerate(columns):
        if column.min_width is not None:
            widths[i] = max(widths[i], column.min_width)
        if column.max_width is not None:
            widths[i] = min(widths[i], column.max_width)
    if sum(widths) + 2 * (len(columns) - 1) > width:
        return None

    def line(cells: tuple[str, ...]) -> str:
        parts = []
        for column, room, cell in zip(columns, widths, cells, strict=True):
            if column.right:
                cell = cell.rstrip()  # as Rich justifies to the right
            n = length(cell)
            if n > room:
                cell, n = set_cell_size(cell, room - 1) + "…", room
            pad = " " * (room - n)
            parts.append(pad + cell if column.right else cell + pad)
        return "  ".join(parts).rstrip()

    return [line(tuple(c.name for c in columns)), *map(line, rows)]


# a folder as Windows names it: a drive letter (`C:\…`, `c:/…`) or a share (`\\server\…`)
WINDOWS_FOLDER = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


def project_folder(cwd: str) -> str:
    """A working folder as the archive groups sessions by it: a Windows drive letter in capitals,
    as Windows ignores its case (Claude Code's CLI writes `C:\\…`, its desktop app `c:\\…`: one
    folder, which was two projects). Any other path as written."""
    if len(cwd) > 2 and cwd[1] == ":" and WINDOWS_FOLDER.match(cwd):
        return cwd[0].upper() + cwd[1:]
    return cwd


def recased(before: str | None, after: str) -> bool:
    """Whether `after` is the Windows folder `before` names, in the casing its user gave it where
    `before` was all lowercase: an agent that lowercases the paths it keeps (Gemini CLI's project
    folders) names it as typed elsewhere in its log, the name the archive then keeps."""
    return (
        before is not None
        and WINDOWS_FOLDER.match(before) is not None
        and before == before.lower()
        and after != before
        and after.lower() == before
    )


def folder_name(path: str) -> str:
    """The last part of a folder's path, a Windows one's too wherever it is read (`C:\\work\\shop`
    is named `shop`, not the whole path as POSIX reads it); the path itself when it has none."""
    parts = re.split(r"[\\/]", path) if WINDOWS_FOLDER.match(path) else path.split("/")
    return next((p for p in reversed(parts) if p), "") or path


def json_indent(text: str) -> str:
    """The indent of a JSON file's first nested line (a rewrite keeps the file's own: Gemini's
    settings use four spaces), two spaces when it has none."""
    found = re.match(r"\s*[\[{][ \t]*\r?\n([ \t]+)\S", text)
    return found.group(1) if found else "  "
