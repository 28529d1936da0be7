"""Rich renderables for the parts of a message: headers, tool calls, diffs, events.

Kept apart from the widget so the message view only deals with lines and caching, and so the
look of each part can be read (and changed) in one place.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

import orjson
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.padding import Padding
from rich.segment import Segment
from rich.text import Text
from textual.color import Color
from textual.filter import LineFilter

from ..core.adapters import spawned, tool_group
from ..core.adapters.base import ImageRef
from ..core.adapters.edits import EDIT_SEARCH, EditBlock, edit_blocks
from ..core.base import markup
from ..core.base.text import (
    BIDI_CONTROLS,
    TaskNotice,
    elapsed,
    flat,
    human_tokens,
    moment,
    one_line,
    printable,
    task_notice,
)
from ..core.present.markdown import SYNTAX_THEME
from ..core.present.render import (
    COMPACT_SUMMARY,
    COMPACTED,
    COMPACTED_STYLE,
    SUMMARY_STYLE,
    WITHDRAWN_MARK,
    WITHDRAWN_STYLE,
    hook_duration,
    message_body,
    spaced,
    terminal_text,
)
from ..core.present.render import long_text as core_long_text
from ..core.read.browse import COMPACTION_SUBTYPES, MessageRow, ToolCall
from ..core.read.calls import call_params, call_prose, result_text, tool_summary
from ..core.read.diffs import DiffLine, call_diff, diff_between, is_edit
from ..core.read.images import describe, human_bytes
from ..core.read.side_files import PersistedOutput

ROLE_STYLE = {"user": "bold #5fafff", "assistant": "bold #87d787", "system": "dim"}
NOTICE_STYLE = "bold #d7af5f"
STATUS = {
    "completed": ("✓", "green"),
    "failed": ("✗", "bold red"),
    "rejected": ("⊘ rejected", "yellow"),
    "interrupted": ("⏹ interrupted", "yellow"),
    "pending": ("…", "dim"),
}
EXIT_CODE = re.compile(r"[Ee]xit code (\d+)")
CAT_N = re.compile(r"^\s*(\d+)\t(.*)$")

OUTPUT_LINES = 60
# characters of those lines: a tool that printed 5 MB on one line must not wrap to tens of thousands
# of rows, each laid out before the pane answers a key
OUTPUT_CHARS = 20_000
# an opened call's input (a diff, a command, its JSON): a 20,000-line Write drawn whole took
# seconds of each redraw (expanding it, toggling Markdown)
INPUT_LINES = 1_000
INPUT_CHARS = 100_000
DIFF_MARKS = ("+", "-", " ")  # the first column of a diff row
ADDED_STYLE = "#87d787 on #173317"
REMOVED_STYLE = "#ff8787 on #3a1717"
HUNK_STYLE = "#5f87af"


def short_model(model: str | None) -> str:
    """`claude-sonnet-4-5-20250929` → `sonnet-4-5`: the part a reader tells models apart by."""
    if not model:
        return ""
    name = model.removeprefix("claude-")
    return re.sub(r"-\d{8}$", "", name)


def when(ms: int | None) -> str:
    """A message's time: '12 Jun 14:05:09', with its year when not this year's (`core.base.text.moment`)."""
    return moment(ms)


def plain_title(title: str | None, width: int) -> Text:
    """A session's title for a border: as plain text (a str there is read as markup, and a prompt
    such as "[Image #1] fix this" lost its brackets), never blank."""
    return Text(one_line(title, width) or "(untitled)")


TAG_STYLE = "#d7af5f"


def tags_text(tags: Sequence[str]) -> Text:
    """A message's tags (#flaky-test #timezone): people's text, drawn as it is, never read as markup."""
    return Text(" ".join(f"#{flat(tag)}" for tag in tags), style=TAG_STYLE)


def header(msg: MessageRow, tags: Sequence[str] = (), *, withdrawn: bool = False) -> Text:
    """A message's first line: who, when, the model, its tokens, the tags put on it (`t`), and
    whether an undo or a rewind took it back (`withdrawn`)."""
    role = msg.role or msg.entry_type or "?"
    text = Text()
    if role == "user" and task_notice(msg.content) is not None:
        text.append("⚑ background task", style=NOTICE_STYLE)  # not typed by the user
    else:
        text.append("● " if role == "user" else "◆ ", style=ROLE_STYLE.get(role, "bold"))
        text.append(role, style=ROLE_STYLE.get(role, "bold"))
    if withdrawn:  # the mark of the line above the run (`withdrawn_line`): the header stays short
        text.append(f" {WITHDRAWN_MARK}", style=WITHDRAWN_STYLE)
    if msg.timestamp is not None:
        text.append(f"  {when(msg.timestamp)}", style="dim")
    if msg.model and role != "user":  # a prompt or a tool's output is no model's (Codex names one on each)
        text.append(f"  {flat(short_model(msg.model))}", style="#af87d7")
    if msg.tokens:
        text.append(f"  {human_tokens(msg.tokens)} tok", style="dim")
    if tags:
        text.append("  ")
        text.append_text(tags_text(tags))
    return text


def message_text(
    msg: MessageRow, *, markdown: bool = True, preview: int | None = None, text: str | None = None
) -> RenderableType:
    """The visible text (`text`: the part of it to draw, the words typed beside Claude Code's
    markup), as Markdown unless not `markdown` (`preview`: only that many lines will be shown); an
    assistant's SEARCH/REPLACE edit blocks (Aider's) as diffs, a background task's notification
    as a notice. Claude Code's markup is drawn by the parts' own views below."""
    content = (msg.content or "") if text is None else text

    def written(text: str, style: str = "") -> RenderableType:
        return message_body(
            text,
            markdown=markdown,
            style=style,
            rest=LONG_TEXT_REST,
            code_theme=SYNTAX_THEME,
            preview=preview,
            typed=msg.role == "user",
        )

    if msg.role == "assistant" and EDIT_SEARCH in content:
        parts = edit_blocks(content)
        if any(isinstance(part, EditBlock) for part in parts):
            return spaced([edit_block_view(p) if isinstance(p, EditBlock) else written(p) for p in parts])
    notice = task_notice(content)
    if notice is not None:
        return notice_text(notice)
    return written(content, "dim" if msg.is_meta else "")


LONG_TEXT_REST = "r shows the raw record"


def long_text(text: str, style: str = "") -> RenderableType:
    """`core.present.render.long_text`, the rest a key away."""
    return core_long_text(text, style, LONG_TEXT_REST)


def edit_block_view(block: EditBlock) -> RenderableType:
    """A SEARCH/REPLACE block as a diff of what it searched for against what replaces it."""
    return diff_lines(
        [DiffLine("file", block.path or "(no file named)"), *diff_between(block.old, block.new)]
    )


def notice_text(notice: TaskNotice) -> Text:
    """A background task's end: its summary and status, its result as written, the rest dimmed."""
    mark, style = STATUS.get(notice.status, ("", "dim"))
    text = Text(notice.headline, style=NOTICE_STYLE)
    if mark:
        text.append(f"  {mark}", style=style)
    if notice.result:
        text.append("\n")
        text.append_text(terminal_text(notice.result))
    for part in (notice.usage, notice.trailer):  # "total_tokens: … duration_ms: …", "Full transcript at …"
        if part:
            text.append("\n" + one_line(part, 200), style="dim")
    return text


