"""Rich renderables for the parts of a message: headers, tool calls, diffs, events.

Kept apart from the widget so the message view only deals with lines and caching, and so the
look of each part can be read (and changed) in one place.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

import orjson
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.segment import Segment
from rich.text import Text
from textual.color import Color
from textual.filter import LineFilter
from threadloom.core.adapters.base import ImageRef
from threadloom.core.browse import MessageRow, ToolCall
from threadloom.core.calls import call_params, result_text
from threadloom.core.diffs import EDIT_TOOLS, DiffLine, call_diff, diff_between, is_edit
from threadloom.core.images import describe, human_bytes
from threadloom.core.markdown import SYNTAX_THEME
from threadloom.core.render import (
    EDIT_SEARCH,
    EditBlock,
    edit_blocks,
    message_body,
    spaced,
    terminal_text,
    tool_summary,
)
from threadloom.core.render import long_text as core_long_text
from threadloom.core.side_files import PersistedOutput
from threadloom.core.text import TaskNotice, human_tokens, one_line, task_notice

ROLE_STYLE = {"user": "bold #5fafff", "assistant": "bold #87d787", "system": "dim"}
NOTICE_STYLE = "bold #d7af5f"
STATUS = {
    "completed": ("✓", "green"),
    "failed": ("✗", "bold red"),
    "rejected": ("⊘ rejected", "yellow"),
    "interrupted": ("⏹ interrupted", "yellow"),
    "pending": ("…", "dim"),
}
SPAWN_TOOLS = ("Task", "Agent")
EXIT_CODE = re.compile(r"[Ee]xit code (\d+)")
CAT_N = re.compile(r"^\s*(\d+)\t(.*)$")
COMMAND = re.compile(r"<command-name>(.*?)</command-name>(?:.*?<command-args>(.*?)</command-args>)?", re.S)
LOCAL_OUT = re.compile(r"<local-command-std(?:out|err)>(.*?)</local-command-std(?:out|err)>", re.S)

OUTPUT_LINES = 60
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
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000).strftime("%d %b %H:%M:%S")


def plain_title(title: str | None, width: int) -> Text:
    """A session's title for a border: as plain text (a str there is read as markup, and a prompt
    such as "[Image #1] fix this" lost its brackets), never blank."""
    return Text(one_line(title, width) or "(untitled)")


def duration(ms: int | None) -> str:
    if ms is None:
        return ""
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    return f"{minutes // 60}h {minutes % 60:02d}m"


def header(msg: MessageRow) -> Text:
    role = msg.role or msg.entry_type or "?"
    text = Text()
    if role == "user" and task_notice(msg.content) is not None:
        text.append("⚑ background task", style=NOTICE_STYLE)  # not typed by the user
    else:
        text.append("● " if role == "user" else "◆ ", style=ROLE_STYLE.get(role, "bold"))
        text.append(role, style=ROLE_STYLE.get(role, "bold"))
    if msg.timestamp is not None:
        text.append(f"  {when(msg.timestamp)}", style="dim")
    if msg.model:
        text.append(f"  {short_model(msg.model)}", style="#af87d7")
    if msg.tokens:
        text.append(f"  {human_tokens(msg.tokens)} tok", style="dim")
    return text


def message_text(msg: MessageRow, *, markdown: bool = True, preview: int | None = None) -> RenderableType:
    """The visible text, as Markdown unless not `markdown` (`preview`: only that many lines will
    be shown): slash commands and local command output shown the way the
    user saw them, an assistant's SEARCH/REPLACE edit blocks (Aider's) as diffs."""
    content = msg.content or ""

    def written(text: str, style: str = "") -> RenderableType:
        return message_body(
            text,
            markdown=markdown,
            style=style,
            rest=LONG_TEXT_REST,
            code_theme=SYNTAX_THEME,
            preview=preview,
        )

    if msg.role == "assistant" and EDIT_SEARCH in content:
        parts = edit_blocks(content)
        if any(isinstance(part, EditBlock) for part in parts):
            return spaced([edit_block_view(p) if isinstance(p, EditBlock) else written(p) for p in parts])
    command = COMMAND.search(content)
    if command:
        args = (command.group(2) or "").strip()
        return Text(command.group(1).strip() + (" " + args if args else ""), style="bold #d787d7")
    local = LOCAL_OUT.search(content)
    if local:
        return long_text(local.group(1).strip(), "dim")
    notice = task_notice(content)
    if notice is not None:
        return notice_text(notice)
    return written(content, "dim" if msg.is_meta else "")


LONG_TEXT_REST = "r shows the raw record"


def long_text(text: str, style: str = "") -> RenderableType:
    """`core.render.long_text`, the rest a key away."""
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
    label = Text(("▾ " if expanded else "▸ ") + "≡ summary of the earlier conversation", style="#87afaf")
    label.append(f"  {len(msg.content or ''):,} chars", style="dim")
    if not expanded:
        return label
    return Group(label, long_text(msg.content or "", "#87afaf"))


def image_line(image: ImageRef, note: str | None = None) -> Text:
    """An image's head line (type, size, place), with why it is not drawn when it is not."""
    line = Text(f"▣ {describe(image)}", style="#d7af5f")
    if note:
        line.append(f"  ({one_line(note, 80)})", style="dim")
    return line


