"""Claude Code's legacy SQLite store, `~/.claude/__store.db` (0.2.90 – 0.2.10x, FORMATS.md §2).

The rows hold the same messages the JSONL transcripts hold: `base_messages` (uuid, parent,
session, time, type, cwd, version, sidechain) joined with `user_messages` or
`assistant_messages`, whose `message` / `tool_use_result` columns are the JSONL `message` /
`toolUseResult` JSON. Each message is read as a key record (its other columns, rendered as JSON
and naming the value records that follow) then the exact bytes of `tool_use_result` (if any) and
`message`; `conversation_summaries` rows are one record each. The message is then put back in its
JSONL shape and read by the Claude Code adapter, so sessions keep their ids and `source`, and a
session that also exists as JSONL (newer versions copied them) is recognised as the same records.
Timestamps are seconds or milliseconds (told apart by magnitude). Opened read-only, see
`shared.open_sqlite`.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson

from .base import FileContext, RawRecord, Record, SessionInfo
from .claude import AGENT as CLAUDE
from .claude import ClaudeAdapter, config_dir
from .edits import FileEdit
from .shared import (
    RowSink,
    SqliteSource,
    as_bytes,
    as_dict,
    as_str,
    loads,
    open_sqlite,
    plain_json,
    sqlite_tables,
    table_columns,
)

JSON_COLUMNS = frozenset({"message", "tool_use_result"})


class ClaudeStoreAdapter(SqliteSource):
    """Reads `__store.db`; see the module docstring."""

    name = "claude-store"
    db_name = "__store.db"
    mode = "database"
    # its records are Claude Code's: so are its tools
    edit_tools = ClaudeAdapter.edit_tools
    write_tools = ClaudeAdapter.write_tools
    read_tools = ClaudeAdapter.read_tools
    shell_tools = ClaudeAdapter.shell_tools
    todo_tools = ClaudeAdapter.todo_tools

    def file_edits(self, name: str, params: dict[str, Any], result: Any = None) -> list[FileEdit]:
        return self._claude.file_edits(name, params, result)

    def __init__(self) -> None:
        self._claude = ClaudeAdapter()

    def default_roots(self) -> list[Path]:
        return [config_dir() / "__store.db"]

    def claims(self, path: Path, explicit: bool = False) -> bool:
        if path.name != "__store.db" and not (explicit and path.suffix in (".db", ".sqlite", ".sqlite3")):
            return False
        return "base_messages" in sqlite_tables(path)

    def read_rows(self, path: Path) -> list[RawRecord]:
        sink = RowSink()
        add = sink.add
        out = sink.records
        with open_sqlite(path) as conn:
            conn.row_factory = sqlite3.Row
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            details: dict[str, tuple[str, sqlite3.Row]] = {}
            for table in ("user_messages", "assistant_messages"):
                if table in tables:
                    for row in conn.execute(f"SELECT * FROM {table}"):
                        details[row["uuid"]] = (table, row)
            order = "timestamp, rowid" if "timestamp" in table_columns(conn, "base_messages") else "rowid"
            for base in conn.execute(f"SELECT * FROM base_messages ORDER BY {order}"):
                detail_table, detail = details.get(base["uuid"], (None, None))
                values: dict[str, bytes | None] = {"tool_use_result": None, "message": None}
                key: dict[str, Any] = {"$row": "base_messages", **_plain(base)}
                if detail is not None:
                    key["$detail"] = {"table": detail_table, **_plain(detail, skip=JSON_COLUMNS)}
                    for column in ("tool_use_result", "message"):
                        if column in detail.keys():  # noqa: SIM118 - a sqlite3.Row iterates its values
                            values[column] = as_bytes(detail[column])
                key["$then"] = [c for c, v in values.items() if v is not None]
                add(plain_json(key))
                for column in key["$then"]:
                    add(values[column] or b"")
            if "conversation_summaries" in tables:
                for row in conn.execute("SELECT * FROM conversation_summaries ORDER BY rowid"):
                    add(plain_json({"$row": "conversation_summaries", **_plain(row)}))
        return out

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        st = ctx.state
        if "inner" not in st:
            st.update(inner=FileContext(ctx.path, "transcript", ctx.project_key), row={}, then=[], values={})
        then: list[str] = st["then"]
        if then:  # a value record of the message whose key came before
            column = then.pop(0)
            obj, error = loads(rec.raw)
            st["values"][column] = obj
            base = st["row"]
            if column != "message":
                return Record(
                    entry_type="tool-use-result",
                    session_id=as_str(base.get("session_id")),
                    parse_error=error,
                    session=_info(base),
                )
            out = self._message(base, st, rec)
            out.parse_error = out.parse_error or error
            return out
        obj, error = loads(rec.raw)
        if not isinstance(obj, dict):
            return Record(entry_type="invalid", known=False, parse_error=error)
        if obj.get("$row") == "conversation_summaries":
            line = {"type": "summary", "summary": obj.get("summary"), "leafUuid": obj.get("leaf_uuid")}
            out = self._claude.normalize(
                RawRecord(rec.offset, rec.line_number, orjson.dumps(line)), st["inner"]
            )
            out.timestamp = None
            return out
        st["row"], st["then"], st["values"] = obj, list(obj.get("$then") or []), {}
        return Record(
            entry_type="row",
            subtype=as_str(obj.get("message_type")),
            session_id=as_str(obj.get("session_id")),
            session=_info(obj),
            cwd=as_str(obj.get("cwd")),
            version=as_str(obj.get("version")),
        )

    def _message(self, base: dict[str, Any], st: dict[str, Any], rec: RawRecord) -> Record:
        """The message in its JSONL shape, read by the Claude Code adapter."""
        detail = as_dict(base.get("$detail"))
        line: dict[str, Any] = {
            "type": base.get("message_type"),
            "uuid": base.get("uuid"),
            "parentUuid": base.get("parent_uuid"),
            "sessionId": base.get("session_id"),
            "timestamp": base.get("timestamp"),
            "cwd": base.get("cwd"),
            "userType": base.get("user_type"),
            "version": base.get("version"),
            "isSidechain": bool(base.get("isSidechain")),
            "message": st["values"].get("message"),
        }
        if st["values"].get("tool_use_result") is not None:
            line["toolUseResult"] = st["values"]["tool_use_result"]
        if detail.get("is_meta"):
            line["isMeta"] = True
        if detail.get("is_api_error_message"):
            line["isApiErrorMessage"] = True
        if detail.get("cost_usd") is not None:
            line["costUSD"], line["durationMs"] = detail.get("cost_usd"), detail.get("duration_ms")
        return self._claude.normalize(RawRecord(rec.offset, rec.line_number, orjson.dumps(line)), st["inner"])


def _plain(row: sqlite3.Row, skip: frozenset[str] = frozenset()) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in row.keys():  # noqa: SIM118 - a sqlite3.Row iterates its values
        if key in skip:
            continue
        value = row[key]
        out[key] = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return out


def _info(base: dict[str, Any]) -> SessionInfo | None:
    sid = as_str(base.get("session_id"))
    return SessionInfo(source=CLAUDE, external_id=sid) if sid else None