def thinking_line(msg: MessageRow, expanded: bool) -> RenderableType:
    size = len(msg.thinking or "")
    label = Text(("▾ " if expanded else "▸ ") + "✻ thinking", style="italic #8a8a8a")
    label.append(f"  {size:,} chars", style="dim")
    if not expanded:
        return label
    return Group(label, long_text(msg.thinking or "", "italic #9e9e9e"))


def summary_line(msg: MessageRow, expanded: bool) -> RenderableType:
    label = Text(("▾ " if expanded else "▸ ") + f"≡ {COMPACT_SUMMARY}", style=SUMMARY_STYLE)
    label.append(f"  {len(msg.content or ''):,} chars", style="dim")
    if not expanded:
        return label
    return Group(label, long_text(msg.content or "", SUMMARY_STYLE))


def image_line(image: ImageRef, note: str | None = None) -> Text:
    """An image's head line (type, size, place), with why it is not drawn when it is not."""
    line = Text(f"▣ {describe(image)}", style="#d7af5f")
    if note:
        line.append(f"  ({one_line(note, 80)})", style="dim")
    return line


def event_line(msg: MessageRow) -> Text:
    """A system record as one dim divider: compaction, API error, hook, turn duration, …"""
    ev = msg.event
    kind = msg.subtype or "system"
    style = "dim"
    if kind == "compact_boundary":
        meta = ev.get("compactMetadata")
        meta = meta if isinstance(meta, dict) else {}
        label = COMPACTED
        if meta.get("trigger"):
            label += f" · {meta['trigger']}"
        if isinstance(meta.get("preTokens"), int):
            label += f" · {human_tokens(meta['preTokens'])} tokens before"
        style = COMPACTED_STYLE
    elif kind == "api_error":
        err = ev.get("error")
        label = "⚠ API error"
        if isinstance(err, dict):
            inner = err.get("error", {}).get("error", {}) if isinstance(err.get("error"), dict) else {}
            status = err.get("status")
            label += f" {status}" if status else ""
            if isinstance(inner, dict) and inner.get("type"):
                label += f" {inner['type']}"
        if ev.get("retryAttempt"):
            label += f" · retry {ev['retryAttempt']}/{ev.get('maxRetries', '?')}"
        style = "#d75f5f"
    elif kind == "turn_duration":
        label = f"turn took {elapsed(ev.get('durationMs'))}"
    elif kind == "stop_hook_summary":
        runs = msg.hooks or markup.hook_runs({"type": "system", "subtype": kind, **ev})
        shown = [
            one_line(r.command, 60)
            + (f" · {hook_duration(r.duration_ms)}" if r.duration_ms is not None else "")
            for r in runs
            if r.command
        ]
        label = f"⚙ Stop hook: {', '.join(shown) or '?'}"
        if any(r.failed for r in runs):
            label += " · errors"
            style = HOOK_FAILED_STYLE
    elif kind in COMPACTION_SUBTYPES:  # another agent's compaction, its summary in the same record
        label = COMPACTED + (f": {one_line(msg.content, 100)}" if msg.content else "")
        style = COMPACTED_STYLE
    else:
        label = f"{kind}: {one_line(msg.content or '', 120)}" if msg.content else kind
    text = Text("── ", style=style)
    text.append(label, style=style)
    clock = when(msg.timestamp)[-8:-3] if msg.timestamp is not None else ""
    text.append(f" · {clock} ──" if clock else " ──", style="dim")  # a line with no time says none
    return text