def rewind_line() -> Text:
    return Text("── ↶ rewound: a new branch starts here, from an earlier message ──", style="#5fafaf")


def event_line(msg: MessageRow) -> Text:
    """A system record as one dim divider: compaction, API error, hook, turn duration, …"""
    ev = msg.event
    kind = msg.subtype or "system"
    style = "dim"
    if kind == "compact_boundary":
        meta = ev.get("compactMetadata")
        meta = meta if isinstance(meta, dict) else {}
        label = "✂ conversation compacted"
        if meta.get("trigger"):
            label += f" · {meta['trigger']}"
        if isinstance(meta.get("preTokens"), int):
            label += f" · {human_tokens(meta['preTokens'])} tokens before"
        style = "#87afaf"
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
        label = f"turn took {duration(ev.get('durationMs'))}"
    elif kind == "stop_hook_summary":
        hooks = ev.get("hookInfos")
        commands = ", ".join(
            str(h.get("command")) for h in (hooks if isinstance(hooks, list) else []) if isinstance(h, dict)
        )
        label = f"⚙ stop hook: {commands or '?'}"
        if ev.get("hookErrors"):
            label += " · errors"
    else:
        label = f"{kind}: {one_line(msg.content or '', 120)}" if msg.content else kind
    text = Text("── ", style=style)
    text.append(label, style=style)
    text.append(f" · {when(msg.timestamp)[-8:-3]} ──", style="dim")
    return text


# ---------------------------------------------------------------------------- tool calls


MIN_GIST = 12  # narrower than this, a collapsed call wraps rather than lose its command or path


def call_line(call: ToolCall, expanded: bool, width: int | None = None) -> Text:
    """`▸ Bash  npm test  ✗ exit 1 · 2.3 s` — the collapsed form of a tool call, on one line of
    `width` when given: the gist (a command, a path) gives way, the status stays."""
    params = call_params(call)
    text = Text("▾ " if expanded else "▸ ", style="#d7af5f")
    text.append(call.name, style="bold #d7af5f")
    gist = params.get("description") if call.name in SPAWN_TOOLS else None
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
        text.append(f" · {duration(call.duration_ms)}", style="dim")
    if call.name in SPAWN_TOOLS and call.child_session_id:
        agent = params.get("subagent_type")
        text.append(f"  ↳ subagent{' ' + agent if isinstance(agent, str) else ''} (Enter)", style="#d787d7")
    over = text.cell_len - width if width else 0
    if over > 0 and gist_end - gist_at - over - 1 >= MIN_GIST:
        text = text[: gist_end - over - 1] + Text("…") + text[gist_end:]
    return text


def code(text: str, lexer: str, background: str, **kw: Any) -> RenderableType:
    """Highlighted code on the pane's own background (the terminal default would show as a box)."""
    from rich.syntax import Syntax  # Pygments is slow to import: only once something expands

    return Syntax(text, lexer, theme=SYNTAX_THEME, word_wrap=True, background_color=background, **kw)


def call_body(
    call: ToolCall, extra: Any, background: str = "default", persisted: PersistedOutput | None = None
) -> RenderableType:
    """Input and output of an expanded call; edits as coloured diffs. `persisted`: the whole output
    the agent saved to a side file, of which the transcript holds a preview."""
    params = call_params(call)
    parts: list[RenderableType] = []
    if is_edit(call.name, params):
        parts.append(diff_view(call.name, params, extra))
    elif call.name == "Bash" and isinstance(params.get("command"), str):
        parts.append(code(params["command"], "bash", background))
    elif call.name in SPAWN_TOOLS and isinstance(params.get("prompt"), str):
        parts.append(Text("prompt", style="dim underline"))
        parts.append(Text(params["prompt"]))
    else:
        pretty = orjson.dumps(params, option=orjson.OPT_INDENT_2).decode()
        parts.append(code(pretty, "json", background))
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
    elif output and not (call.name in EDIT_TOOLS and call.status == "completed"):
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

    lines = output.splitlines()
    more = len(lines) - OUTPUT_LINES
    shown = lines[:OUTPUT_LINES]
    tail = Text(f"… {more:,} more lines ({more_hint})", style="dim") if more > 0 else None
    if call.status in ("failed", "rejected", "interrupted"):
        body: RenderableType = terminal_text("\n".join(shown), "#ff8787")
    elif call.name == "Read" and shown and all(CAT_N.match(line) for line in shown):
        numbered = [m for m in map(CAT_N.match, shown) if m is not None]  # every line, as just checked
        first = int(numbered[0].group(1))
        source = "\n".join(m.group(2) for m in numbered)
        path = str(params.get("file_path") or "")
        body = code(source, Syntax.guess_lexer(path, source), background, line_numbers=True, start_line=first)
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
    """Diff lines (`core.diffs`) coloured: removed red, added green, hunks blue, files bold."""
    return FilledLines([Text(row.text, style=DIFF_STYLES[row.kind]) for row in rows])


def diff_view(name: str, params: dict[str, Any], extra: Any) -> RenderableType:
    """What an editing call changed, from its structured patch or its input."""
    return diff_lines(call_diff(name, params, extra))


# what a terminal acts on rather than shows: C0 controls, DEL and the C1 controls (U+009B starts
# a CSI on some terminals); Rich gives them no width, so dropping them leaves every column in place
CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f]")
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
