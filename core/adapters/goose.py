"""Goose (block/goose) sessions, kept in its SQLite database.

Where: `<data dir>/sessions/sessions.db`, the data dir being `$GOOSE_PATH_ROOT/data` when that is set,
else `$XDG_DATA_HOME/goose` (`~/.local/share/goose`, on macOS too) or `%APPDATA%\\Block\\goose\\data`.
Checked against block/goose's source (2026): `crates/goose/src/session/session_manager.rs` (schema
version 9), `conversation/message.rs`, `agents/platform_extensions/developer/`.

Tables read (never written: see `shared.open_sqlite`): `sessions (id "20251108_1", name, description,
user_set_name, session_type user|scheduled|specialist|hidden|terminal, working_dir, created_at,
updated_at, extension_data, total/input/output_tokens, accumulated_total/input/output_tokens,
schedule_id, recipe_json, user_recipe_values_json, provider_name, model_config_json, …)` and
`messages (id, message_id, session_id, role user|assistant, content_json, created_timestamp (epoch
seconds), timestamp, tokens, metadata_json)`. Each session row is one key record (its columns as
JSON); each message row is a key record (its other columns) followed by its `content_json`, exact.

`content_json` is a list of `{type: text {text} | image | toolRequest {id, toolCall: {status:
success, value {name, arguments}} | {status: error, error}} | toolResponse {id, toolResult: {status,
value: {content: [...], isError} | [...]}} | thinking {thinking, signature} | redactedThinking |
toolConfirmationRequest | actionRequired | frontendToolRequest | systemNotification}`; a tool's
result is in the next user message. `metadata_json {userVisible, agentVisible}`: a message the user
never saw (a compaction's summary, a hidden instruction) is context. The tokens are the session's
running totals (`accumulated_*`), counted once per session.

Goose's older releases kept one `<name>.jsonl` per session in the same folder (a metadata line,
then messages); goose imports them into the database on first start: they are not read here.

`<data dir>/projects.json` (the CLI's `goose project`): `{projects: {<folder>: {path, last_accessed,
last_instruction, last_session_id}}}`, the folders goose was run in. Kept whole, as every session's
(the last prompt of each folder is in its session too), not read.

Resume: `goose session --resume --session-id ID`, from the session's folder.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .base import (
    Command,
    FileContext,
    RawRecord,
    Record,
    ResumeTarget,
    SessionInfo,
    SourceRef,
    ToolResult,
    ToolUse,
    Usage,
    parse_iso_ms,
    safe_int,
)
from .edits import RESTORE, FileEdit, string_param
from .shared import (
    RowSink,
    SqliteSource,
    as_bytes,
    as_dict,
    as_list,
    as_str,
    head_of,
    input_text,
    json_text,
    loads,
    open_sqlite,
    plain_json,
    sqlite_tables,
    table_columns,
)
from .walk import walk

AGENT = "goose"
DB = "sessions.db"
PROJECTS = "projects.json"
MESSAGE_ROW = "goose-message"
SESSION_ROW = "goose-session"
CONTENT_TYPES = frozenset(
    {
        "text",
        "image",
        "toolRequest",
        "toolResponse",
        "thinking",
        "redactedThinking",
        "toolConfirmationRequest",
        "actionRequired",
        "frontendToolRequest",
        "systemNotification",
    }
)


def goose_data_dirs() -> list[Path]:
    root = os.environ.get("GOOSE_PATH_ROOT")
    if root and Path(root).is_absolute():
        return [Path(root) / "data"]
    if sys.platform == "win32":
        appdata = os.environ.get("APPDATA")
        base = Path(appdata) if appdata else Path.home() / "AppData" / "Roaming"
        return [base / "Block" / "goose" / "data"]
    xdg = os.environ.get("XDG_DATA_HOME")
    return [(Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share") / "goose"]


class GooseAdapter(SqliteSource):
    """Reads Goose's sessions database; see the module docstring."""

    name = AGENT
    env_vars = ("GOOSE_PATH_ROOT",)
    mode = "database"
    db_name = DB
    finds_at_any_depth = True  # the database named, or every one under a folder
    display_name = "Goose"
    program = "goose"
    fork_style = "whole-session-resume"
    # the developer extension's tools: today's flat names, and the `developer__` ones of 2025
    edit_tools = frozenset({"edit", "developer__text_editor"})
    write_tools = frozenset({"write"})
    shell_tools = frozenset({"shell", "developer__shell"})
    read_tools = frozenset({"tree"})
    todo_tools = frozenset({"todo__todo_write", "todo_write"})

    def default_roots(self) -> list[Path]:
        return [d / "sessions" / DB for d in goose_data_dirs()]

    def side_roots(self) -> list[Path]:
        return [d / PROJECTS for d in goose_data_dirs()]

    def claims(self, path: Path, explicit: bool = False) -> bool:
        if path.name == PROJECTS:
            return self._projects(path)
        if path.name != DB and not (explicit and path.suffix in (".db", ".sqlite", ".sqlite3")):
            return False
        if not {"sessions", "messages", "schema_version"} <= sqlite_tables(path):
            return False
        try:
            with open_sqlite(path) as conn:
                return {"content_json", "created_timestamp"} <= set(table_columns(conn, "messages"))
        except Exception:
            return False

    @staticmethod
    def _projects(path: Path) -> bool:
        """Goose's projects.json (module docstring): its fields say so, or it lies beside the
        sessions' database (Gemini CLI keeps a `projects.json` of other fields in its home)."""
        head = head_of(path, 4096)
        if b'"projects"' not in head:
            return False
        return b'"last_accessed"' in head or (path.parent / "sessions" / DB).is_file()

    def discover(self, root: Path) -> Iterator[SourceRef]:
        if root.is_file() and root.name == PROJECTS:
            if self._projects(root):
                yield SourceRef(root, AGENT, "side", None)
            return
        if not root.is_dir():
            yield from super().discover(root)
            return
        for dirpath, dirnames, filenames in walk(root):
            dirnames.sort()
            folder = Path(dirpath)
            if DB in filenames and self.claims(folder / DB):
                yield SourceRef(folder / DB, AGENT, "database", self.project_key_of(folder / DB))
            if PROJECTS in filenames and self._projects(folder / PROJECTS):
                yield SourceRef(folder / PROJECTS, AGENT, "side", None)

    def stat_paths(self, path: Path) -> list[Path]:
        return [] if path.name == PROJECTS else super().stat_paths(path)

    def read_rows(self, path: Path) -> list[RawRecord]:
        sink = RowSink()
        with open_sqlite(path) as conn:
            session_cols = table_columns(conn, "sessions")
            message_cols = [c for c in table_columns(conn, "messages") if c != "content_json"]
            sessions = conn.execute("SELECT * FROM sessions ORDER BY created_at, id").fetchall()
            by_session: dict[str, list[tuple[Any, ...]]] = {}
            query = f"SELECT {', '.join(message_cols)}, content_json FROM messages ORDER BY id"
            for row in conn.execute(query):
                by_session.setdefault(str(row[message_cols.index("session_id")]), []).append(row)
            listed = set()
            for session in sessions:
                values = dict(zip(session_cols, session, strict=True))
                sid = str(values.get("id"))
                listed.add(sid)
                sink.add(plain_json({"$row": SESSION_ROW, **values}))
                self._messages(sink, message_cols, by_session.get(sid, []))
            for sid, rows in by_session.items():  # messages whose session row is gone
                if sid not in listed:
                    self._messages(sink, message_cols, rows)
        return sink.records

    @staticmethod
    def _messages(sink: RowSink, cols: list[str], rows: list[tuple[Any, ...]]) -> None:
        for row in rows:
            sink.add(plain_json({"$row": MESSAGE_ROW, **dict(zip(cols, row[:-1], strict=True))}))
            content = as_bytes(row[-1])
            if content is not None:
                sink.add(content)

    # ------------------------------------------------------------------ records

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        if ctx.kind == "side":  # projects.json: kept whole, every session's
            return Record(entry_type="side-file", subtype="projects", side_file=True)
        st = ctx.state
        obj, error = loads(rec.raw)
        row = as_str(obj.get("$row")) if isinstance(obj, dict) else None
        if row == SESSION_ROW:
            return self._session(obj, st)
        if row == MESSAGE_ROW:
            st["message"] = obj
            sid = as_str(obj.get("session_id"))
            return Record(entry_type="row", subtype="messages", session_id=sid, session=self._info(sid))
        message = st.pop("message", None)
        if message is None or not isinstance(obj, list):
            return Record(entry_type="unknown", known=False, parse_error=error)
        return self._message(message, obj, st)

    @staticmethod
    def _info(sid: str | None) -> SessionInfo | None:
        return SessionInfo(source=AGENT, external_id=sid) if sid else None

    def _session(self, row: dict[str, Any], st: dict[str, Any]) -> Record:
        sid = as_str(row.get("id"))
        out = Record(entry_type="row", subtype="sessions", session_id=sid, session=self._info(sid))
        out.timestamp = parse_iso_ms(row.get("created_at"))
        out.cwd = as_str(row.get("working_dir")) or None
        config, _ = loads(str(row.get("model_config_json") or "").encode())
        out.model = as_str(as_dict(config).get("model_name"))
        name = as_str(row.get("name")) or as_str(row.get("description"))
        if name:
            kind = "custom-title" if row.get("user_set_name") in (1, True) else "ai-title"
            out.entry_type, out.content, out.title = kind, name, (kind, name)
        inp = row.get("accumulated_input_tokens")
        outp = row.get("accumulated_output_tokens")
        if inp is None and outp is None:
            inp, outp = row.get("input_tokens"), row.get("output_tokens")
        if sid and (inp is not None or outp is not None):
            out.usage = Usage(
                f"{AGENT}:session:{sid}", None, input_tokens=safe_int(inp), output_tokens=safe_int(outp)
            )
        return out

    def _message(self, row: dict[str, Any], content: list[Any], st: dict[str, Any]) -> Record:
        sid = as_str(row.get("session_id"))
        role = as_str(row.get("role"))
        uid = as_str(row.get("message_id")) or f"{sid}:{row.get('id')}"
        out = Record(
            entry_type=role or "message",
            known=role in ("user", "assistant"),
            session_id=sid,
            session=self._info(sid),
            uuid=uid,
            parent_uuid=st.get(f"last:{sid}"),
            timestamp=parse_iso_ms(row.get("created_timestamp")) or parse_iso_ms(row.get("timestamp")),
        )
        st[f"last:{sid}"] = uid
        meta, _ = loads(str(row.get("metadata_json") or "").encode())
        hidden = as_dict(meta).get("userVisible") is False
        texts: list[str] = []
        thoughts: list[str] = []
        tool_texts: list[str] = []
        notes: list[str] = []
        for number, part in enumerate(as_list(content)):
            part = as_dict(part)
            kind = as_str(part.get("type"))
            if kind not in CONTENT_TYPES:
                out.known = False
            if kind == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif kind == "thinking" and isinstance(part.get("thinking"), str):
                thoughts.append(part["thinking"])
            elif kind in ("toolRequest", "frontendToolRequest"):
                call = as_dict(part.get("toolCall"))
                value = as_dict(call.get("value"))
                params = value.get("arguments")
                params = params if isinstance(params, dict) else {"arguments": params}
                use = ToolUse(
                    as_str(part.get("id")) or f"{uid}:{number}",
                    as_str(value.get("name")) or "?",
                    json_text(params),
                    number,
                )
                out.tool_uses.append(use)
                tool_texts.append(f"{use.name} {input_text(use.input_json)}")
            elif kind == "toolResponse":
                result = as_dict(part.get("toolResult"))
                answer: Any = result.get("value")
                failed = result.get("status") == "error" or as_dict(answer).get("isError") is True
                body = answer if answer is not None else result.get("error")
                out.tool_results.append(
                    ToolResult(
                        as_str(part.get("id")) or "", json_text(body), "failed" if failed else "completed"
                    )
                )
                items = answer.get("content") if isinstance(answer, dict) else answer
                tool_texts.extend(t for t in (as_str(as_dict(i).get("text")) for i in as_list(items)) if t)
                if isinstance(body, str):
                    tool_texts.append(body)
            elif kind == "systemNotification" and isinstance(part.get("msg"), str):
                notes.append(part["msg"])
        text = "\n".join(texts) or None
        out.role = role if role in ("user", "assistant") else None
        out.content = text or ("\n".join(notes) or None)
        out.thinking = "\n".join(thoughts) or None
        out.tool_text = "\n".join(tool_texts) or None
        out.message_id = uid if role == "assistant" else None
        out.is_meta = hidden or (not texts and bool(notes))
        out.is_message = bool(out.content or out.thinking or out.tool_uses or out.tool_results)
        out.is_prompt = role == "user" and bool(text) and not out.tool_results and not hidden
        return out

    # ------------------------------------------------------------------ capabilities

    def file_edits(self, name: str, params: dict[str, Any], result: Any = None) -> list[FileEdit]:
        """`edit {path, before, after}` (today's tool) and `developer__text_editor {command, path,
        old_str, new_str, file_text}` (2025's)."""
        path = string_param(params, ("path", "file_path"))
        if name == "edit" and path is not None:
            before, after = string_param(params, ("before",)), string_param(params, ("after",))
            if before is not None and after is not None:
                edit = FileEdit(path, name, strings=[(before, after, False)])
                edit.why = "the records hold the replaced text but not the file around it" + RESTORE
                return [edit]
        if name == "developer__text_editor" and params.get("command") == "write":
            return super().file_edits("write", {"path": path, "content": params.get("file_text")}, result)
        if name == "developer__text_editor" and params.get("command") not in ("str_replace", "write"):
            return []  # view, undo_edit, insert: no change a diff shows from the parameters
        return super().file_edits(name, params, result)

    def is_edit(self, name: str, params: dict[str, Any]) -> bool:
        if name == "developer__text_editor":
            return params.get("command") in ("str_replace", "write", "insert", "undo_edit")
        return super().is_edit(name, params)

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        """`goose session --resume --session-id ID`, run in the session's folder."""
        return Command(
            [self.program, "session", "--resume", "--session-id", self.checked_id(target.external_id)]
        )