# ---------------------------------------------------------------------------- tool calls


MIN_GIST = 12  # narrower than this, a collapsed call wraps rather than lose its command or path


def call_line(call: ToolCall, expanded: bool, width: int | None = None) -> Text:
    """`▸ Bash  npm test  ✗ exit 1 · 2.3 s` — the collapsed form of a tool call, on one line of
    `width` when given: the gist (a command, a path) gives way, the status stays."""
    params = call_params(call)
    text = Text("▾ " if expanded else "▸ ", style="#d7af5f")
    text.append(flat(call.name), style="bold #d7af5f")
    spawn = spawned(call.agent, call.name, params)
    gist = spawn.description if spawn is not None else None
    gist_at = len(text) + 2
    text.append("  " + (gist if isinstance(gist, str) else tool_summary(call)))
    gist_end = len(text)
    mark, style = STATUS.get(call.status or "pending", ("?", "dim"))
    text.append("  ")
    text.append(mark, style=style)
    if call.status == "failed":
        code = EXIT_CODE.search(result_text(call)[:200])
        text.append(f" exit {code.group(1)}" if code else " error", style=style)
    if call.duration_ms is not None:
        text.append(f" · {elapsed(call.duration_ms)}", style="dim")
    if spawn is not None and call.child_session_id:
        hint = subagent_hint(spawn.agent_type, width - text.cell_len if width else None, call.subagent_count)
        text.append(hint, style="#d787d7")
    over = text.cell_len - width if width else 0
    if over > 0 and gist_end - gist_at - over - 1 >= MIN_GIST:
        text = text[: gist_end - over - 1] + Text("…") + text[gist_end:]
    return text


