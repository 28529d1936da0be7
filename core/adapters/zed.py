"""Zed's agent threads (the agent panel's own agent), kept in its SQLite database.

Where: `<data dir>/threads/threads.db`, the data dir being `$FLATPAK_XDG_DATA_HOME/zed` or
`$XDG_DATA_HOME/zed` (`~/.local/share/zed`) on Linux, `~/Library/Application Support/Zed` on macOS,
`%LOCALAPPDATA%\\Zed` on Windows. Checked against zed-industries/zed's source (2026):
`crates/agent/src/db.rs` (`ThreadsDatabase`, `DbThread` version 0.3.0), `thread.rs` (`Message`,
`UserMessageContent`, `AgentMessageContent`), `legacy_thread.rs`.

One table is read (never written: see `shared.open_sqlite`): `threads (id, parent_id (a subagent's
parent thread), folder_paths (the project folders, one a line), folder_paths_order, summary (the
title), updated_at, created_at (RFC 3339), data_type json|zstd, data)`. Each row is one key record
(its columns but `data`, as JSON) followed by its thread: `data` decompressed (zstd) and cut into one
record per message and the bytes around them (which hold the title, the tokens and the model), so
the records put together are the thread's JSON exactly.

The thread: `{title, messages: [{"User": {id, content: [{"Text": str} | {"Mention": {uri, content}} |
{"Image": …}]}} | {"Agent": {content: [{"Text": str} | {"Thinking": {text, signature}} |
{"RedactedThinking": str} | {"ToolUse": {id, name, raw_input, input, is_input_complete}}],
tool_results: {<tool use id>: {tool_use_id, tool_name, is_error, content: {"Text": str} | {"Image":
…}, output}}}} | "Resume"],
updated_at, detailed_summary, initial_project_snapshot, cumulative_token_usage {input_tokens,
output_tokens, cache_creation_input_tokens, cache_read_input_tokens}, request_token_usage, model
{provider, model}, profile, subagent_context, …, version}`. A reply's calls and their results are
in the same message. Messages carry no times: the row's `created_at` is the thread's start.

Resume: Zed opens a thread from its agent panel only; threadloom prints no command for it.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from .base import (
    FileContext,
    RawRecord,
    Record,
    SessionInfo,
    ToolResult,
    ToolUse,
    Usage,
    parse_iso_ms,
    safe_int,
)
from .edits import RESTORE, FileEdit, string_param
from .shared import (
    RowSink,
    Spec,
    SqliteSource,
    as_bytes,
    as_dict,
    as_list,
    as_str,
    json_text,
    loads,
    open_sqlite,
    parse_document,
    plain_json,
    sqlite_tables,
    table_columns,
    tile,
)

AGENT = "zed"
DB = "threads.db"
THREAD_ROW = "zed-thread"
SPECS: frozenset[Spec] = frozenset({("messages", "[]")})
THREAD_KEYS = frozenset({"title", "messages", "updated_at", "version", "model", "cumulative_token_usage"})
_MESSAGES_KEY = re.compile(rb',?\s*"messages"\s*:\s*$')


def zed_data_dirs() -> list[Path]:
    if sys.platform == "darwin":
        return [Path.home() / "Library" / "Application Support" / "Zed"]
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA")
        return [(Path(local) if local else Path.home() / "AppData" / "Local") / "Zed"]
    xdg = os.environ.get("FLATPAK_XDG_DATA_HOME") or os.environ.get("XDG_DATA_HOME")
    return [(Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share") / "zed"]


def _decompress(data: bytes) -> bytes:
    import io

    import zstandard

    with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True) as reader:
        return reader.read()


def _members(gap: bytes) -> dict[str, Any]:
    """The thread's own fields in the bytes around its messages (`{"title":…,"messages":[` before,
    `],"updated_at":…}` after)."""
    whole, _ = loads(gap)
    if isinstance(whole, dict):
        return whole
    s = gap.strip()
    s = s[1:] if s.startswith(b"{") else s
    s = s[:-1] if s.endswith(b"}") else s
    s = s.strip()
    s = s[1:].strip() if s.startswith(b"]") else s
    s = s.lstrip(b",").rstrip()
    s = s[:-1].rstrip() if s.endswith(b"[") else s
    s = _MESSAGES_KEY.sub(b"", s)
    obj, _ = loads(b"{" + s + b"}")
    return obj if isinstance(obj, dict) else {}


class ZedAdapter(SqliteSource):
    """Reads Zed's agent threads database; see the module docstring."""

    name = AGENT
    env_vars = ("FLATPAK_XDG_DATA_HOME",)
    mode = "database"
    db_name = DB
    finds_at_any_depth = True  # the database named, or every one under a folder
    display_name = "Zed agent"
    program = "zed"
    edit_tools = frozenset({"edit_file", "streaming_edit_file"})
    shell_tools = frozenset({"terminal"})
    read_tools = frozenset({"read_file"})

    def default_roots(self) -> list[Path]:
        return [d / "threads" / DB for d in zed_data_dirs()]

    def claims(self, path: Path, explicit: bool = False) -> bool:
        if path.name != DB and not (explicit and path.suffix in (".db", ".sqlite", ".sqlite3")):
            return False
        if "threads" not in sqlite_tables(path):
            return False
        try:
            with open_sqlite(path) as conn:
                return {"summary", "data_type", "data"} <= set(table_columns(conn, "threads"))
        except Exception:
            return False

    def read_rows(self, path: Path) -> list[RawRecord]:
        sink = RowSink()
        with open_sqlite(path) as conn:
            cols = [c for c in table_columns(conn, "threads") if c != "data"]
            order = "created_at, " if "created_at" in cols else ""
            query = f"SELECT {', '.join(cols)}, data FROM threads ORDER BY {order}updated_at, id"
            for row in conn.execute(query):
                values = dict(zip(cols, row[:-1], strict=True))
                sink.add(plain_json({"$row": THREAD_ROW, **values}))
                data = as_bytes(row[-1])
                if data is None:
                    continue
                if values.get("data_type") == "zstd":
                    try:
                        data = _decompress(data)
                    except Exception:
                        sink.add(data)  # kept as it is: a thread that is not zstd after all
                        continue
                try:
                    parse_document(data)
                except Exception:
                    sink.add(data)
                    continue
                for rec in tile(data, SPECS):
                    sink.add(rec.raw)
        return sink.records

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        st = ctx.state
        obj, error = loads(rec.raw)
        if isinstance(obj, dict) and obj.get("$row") == THREAD_ROW:
            return self._thread(obj, st)
        tid = st.get("tid")
        info = SessionInfo(source=AGENT, external_id=tid) if tid else None
        out = Record(session_id=tid, session=info)
        st["n"] = st.get("n", 0) + 1
        if isinstance(obj, dict) and len(obj) == 1 and ("User" in obj or "Agent" in obj):
            self._message(out, obj, st)
        elif obj == "Resume":
            out.entry_type, out.is_meta = "Resume", True
        else:
            self._around(out, rec.raw, st)
            if error and not out.entry_type:
                out.parse_error = error
        return out

    def _thread(self, row: dict[str, Any], st: dict[str, Any]) -> Record:
        tid = as_str(row.get("id"))
        st["tid"], st["n"], st["last"] = tid, 0, None
        info = SessionInfo(source=AGENT, external_id=tid)
        parent = as_str(row.get("parent_id"))
        if parent:
            info.kind, info.is_subagent, info.parent_session_id = "subagent", 1, parent
        out = Record(entry_type="row", subtype="threads", session_id=tid, session=info)
        out.is_sidechain = bool(parent)
        out.timestamp = parse_iso_ms(row.get("created_at")) or parse_iso_ms(row.get("updated_at"))
        folders = [p for p in str(row.get("folder_paths") or "").split("\n") if p]
        out.cwd = folders[0] if folders else None
        title = as_str(row.get("summary"))
        if title:
            out.entry_type, out.content, out.title = "ai-title", title, ("ai-title", title)
        return out

    def _around(self, out: Record, raw: bytes, st: dict[str, Any]) -> None:
        """The bytes around the messages: the thread's model and token totals."""
        fields = _members(raw)
        out.entry_type = "thread" if fields.keys() & THREAD_KEYS else "unknown"
        out.known = out.entry_type == "thread" or not raw.strip(b"[]{}, \n")
        model = as_dict(fields.get("model"))
        out.model = as_str(model.get("model"))
        usage = as_dict(fields.get("cumulative_token_usage"))
        if usage and st.get("tid"):
            out.usage = Usage(
                f"{AGENT}:{st['tid']}:total",
                None,
                input_tokens=safe_int(usage.get("input_tokens")),
                output_tokens=safe_int(usage.get("output_tokens")),
                cache_creation_tokens=safe_int(usage.get("cache_creation_input_tokens")),
                cache_read_tokens=safe_int(usage.get("cache_read_input_tokens")),
            )

    def _message(self, out: Record, obj: dict[str, Any], st: dict[str, Any]) -> None:
        role = "User" if "User" in obj else "Agent"
        body = as_dict(obj[role])
        out.entry_type = role
        out.uuid = (as_str(body.get("id")) if role == "User" else None) or f"{st['tid']}:{st['n']}"
        out.parent_uuid, st["last"] = st.get("last"), out.uuid
        texts: list[str] = []
        thoughts: list[str] = []
        for number, part in enumerate(as_list(body.get("content"))):
            if isinstance(part, str):  # a unit variant
                continue
            part = as_dict(part)
            if isinstance(part.get("Text"), str):
                texts.append(part["Text"])
            elif "Thinking" in part:
                text = as_str(as_dict(part["Thinking"]).get("text"))
                if text:
                    thoughts.append(text)
            elif "ToolUse" in part:
                use = as_dict(part["ToolUse"])
                params = use.get("input")
                if not isinstance(params, dict):
                    parsed, _ = loads(str(use.get("raw_input") or "").encode())
                    params = parsed if isinstance(parsed, dict) else {"input": params}
                out.tool_uses.append(
                    ToolUse(
                        as_str(use.get("id")) or f"{out.uuid}:{number}",
                        as_str(use.get("name")) or "?",
                        json_text(params),
                        number,
                    )
                )
        results: list[str] = []
        for key, result in as_dict(body.get("tool_results")).items():
            result = as_dict(result)
            content = result.get("content")
            for item in content if isinstance(content, list) else [content]:
                text = item if isinstance(item, str) else as_str(as_dict(item).get("Text"))
                if text:
                    results.append(text)
            out.tool_results.append(
                ToolResult(
                    as_str(result.get("tool_use_id")) or key,
                    json_text(content),
                    "failed" if result.get("is_error") is True else "completed",
                )
            )
        text = "\n".join(texts) or None
        out.content, out.thinking = text, "\n".join(thoughts) or None
        out.tool_text = "\n".join([*(u.input_json for u in out.tool_uses), *results]) or None
        if role == "User":
            out.role, out.is_prompt = "user", text is not None
        else:
            out.role, out.message_id = "assistant", out.uuid
        out.is_message = bool(text or out.thinking or out.tool_uses)

    # ------------------------------------------------------------------ capabilities

    def edit_result(self, record: dict[str, Any], tool_id: str) -> Any:
        """`edit_file`'s output in the reply's `tool_results`: `{old_text, new_text, diff, …}`."""
        result = as_dict(as_dict(as_dict(record.get("Agent")).get("tool_results")).get(tool_id))
        return result.get("output")

    def file_edits(self, name: str, params: dict[str, Any], result: Any = None) -> list[FileEdit]:
        """`edit_file {path, mode: edit | create | overwrite, display_description}`: the change is
        written by a second model, so the parameters do not hold it; its output holds the file's
        text before and after (`old_text`, `new_text`)."""
        path = string_param(params, ("path",))
        if name in self.edit_tools and path is not None:
            output = as_dict(result)
            edit = FileEdit(path, name)
            old, new = output.get("old_text"), output.get("new_text")
            if isinstance(new, str):
                edit.after = new
                if params.get("mode") == "create":
                    edit.before = None
                elif isinstance(old, str):
                    edit.before = old
            else:
                edit.why = "the records do not hold the change (a second model wrote it)" + RESTORE
            return [edit]
        return super().file_edits(name, params, result)
