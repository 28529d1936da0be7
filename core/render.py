"""Plain-terminal rendering of a session (`threadloom show`), with Rich but without Textual."""

from __future__ import annotations

import re
import sqlite3

import orjson
from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from core.query import SessionSummary, ToolCall, children_of, get_session, messages
from core.text import clock, human_tokens, one_line, task_notice

OSC = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")  # window titles, links: no text to show
ROLE_STYLE = {"user": "bold cyan", "assistant": "bold green", "system": "dim"}
STATUS_MARK = {"completed": "✓", "failed": "✗", "rejected": "⊘", "interrupted": "⏹", "pending": "…"}


def tool_summary(call: ToolCall) -> str:
    """The one-line gist of a tool call: its command, path or pattern."""
    try:
        params = orjson.loads(call.params_json or "{}")
    except orjson.JSONDecodeError:
        params = {}
    if not isinstance(params, dict):
        return ""
    for key in ("command", "file_path", "path", "pattern", "url", "query", "description", "prompt"):
        value = params.get(key)
        if isinstance(value, str) and value:
            return one_line(value, 70)
    return one_line(call.params_json, 70)


def terminal_text(text: str, style: str = "") -> Text:
    """Text as a terminal showed it to the user: the colours and bold of the escape sequences a
    tool printed become styles, and no escape sequence is printed as it is."""
    if "\x1b" not in text:
        return Text(text, style=style)
    return Text.from_ansi(OSC.sub("", text), style=style)


def render_session(console: Console, conn: sqlite3.Connection, session: SessionSummary, *,
                   expand_subagents: bool = True, indent: int = 0) -> None:
    header = Text()
    header.append(session.title or session.task_description or "(untitled)", style="bold")
    header.append(f"  {session.id}", style="dim")
    meta = (
        f"{session.agent} · {session.project_path or session.project or '?'} · {clock(session.started_at)} · "
        f"{session.message_count} messages · {human_tokens(session.total_tokens)} tokens · {session.model or ''}"
    )
    console.print(Padding(header, (0, 0, 0, indent)))
    console.print(Padding(Text(meta, style="dim"), (0, 0, 1, indent)))
    children = {c.tool_call_id: c for c in children_of(conn, session.id, include_warmup=False) if c.tool_call_id}
    for msg in messages(conn, session.id):
        if msg.role == "system" or msg.entry_type == "system":
            if msg.content:
                console.print(Padding(Text(f"── {msg.subtype or 'system'}: {one_line(msg.content, 100)}", style="dim"),
                                      (0, 0, 0, indent)))
            continue
        notice = task_notice(msg.content) if msg.role == "user" else None
        if notice is not None:
            label = Text("background task ", style="bold yellow")
            label.append(clock(msg.timestamp), style="dim")
            body = Text(notice.headline + (f"  ({notice.status})" if notice.status else ""), style="yellow")
            if notice.result:
                body.append("\n").append_text(terminal_text(notice.result))
            console.print(Padding(label, (0, 0, 0, indent)))
            console.print(Padding(body, (0, 0, 1, indent + 2)))
            continue
        label = Text(f"{msg.role or msg.entry_type} ", style=ROLE_STYLE.get(msg.role or "", "bold"))
        label.append(clock(msg.timestamp), style="dim")
        if msg.model:
            label.append(f"  {msg.model}", style="dim")
        if msg.content or msg.thinking:
            console.print(Padding(label, (0, 0, 0, indent)))
        if msg.thinking:
            console.print(Padding(Text(f"(thinking) {one_line(msg.thinking, 100)}", style="dim italic"),
                                  (0, 0, 0, indent + 2)))
        if msg.content:
            console.print(Padding(terminal_text(msg.content), (0, 0, 0, indent + 2)))
        for call in msg.tool_calls:
            mark = STATUS_MARK.get(call.status or "pending", "?")
            line = Text(f"▸ {call.name}  ", style="yellow")
            line.append(tool_summary(call))
            line.append(f"  {mark}", style="red" if call.status == "failed" else "green")
            duration = call.duration_ms
            if duration is not None:
                line.append(f" · {duration / 1000:.1f} s", style="dim")
            console.print(Padding(line, (0, 0, 0, indent + 2)))
            child_id = call.child_session_id or (children[call.id].id if call.id in children else None)
            if expand_subagents and child_id:
                child = get_session(conn, child_id)
                if child is not None:
                    render_session(console, conn, child, expand_subagents=True, indent=indent + 4)
        if msg.content or msg.tool_calls:
            console.print()