def subagent_hint(agent_type: str | None, room: int | None, count: int = 1) -> str:
    """`  ↳ subagent general-purpose (Enter)`, or the longest shorter form that fits in `room`: the
    call's description is what tells three "Round 2: …" calls apart, so the hint gives way first
    ("(Enter)", then the word "subagent", then the type), down to `  ↳`. A call that started
    `count` of them (a swarm) says how many: `  ↳ 3 subagents explore (Enter)`, the count kept
    longest (`  ↳ 3 subagents`, `  ↳ 3`)."""
    kind = f" {agent_type}" if agent_type else ""
    if count > 1:  # the count stays longest: "↳ 3 explore" would read as one subagent's type
        what = f"{count} subagents"
        forms = [f"  ↳ {what}{kind} (Enter)", f"  ↳ {what}{kind}", f"  ↳ {what}", f"  ↳ {count}"]
    else:
        forms = [f"  ↳ subagent{kind} (Enter)", f"  ↳ subagent{kind}"]
        if kind:
            forms += [f"  ↳{kind}", "  ↳ subagent"]
    forms.append("  ↳")
    if room is None:
        return forms[0]
    return next((form for form in forms if cell_len(form) <= room), forms[-1])


def as_text(text: str) -> str:
    """A tool's input, a file's lines as they are to be read: a carriage return ending a line (a
    Windows file) dropped, anything else a terminal would act on drawn as text (`printable`: a
    carriage return alone as ␍, not dropped, so no text runs into the next)."""
    return printable(text.replace("\r\n", "\n"))


def clipped(lines: list[str], most_lines: int, most_chars: int) -> tuple[list[str], str | None]:
    """At most `most_lines` of `lines` holding at most `most_chars` characters (the last one shown
    cut short when needed), and how much is left out ("1,200 more lines"), None when nothing is."""
    shown, budget = [], most_chars
    for line in lines[:most_lines]:
        if len(line) > budget:
            shown.append(line[:budget])
            left = len(line) - budget + sum(len(rest) for rest in lines[len(shown) :])
            more_lines = len(lines) - len(shown)
            also = f" and {_count(more_lines)}" if more_lines else ""
            return shown, f"{left:,} more characters{also}"
        shown.append(line)
        budget -= len(line)
    more = len(lines) - len(shown)
    return shown, (f"{more:,} more lines" if more else None)


def clipped_input(text: str) -> tuple[str, Text | None]:
    """`text` as an opened call's input shows it (at most `INPUT_LINES` lines, `INPUT_CHARS`
    characters), and a line saying how much is left out, None when nothing is."""
    lines = text.splitlines()
    if len(lines) <= INPUT_LINES and len(text) <= INPUT_CHARS:
        return text, None
    shown, more = clipped(lines, INPUT_LINES, INPUT_CHARS)
    return "\n".join(shown), more_note(more)


def more_note(more: str | None, hint: str = "r shows the raw record") -> Text | None:
    return Text(f"… {more} ({hint})", style="dim") if more else None


def code(text: str, lexer: str, background: str, **kw: Any) -> RenderableType:
    """Highlighted code on the pane's own background (the terminal default would show as a box)."""
    from rich.syntax import Syntax  # Pygments is slow to import: only once something expands

    return Syntax(text, lexer, theme=SYNTAX_THEME, word_wrap=True, background_color=background, **kw)


def code_clipped(text: str, lexer: str, background: str) -> list[RenderableType]:
    """`code` of what `clipped_input` keeps of `text`, then the line saying what it left out."""
    shown, more = clipped_input(text)
    return [code(shown, lexer, background), *([more] if more else [])]


