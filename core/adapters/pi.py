"""pi (pi-coding-agent) session logs.

Where: `$PI_CODING_AGENT_DIR/sessions/--<cwd, '/' as '-'>--/<timestamp>_<session id>.jsonl`
(`~/.pi/agent` by default); `--source` folders at any depth. Checked against badlogic/pi-mono
(`packages/coding-agent/docs/session.md`, `src/core/session-manager.ts`, `src/config.ts`, the tools
in `src/core/tools/`) at 83378aad (2026-03-15).

The first line is the header, `{type: "session", version, id, timestamp, cwd, parentSession?}`
(`parentSession`: the file a `/fork` copied; version 1 files say `branchedFrom`). Every other entry
has `type`, `id` (8 hex digits), `parentId` (a tree: `/tree` branches in place) and `timestamp`:
* `message`: `message` is an AgentMessage: `user` (`content` text or blocks), `assistant`
  (`content [text | thinking | toolCall {id, name, arguments}]`, `provider`, `model`, `usage {input,
  output, cacheRead, cacheWrite, cost {total}}`, `stopReason`), `toolResult` (`toolCallId`,
  `toolName`, `content`, `details`, `isError`), `bashExecution` (a command the user ran with `!`),
  `custom`, `branchSummary`, `compactionSummary`;
* `model_change`, `thinking_level_change`, `compaction` (`summary`, `firstKeptEntryId`,
  `tokensBefore`: the one record a compaction writes, the summary kept nowhere else; shown as a
  compaction line where it happened),
  `branch_summary`, `custom`, `custom_message`, `label`, `session_info` (`name`: the session's
  title); anything else kept as an event.

Resume: `pi --session <session id>` (the id or a file; run in the session's folder). Ids are UUIDs
unless `--session-id` named the session (seen in a real run described in a public repository).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .base import (
    Adapter,
    Command,
    FileContext,
    ForkError,
    RawRecord,
    Record,
    ResumeTarget,
    SessionInfo,
    SourceRef,
    ToolResult,
    ToolUse,
    Usage,
    parse_iso_ms,
    recorded_cost,
    safe_int,
)
from .edits import FileEdit
from .shared import (
    as_dict,
    as_list,
    as_str,
    head_lines,
    head_of,
    json_text,
    parse_record,
    text_of_blocks,
    wrapped_params,
)
from .walk import walk

AGENT = "pi"
COMMAND_CODE = ".commandcode"  # another agent's folder, whose transcripts start with pi's header
KNOWN = frozenset(
    {
        "session",
        "message",
        "model_change",
        "thinking_level_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }
)
# `<ISO time with '-' for ':' and '.'>_<session id>.jsonl`; the id is a UUID unless `--session-id` named it
_FILE_ID = re.compile(r"(?:^|[/\\])\d{4}-\d\d-\d\dT[\d-]+Z_([^/\\]+)\.jsonl$")


def pi_agent_dir() -> Path:
    value = os.environ.get("PI_CODING_AGENT_DIR")
    return Path(value).expanduser() if value else Path.home() / ".pi" / "agent"


def pi_header(head: bytes) -> dict[str, Any] | None:
    """A file's first record when it is pi's session header (read leniently: a value of another
    type or out of range is the normalizer's to leave out, not a reason to leave the file unread)."""
    obj = head_lines(head, 1)[0]
    if not isinstance(obj, dict) or obj.get("type") != "session":
        return None
    # pi's header names its session, its folder and its start; no other agent's `session` line has all three
    return obj if all(key in obj for key in ("id", "cwd", "timestamp")) else None


def pi_entries(head: bytes) -> bool:
    """Whether a head whose first line is no JSON (a header cut short by a crash) goes on in pi's
    entries: `type`, an 8-hex-digit `id`, `parentId`."""
    first, *rest = head_lines(head) or [None]
    return first is None and any(
        isinstance(obj, dict)
        and obj.get("type") in KNOWN
        and isinstance(obj.get("id"), str)
        and re.fullmatch(r"[0-9a-f]{8}", obj["id"]) is not None
        and "parentId" in obj
        for obj in rest
    )


def session_of_file(path: object) -> str | None:
    """The session id in a pi log's file name (`<timestamp>_<id>.jsonl`)."""
    match = _FILE_ID.search(str(path)) if isinstance(path, str) else None
    return match.group(1) if match else None


class PiAdapter(Adapter):
    """Reads pi's session logs; see the module docstring."""

    name = AGENT
    env_vars = ("PI_CODING_AGENT_DIR",)
    mode = "lines"
    display_name = "pi"
    program = "pi"
    fork_style = "whole-session-resume"
    edit_tools = frozenset({"edit"})
    write_tools = frozenset({"write"})
    read_tools = frozenset({"read"})
    shell_tools = frozenset({"bash"})

    def default_roots(self) -> list[Path]:
        return [pi_agent_dir() / "sessions"]

    def claims(self, path: Path) -> bool:
        if COMMAND_CODE in path.parts:  # Command Code writes pi's header too: its files are not pi's
            return False
        if not path.name.endswith(".jsonl"):
            return False
        head = head_of(path, 16384)
        # a damaged header: still pi's when the file is named as pi names its logs and goes on in its entries
        return pi_header(head) is not None or (session_of_file(str(path)) is not None and pi_entries(head))

    def stranger(self, path: Path) -> str | None:
        """Command Code's transcripts (`~/.commandcode/projects/`) open with pi's session header."""
        if COMMAND_CODE not in path.parts or not path.name.endswith(".jsonl"):
            return None
        if pi_header(head_of(path, 16384)) is None:
            return None
        return (
            "a Command Code transcript (pi's session format, ~/.commandcode): no reader for Command Code yet"
        )

    def discover(self, root: Path) -> Iterator[SourceRef]:
        if root.is_file():
            if self.claims(root):
                yield SourceRef(root, AGENT, "transcript", root.parent.name)
            return
        for dirpath, dirnames, filenames in walk(root):
            dirnames.sort()
            for fname in sorted(filenames):
                if fname.endswith(".jsonl"):
                    path = Path(dirpath) / fname
                    if self.claims(path):
                        yield SourceRef(path, AGENT, "transcript", path.parent.name)

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        obj, error = parse_record(rec.raw)
        if not isinstance(obj, dict):
            return Record(entry_type="invalid", known=False, parse_error=error or "not a JSON object")
        st = ctx.state
        kind = as_str(obj.get("type"))
        if kind == "session":
            st["sid"] = as_str(obj.get("id"))
        sid = st.get("sid") or session_of_file(ctx.path.name) or ctx.path.stem
        entry = as_str(obj.get("id")) if kind != "session" else None
        out = Record(
            entry_type=kind,
            known=kind in KNOWN,
            parse_error=error,
            # entry ids are 8 hex digits, unique in their file only
            uuid=f"{sid}:{entry}" if entry else None,
            parent_uuid=f"{sid}:{obj['parentId']}" if isinstance(obj.get("parentId"), str) else None,
            timestamp=parse_iso_ms(obj.get("timestamp")),
            session_id=sid,
            session=SessionInfo(source=AGENT, external_id=sid, project_key=ctx.project_key),
        )
        if kind == "session":
            out.cwd = as_str(obj.get("cwd"))
            version = obj.get("version")
            out.version = str(version) if isinstance(version, int) and not isinstance(version, bool) else None
            out.model = as_str(obj.get("modelId"))  # version 1 headers
            source = obj.get("parentSession") or obj.get("branchedFrom")
            out.forked_from_session_id = session_of_file(source)
        elif kind == "message":
            self._message(out, as_dict(obj.get("message")), entry or "")
        elif kind == "model_change":
            out.model = as_str(obj.get("modelId"))
        elif kind == "compaction":
            # the one record of a compaction (`/compact`, or pi's own): a line where it happened,
            # holding the summary the model goes on from, as other agents' compactions are drawn
            out.is_compaction = out.segment_marker = True
            out.role, out.is_meta, out.is_message = "system", True, True
            out.subtype = "compaction_summary"
            out.content = as_str(obj.get("summary"))
        elif kind == "branch_summary":
            out.content = as_str(obj.get("summary"))
        elif kind == "custom_message":
            out.role, out.is_meta = "user", True
            out.content = text_of_blocks(obj.get("content"))
            out.is_message = obj.get("display") is True and out.content is not None
        elif kind == "session_info":
            name = as_str(obj.get("name"))
            if name:  # named as the ledger reads a session's titles: by the kind of its record
                out.entry_type, out.content, out.title = "custom-title", name, ("custom-title", name)
        return out

    def _message(self, out: Record, message: dict[str, Any], entry: str) -> None:
        role = as_str(message.get("role"))
        out.message_id = out.uuid
        content = message.get("content")
        if role == "user":
            out.role = "user"
            out.content = text_of_blocks(content)
            out.is_message = out.content is not None
            out.is_prompt = out.is_message
        elif role == "assistant":
            out.role = "assistant"
            out.model = as_str(message.get("model"))
            texts: list[str] = []
            thoughts: list[str] = []
            inputs: list[str] = []
            for number, block in enumerate(as_list(content)):
                block = as_dict(block)
                btype = block.get("type")
                if btype == "text" and isinstance(block.get("text"), str):
                    texts.append(block["text"])
                elif btype == "thinking" and isinstance(block.get("thinking"), str):
                    thoughts.append(block["thinking"])
                elif btype == "toolCall":
                    params = wrapped_params(block.get("arguments"), "arguments")
                    call = ToolUse(
                        as_str(block.get("id")) or f"{out.uuid}:{number}",
                        as_str(block.get("name")) or "?",
                        json_text(params),
                        number,
                    )
                    out.tool_uses.append(call)
                    inputs.append(call.input_json)
            out.content = "\n".join(texts) or as_str(message.get("errorMessage"))
            out.thinking = "\n".join(thoughts) or None
            out.tool_text = "\n".join(inputs) or None
            out.is_message = bool(out.content or out.thinking or out.tool_uses)
            usage = as_dict(message.get("usage"))
            if usage and out.uuid:
                out.usage = Usage(
                    out.uuid,
                    as_str(message.get("responseId")),
                    input_tokens=safe_int(usage.get("input")),
                    output_tokens=safe_int(usage.get("output")),
                    cache_creation_tokens=safe_int(usage.get("cacheWrite")),
                    cache_read_tokens=safe_int(usage.get("cacheRead")),
                    cost_usd=recorded_cost(as_dict(usage.get("cost")).get("total")),
                )
        elif role == "toolResult":
            out.role = "user"
            status = "failed" if message.get("isError") is True else "completed"
            out.tool_results.append(
                ToolResult(as_str(message.get("toolCallId")) or "", json_text(content), status)
            )
            out.tool_text = text_of_blocks(content)
        elif role == "bashExecution":
            # a command the user ran with `!`: a call and its result in one record
            out.role = "user"
            command = as_str(message.get("command")) or ""
            call_id = f"{out.uuid}:bash"
            out.tool_uses.append(ToolUse(call_id, "bash", json_text({"command": command})))
            failed = message.get("cancelled") is True or safe_int(message.get("exitCode")) != 0
            output = as_str(message.get("output")) or ""
            out.tool_results.append(
                ToolResult(call_id, json_text(output), "failed" if failed else "completed")
            )
            out.tool_text = "\n".join(t for t in (command, output) if t) or None
            out.is_message = True
        elif role in ("branchSummary", "compactionSummary", "custom"):
            out.role, out.is_meta = "user", True
            out.content = as_str(message.get("summary")) or text_of_blocks(content)
            out.segment_marker = role == "compactionSummary"
            out.is_message = role != "custom" or message.get("display") is True

    # ------------------------------------------------------------------ capabilities

    def file_edits(self, name: str, params: dict[str, Any], result: Any = None) -> list[FileEdit]:
        """pi's edit names its texts `oldText` / `newText`."""
        if name in self.edit_tools and "oldText" in params:
            params = {**params, "old_string": params.get("oldText"), "new_string": params.get("newText")}
        return super().file_edits(name, params, result)

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        """`pi --session ID`, run in the session's folder (pi finds a session by its id)."""
        if fork:
            raise ForkError("pi copies a session only from inside it (/fork); resume it instead")
        return Command([self.program, "--session", self.checked_id(target.external_id)])