def call_body(
    call: ToolCall, extra: Any, background: str = "default", persisted: PersistedOutput | None = None
) -> RenderableType:
    """Input and output of an expanded call; edits as coloured diffs. `persisted`: the whole output
    the agent saved to a side file, of which the transcript holds a preview."""
    params = call_params(call)
    parts: list[RenderableType] = []
    group = tool_group(call.agent, call.name)
    edit = is_edit(call.name, params, call.agent)
    if edit:
        parts.append(diff_view(call.name, params, extra, call.agent))
    elif group == "shell" and isinstance(params.get("command"), str):
        parts += code_clipped(as_text(params["command"]), "bash", background)
    elif (spawn := spawned(call.agent, call.name, params)) is not None and spawn.prompt is not None:
        parts.append(Text("prompt", style="dim underline"))
        prompt, more = clipped_input(as_text(spawn.prompt))
        parts += [Text(prompt), *([more] if more else [])]
    elif (prose := call_prose(call, params)) is not None:  # a plan, a question: read, not JSON
        field_name, text = prose
        parts.append(Text(field_name, style="dim underline"))
        parts.append(message_body(as_text(text), rest=LONG_TEXT_REST, code_theme=SYNTAX_THEME))
        rest = {key: value for key, value in params.items() if key != field_name}
        if rest:
            pretty = orjson.dumps(rest, option=orjson.OPT_INDENT_2).decode()
            parts += code_clipped(as_text(pretty), "json", background)
    else:
        pretty = orjson.dumps(params, option=orjson.OPT_INDENT_2).decode()
        parts += code_clipped(as_text(pretty), "json", background)
    output = result_text(call)
    if call.status is None or call.status == "pending":
        parts.append(Text("(no result recorded)", style="dim italic"))
    elif persisted is not None and persisted.kind == "plan":
        if output:
            parts.append(Text("output", style="dim underline"))
            parts.append(output_view(call, params, output, background))
        name = PurePosixPath(persisted.named.replace("\\", "/")).name
        parts.append(
            Text(
                f"the plan is kept as plans/{name} ({human_bytes(len(persisted.data))}) · o opens it",
                style="dim",
            )
        )
    elif persisted is not None:
        label = Text("output", style="dim underline")
        name = PurePosixPath(persisted.named.replace("\\", "/")).name
        label.append(
            f"  all {human_bytes(len(persisted.data))}, kept from tool-results/{name} "
            "(the transcript has only a preview) · o opens it",
            style="dim",
        )
        parts.append(label)
        parts.append(
            output_view(call, params, persisted.text, background, more_hint="o opens the whole output")
        )
    elif output and not (group in ("edit", "write", "patch") and call.status == "completed"):
        parts.append(Text("output", style="dim underline"))
        parts.append(output_view(call, params, output, background))
    return Group(*parts)


def output_view(
    call: ToolCall,
    params: dict[str, Any],
    output: str,
    background: str,
    more_hint: str = "r shows the raw record",
) -> RenderableType:
    from rich.syntax import Syntax

    shown, more = clipped(output.splitlines(), OUTPUT_LINES, OUTPUT_CHARS)
    tail = more_note(more, more_hint)
    if call.status in ("failed", "rejected", "interrupted"):
        body: RenderableType = terminal_text("\n".join(shown), "#ff8787")
    elif tool_group(call.agent, call.name) == "read" and shown and all(CAT_N.match(line) for line in shown):
        numbered = [m for m in map(CAT_N.match, shown) if m is not None]  # every line, as just checked
        first = int(numbered[0].group(1))
        source = "\n".join(m.group(2) for m in numbered)
        path = str(params.get("file_path") or "")
        body = code(
            as_text(source),
            Syntax.guess_lexer(path, source),
            background,
            line_numbers=True,
            start_line=first,
        )
    else:
        body = terminal_text("\n".join(shown))
    return Group(body, tail) if tail else body


class FilledLines:
    """Lines whose background reaches the right edge (diff rows), wrapped to the given width. A
    diff row's text wraps beside its +/- column, so a continuation never reads as a line of its own."""

    def __init__(self, lines: list[Text]) -> None:
        self.lines = lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        for line in self.lines:
            if line.cell_len <= width or width < 8 or line.plain[:1] not in DIFF_MARKS:
                parts = line.wrap(console, width)
            else:
                marker, body = line[:1], line[1:]
                parts = body.wrap(console, width - 1)
                for number, part in enumerate(parts):
                    prefix = marker.copy() if number == 0 else Text(" ", style=marker.style)
                    parts[number] = Text.assemble(prefix, part, style=line.style)
            for part in parts:
                part.pad_right(width - part.cell_len)
                yield part


DIFF_STYLES = {
    "file": "bold",
    "hunk": HUNK_STYLE,
    "added": ADDED_STYLE,
    "removed": REMOVED_STYLE,
    "context": "#9e9e9e",
}


def diff_lines(rows: list[DiffLine]) -> RenderableType:
    """Diff lines (`core.read.diffs`) coloured: removed red, added green, hunks blue, files bold."""
    shown, more = clipped([as_text(row.text) for row in rows], INPUT_LINES, INPUT_CHARS)
    lines = FilledLines(
        [Text(text, style=DIFF_STYLES[row.kind]) for text, row in zip(shown, rows, strict=False)]
    )
    note = more_note(more)
    return Group(lines, note) if note else lines


def diff_view(name: str, params: dict[str, Any], extra: Any, agent: str | None = None) -> RenderableType:
    """What an editing call changed, as its agent's adapter reads it (`core.read.diffs`)."""
    return diff_lines(call_diff(name, params, extra, agent))


# what a terminal acts on rather than shows: C0 controls, DEL, the C1 controls (U+009B starts
# a CSI on some terminals) and the bidirectional controls (which reorder what follows them); Rich
# gives them no width, so dropping them leaves every column in place. What is drawn from a log is
# made visible before it is laid out (`core.base.text.printable`, `flat`): this only catches the rest.
CONTROLS = re.compile(f"[\x00-\x1f\x7f-\x9f{BIDI_CONTROLS}]")
LONE_SURROGATES = re.compile("[\ud800-\udfff]")  # cannot be written to the terminal at all


class NoControls(LineFilter):
    """The last step before the terminal: what a log holds (a title, a project path, a model's
    name, a tool's input) is drawn as text, never sent as a command that retitles the window,
    clears or resets the screen. One filter for every line of every widget, rather than a guard
    at each of the many places a log's value is shown."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        if not any(
            CONTROLS.search(text) or LONE_SURROGATES.search(text)
            for text, _, control in segments
            if not control
        ):
            return segments
        out = []
        for segment in segments:
            text, style, control = segment
            if not control:
                text = LONE_SURROGATES.sub("\ufffd", CONTROLS.sub("", text))  # U+FFFD: the same width
                if not text:
                    continue
                segment = Segment(text, style, control)
            out.append(segment)
        return out


NO_CONTROLS = NoControls()


class SafeLines(LineFilter):
    """Textual's own filters (a theme's colours for ANSI ones, dimming), then `NoControls`, as one
    filter: each filter copies every line it is given (a new Strip, with its caches), so one
    pass instead of two drops a copy of every line drawn."""

    def __init__(self, textuals: tuple[LineFilter, ...]) -> None:
        super().__init__()
        self.textuals = textuals

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        for textual_filter in self.textuals:
            segments = textual_filter.apply(segments, background)
        return NO_CONTROLS.apply(segments, background)


_SAFE_LINES: dict[tuple[LineFilter, ...], SafeLines] = {}


def safe_lines(textuals: Sequence[LineFilter]) -> SafeLines:
    """The one filter for these enabled Textual filters: the same object each time, as lines
    drawn are cached by their filter."""
    key = tuple(textuals)
    found = _SAFE_LINES.get(key)
    if found is None:
        found = _SAFE_LINES[key] = SafeLines(key)
    return found


# ---------------------------------------------------------------------------- Claude Code's markup
# The parts `core.base.markup` reads from a message: each drawn for what it is. Values are the log's:
# the message view's NoControls filter keeps them from acting on the terminal, and output is drawn
# by terminal_text (its colours kept as styles, no sequence sent).

SHELL_STYLE = "bold #d7af5f"
COMMAND_STYLE = "bold #d787d7"
NOTE_STYLE = "#8a8a8a"
CHIP_STYLE = "#afafd7 on #2a2a3a"
STDERR_STYLE = "#ff8787"
HOOK_STYLE = "#87af87"
CHIP_PARTS = (markup.Selection, markup.OpenedFile)
HOOK_FAILED_STYLE = "#d7af5f"
TODO_STYLE = {"completed": "#8a8a8a", "in_progress": "bold #87d7ff", "pending": ""}


def user_parts(msg: MessageRow) -> list[markup.Part]:
    """The parts of a user message's text (`core.base.markup.parse`); none for anyone else's."""
    return markup.parse(msg.content) if msg.role == "user" and msg.content else []


def command_line(part: markup.Command) -> Text:
    """A slash command as typed: `/model opus`."""
    return Text(part.line, style=COMMAND_STYLE)


def shell_line(part: markup.Shell) -> Text:
    """A `!` command as typed, its words coloured as shell."""
    from rich.syntax import Syntax  # Pygments is slow to import: only once a `!` command is drawn

    line = Text("! ", style=SHELL_STYLE)
    highlighted = Syntax(part.command, "bash", theme=SYNTAX_THEME).highlight(part.command)
    highlighted.rstrip()
    return line.append_text(highlighted)


def _count(lines: int, noun: str = "line") -> str:
    return f"{lines:,} {noun}{'' if lines == 1 else 's'}"


def shell_output(out: markup.ShellOutput, expanded: bool) -> RenderableType:
    """What a `!` command printed, under it: one line saying how much (and its first line) until
    opened, then stdout as the terminal showed it and stderr in red, never as Markdown."""
    stdout, stderr = out.stdout.rstrip("\n").splitlines(), out.stderr.rstrip("\n").splitlines()
    if out.empty:
        return Text("↳ (no output)", style=NOTE_STYLE)
    label = Text(("▾ " if expanded else "▸ ") + "output", style=SHELL_STYLE)
    sizes = [_count(len(stdout))] if stdout else []
    sizes += [f"stderr {_count(len(stderr))}"] if stderr else []
    label.append("  " + " · ".join(sizes), style="dim")
    if not expanded:
        first = next((line for line in stdout + stderr if line.strip()), "")
        label.append("  " + one_line(first, 80), style=NOTE_STYLE)
        return label
    parts: list[RenderableType] = [label]
    for lines, style in ((stdout, ""), (stderr, STDERR_STYLE)):
        if not lines:
            continue
        shown, more = clipped(lines, OUTPUT_LINES, OUTPUT_CHARS)
        parts.append(terminal_text("\n".join(shown), style))
        note = more_note(more, LONG_TEXT_REST)
        if note is not None:
            parts.append(note)
    return Group(*parts)


def note_view(part: markup.CommandOutput | markup.Caveat) -> RenderableType:
    """What a local command printed (`↳ See ya!`), or Claude Code's caveat: quiet, not a turn."""
    if isinstance(part, markup.Caveat):
        return Text(
            "◇ local commands follow (Claude Code's caveat to the model)", style=f"italic {NOTE_STYLE}"
        )
    text = part.text.strip("\n")
    style = STDERR_STYLE if part.stream == "stderr" else NOTE_STYLE
    note = Text("↳ ", style=NOTE_STYLE)
    first, _, rest = text.partition("\n")
    line = note.append_text(terminal_text(first, style))
    return Group(line, Padding(long_text(rest, style), (0, 0, 0, 2))) if rest else line


def chips_line(parts: Sequence[markup.Selection | markup.OpenedFile], expanded: bool) -> RenderableType:
    """What the IDE showed beside the prompt, as chips (`§ split.py:12-14`, `▤ README.md`); an
    opened selection shows its lines, coloured by the file's language."""
    line = Text()
    for part in parts:
        mark = "§" if isinstance(part, markup.Selection) else "▤"
        if line:
            line.append(" ")
        line.append(f" {mark} {part.chip} ", style=CHIP_STYLE)
    if any(isinstance(p, markup.Selection) and p.text for p in parts):
        line.append("  " + ("▾" if expanded else "▸ selected lines"), style="dim")
    shown: list[RenderableType] = [line]
    if expanded:
        from rich.syntax import Syntax

        for part in parts:
            if isinstance(part, markup.Selection) and part.text:
                lexer = Syntax.guess_lexer(part.path.replace("\\", "/"), part.text) if part.path else "text"
                shown.append(
                    Syntax(
                        part.text,
                        lexer,
                        theme=SYNTAX_THEME,
                        word_wrap=True,
                        line_numbers=part.first is not None,
                        start_line=part.first or 1,
                        background_color="default",
                    )
                )
    return Group(*shown) if len(shown) > 1 else line


def hook_line(run: markup.HookRun, expanded: bool | None = None, width: int | None = None) -> Text:
    """`⚙ PostToolUse:Edit hook  uv run ruff check  exit 1 · 75 ms`: a hook Claude Code ran, its
    event (and matcher), command, how it ended and how long it took, on one line of `width` when
    given (the command gives way). `expanded`: None when it has nothing more to show."""
    style = HOOK_FAILED_STYLE if run.failed else HOOK_STYLE
    mark = "⚙ " if expanded is None else ("▾ " if expanded else "▸ ")
    head = Text(mark + f"{run.name or run.event or 'hook'} hook", style=style)
    tail = Text(f"  {run.outcome}", style="bold " + style if run.failed else "dim")
    if run.duration_ms is not None:
        tail.append(f" · {hook_duration(run.duration_ms)}", style="dim")
    said = run.message if run.message and not expanded and (run.failed or expanded is None) else ""
    if run.command:
        room = 200 if expanded or not width else max(MIN_GIST, width - head.cell_len - tail.cell_len - 2)
        head.append("  " + short_command(run.command, room))
    head.append_text(tail)
    if said:  # a success's output shows on Enter; a failure says why at once
        head.append("  " + one_line(said, 80), style=STDERR_STYLE if run.failed else NOTE_STYLE)
    return head


PROGRAM = re.compile(r"""^\s*(["']?)(\S*/)([^\s"'/]+)\1""")


def short_command(command: str, room: int) -> str:
    """A command in `room` characters: as written when it fits, else its program named without
    the folder (`"${CLAUDE_PLUGIN_ROOT}/scripts/clmail.cmd" actor busy` → `clmail.cmd actor
    busy`: the words that tell hooks apart), cut at the end if it still does not fit."""
    flat = one_line(command, 10_000)
    if len(flat) > room:
        flat = PROGRAM.sub(lambda m: m.group(3), flat, count=1)
    return one_line(flat, room)


def hook_has_more(run: markup.HookRun) -> bool:
    """Whether a hook has more to show than its line: what it printed or said, a long command."""
    return bool(run.stdout.strip() or run.stderr.strip() or run.message.strip() or len(run.command) > 40)


def hook_view(run: markup.HookRun, expanded: bool, width: int | None = None) -> RenderableType:
    """A hook's line, then (opened) its whole command and what it printed and said."""
    if not hook_has_more(run):
        return hook_line(run, None, width)
    if not expanded:
        return hook_line(run, False, width)
    parts: list[RenderableType] = [hook_line(run, True)]
    for label, body, style in (
        ("message", run.message, STDERR_STYLE if run.failed else ""),
        ("stdout", run.stdout, ""),
        ("stderr", run.stderr, STDERR_STYLE),
    ):
        if body.strip():
            parts.append(Text(label, style="dim underline"))
            parts.append(long_text(body.rstrip("\n"), style))
    return Padding(Group(*parts), (0, 0, 0, 0))


def todo_gist(items: list[markup.Todo]) -> str:
    """`1 of 4 done · ◐ Fixing the loop bound`: where a TodoWrite list stands."""
    doing = next((t for t in items if t.status == "in_progress"), None)
    return markup.todo_count(items) + (f" · ◐ {doing.shown}" if doing else "")


CHANGE_MARK = {"added": "+", "removed": "−", "done": "", "started": "", "reopened": "↺"}


def todo_lines(items: list[markup.Todo], before: list[markup.Todo] | None, expanded: bool) -> Text:
    """A TodoWrite list as a checklist (☐ pending, ◐ in progress, ☑ done). Closed, only what this
    write changed from the list before it (all of it for a new list); opened, the whole list."""
    text = Text()
    if expanded or not before:
        rows = [("", t) for t in items]
    else:
        rows = [(CHANGE_MARK.get(c.kind, ""), c.todo) for c in markup.todo_changes(before, items)]
        if not rows:
            rows = [("", t) for t in items if t.status == "in_progress"]
    signs = not expanded and bool(before)  # a column saying what changed
    for sign, todo in rows:
        if text:
            text.append("\n")
        if signs:
            text.append(f"{sign or ' '} ", style="dim")
        if sign == "−":
            text.append(f"{todo.mark} {todo.content}", style="strike #8a8a8a")
            continue
        style = TODO_STYLE.get(todo.status, "")
        text.append(f"{todo.mark} ", style=style)
        text.append(todo.shown, style=style + (" strike" if todo.status == "completed" else ""))
    return text
