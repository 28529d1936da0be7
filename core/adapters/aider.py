"""Aider: `.aider.chat.history.md` in a project's root (FORMATS.md §6), read line by line.

The file is append-only markdown; every line is stored as its own record, so it round-trips byte
for byte. What the lines mean is decided by blocks:
  * `# aider chat started at <local time>` starts a session (id `aider:<tag>:<byte offset>`, the
    tag naming the history wherever it sits: `history_tag`; the lines before the first header,
    the tail of an older run, form a session of their own, but the empty line aider writes before
    each header is the first session's);
  * `#### ` lines are what the person typed (a multi-line input is one block): a turn starts there,
    commands (`/add`, `/run`, …) included; the block's first line carries the whole text;
  * `> ` lines are aider's own output (version, model, "Applied edit", commits, command output), one
    system message per group; a `> Tokens: … sent, … received` line carries that request's usage
    (`sent` includes the cache, which is split out when the line names it);
  * other lines are the model's reply, one message per block (code fences keep `#### ` and `> `
    lines inside a reply); what a reasoning model thought is written in it between
    `<thinking-content-<hash>>` and `</thinking-content-<hash>>` (aider 0.86): the reply's
    thinking, not its text.
The first line of a block looks ahead in the file for the rest of its block (the file is re-read
once per ingest), and an append read on its own first replays its session from the header.

Default discovery stays cheap: the history file in the home folder and in its project folders one
or two levels down (`~/x/`, `~/src/x/`, …), never a walk of the whole home; `--source` folders are
walked (skipping `.git`, `node_modules`, virtualenvs).
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from .base import (
    BOM,
    Adapter,
    Command,
    FileContext,
    ForkError,
    RawRecord,
    Record,
    ResumeTarget,
    SessionInfo,
    SourceRef,
    Usage,
    drop,
    epoch_ms,
    read_regular,
    safe_int,
)
from .shared import (
    head_of,
)
from .walk import walk

AGENT = "aider"
HISTORY_NAME = ".aider.chat.history.md"
HEADER = b"# aider chat started at "
PROJECT_DIRS = (
    "src",
    "code",
    "Code",
    "projects",
    "Projects",
    "dev",
    "work",
    "repos",
    "git",
    "workspace",
    "Developer",
    "Documents/GitHub",
    "go/src",
)
PRUNE = frozenset(
    {
        ".git",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".tox",
        ".mypy_cache",
        ".cache",
        "site-packages",
        ".aider.tags.cache.v3",
        ".aider.tags.cache.v4",
        "Library",
        ".Trash",
    }
)
TOKENS = re.compile(r"^Tokens: (.*?) received\b")
TOKEN_PART = re.compile(r"([\d.,]+)([kKmM]?) (sent|cache write|cache hit|cached)")
RECEIVED = re.compile(r"([\d.,]+)([kKmM]?)$")
MODEL = re.compile(r"^(?:Main model|Models?|Model): ([\w./@:+-]+)")  # "⚡" after a name marks prompt caching
VERSION = re.compile(r"^Aider v(\S+)")
# aider's reasoning tag (reasoning_tags.py: "thinking-content-" and a fixed hash) around what the model
# thought; a reply cut short may lack the closing tag, and one whose opening was lost has only it
REASONING_OPEN = re.compile(r"<(thinking-content-[0-9a-f]+)>")
REASONING_CLOSE = re.compile(r"</thinking-content-[0-9a-f]+>")


def looks_like_aider(head: bytes) -> bool:
    head = head.removeprefix(BOM)
    return HEADER in head or (
        b"\n#### " in head and b"\n> " in head and not head.lstrip().startswith((b"{", b"["))
    )


class AiderAdapter(Adapter):
    """Reads aider chat histories; see the module docstring."""

    name = AGENT
    env_vars = ("AIDER_CHAT_HISTORY_FILE",)
    mode = "lines"
    fork_style = "history-copy"
    undo_style = "git-commits"  # it commits its edits: a revert takes them back
    starts_with_prompt = False  # its command line's words are files to add to the chat
    edits_in_replies = True

    def resume_command(self, target: ResumeTarget, *, fork: bool = False) -> Command:
        """Aider reloads the chat history of the folder it is started in."""
        if fork:
            raise ForkError("Aider has no sessions to fork; fork at a point writes a history copy instead")
        return Command([self.program, "--restore-chat-history"])

    def fork_file_command(self, path: str) -> Command:
        """Aider opens a copy of a history with `--chat-history-file PATH --restore-chat-history`."""
        return Command([self.program, "--chat-history-file", path, "--restore-chat-history"])

    def default_roots(self) -> list[Path]:
        """History files in the usual places only: the home folder and project folders under it."""
        home = Path.home()
        found: list[Path] = []
        env = os.environ.get("AIDER_CHAT_HISTORY_FILE")
        if env:
            found.append(Path(env).expanduser())
        candidates = [home / HISTORY_NAME]
        for base in (home, *(home / d for d in PROJECT_DIRS)):
            try:
                entries = sorted(os.scandir(base), key=lambda e: e.name)
            except OSError:
                continue
            candidates += [
                Path(e.path) / HISTORY_NAME
                for e in entries
                if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")
            ]
        found += [p for p in candidates if p.is_file()]
        return found or [home / HISTORY_NAME]

    def claims(self, path: Path, explicit: bool = False) -> bool:
        name = path.name
        if name == HISTORY_NAME or name.endswith(".chat.history.md"):
            return True
        if not name.endswith((".md", ".markdown", ".txt")):
            return False
        # on a walk only history-like names are opened; a file named on the command line always is
        return (explicit or "history" in name.lower() or "aider" in name.lower()) and looks_like_aider(
            head_of(path)
        )

    def discover(self, root: Path) -> Iterator[SourceRef]:
        if root.is_file():
            if self.claims(root, explicit=True):
                yield SourceRef(root, AGENT, "transcript", root.parent.name)
            return
        if not root.is_dir():
            return
        for dirpath, dirnames, filenames in walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in PRUNE)
            for fname in sorted(filenames):
                if fname.endswith((".md", ".markdown", ".txt")) and self.claims(Path(dirpath) / fname):
                    path = Path(dirpath) / fname
                    yield SourceRef(path, AGENT, "transcript", path.parent.name)

    # ------------------------------------------------------------------ normalize

    def normalize(self, rec: RawRecord, ctx: FileContext) -> Record:
        st = ctx.state
        if "blocks" not in st:
            self._start(ctx, rec.offset)
        return self._line(rec, st)

    def _start(self, ctx: FileContext, offset: int) -> None:
        st = ctx.state
        data = ctx.stored() if ctx.stored is not None else None  # a replay: the archive's bytes
        if data is None:
            try:
                data = read_regular(ctx.path)
            except OSError:
                data = b""
        tag = history_tag(ctx.path, first_line(data[a:b] for a, b in _lines(data, 0, len(data))))
        opening = _opening_header(data)
        st.update(
            data=data,
            tag=tag,
            sid=f"aider:{tag}:{opening}",
            # the empty lines before the first header are its session's, which its header names
            # (by the time it was started at): they name it no other way
            before_header=opening > 0,
            ts=None,
            last=None,
            model=None,
            cwd=str(ctx.path.parent),
            project=ctx.path.parent.name,  # each record's project key (a Path built a line: a third of the normalizing)
            first=True,
            version=None,
        )
        begin = 0
        if offset > 0:  # an append read on its own: start from the header of the session it continues
            header = data.rfind(b"\n" + HEADER, 0, offset)
            begin = header + 1 if header >= 0 else 0
        st["blocks"] = _segment(data, begin)
        if offset > begin:
            for line_number, (start, end) in enumerate(_lines(data, begin, offset), 1):
                self._line(RawRecord(start, line_number, data[start:end]), st)

    def _line(self, rec: RawRecord, st: dict[str, Any]) -> Record:
        raw = rec.raw
        text = raw.removeprefix(BOM).decode("utf-8", "replace")
        block = st["blocks"].get(rec.offset)
        if block is None or not st["data"].startswith(raw, rec.offset):
            block = _classify_alone(raw)  # the file changed since: this line is read on its own
        kind, first, body = block
        if kind == "header":
            return self._header(rec, text, st)
        out = Record(
            entry_type=kind, session_id=st["sid"], session=None if st["before_header"] else self._info(st)
        )
        if st["first"]:
            out.cwd = st["cwd"]
            st["first"] = False
        if kind == "blank":
            return out
        if kind == "quote":
            self._facts(out, text[1:].strip(), st, rec.offset)
        if not first:
            out.is_meta = True  # part of the block its first line carries
            return out
        out.uuid = f"{st['sid']}:{rec.offset}"
        out.parent_uuid = st["last"]
        st["last"] = out.uuid
        out.content = body or None
        out.is_message = bool(body)
        if kind == "user":
            out.role = "user"
            out.is_prompt = bool(body) and body != "<blank>"
            out.subtype = "command" if body.startswith("/") else "prompt"
            out.timestamp = st["ts"]
        elif kind == "reply":
            out.role = "assistant"
            out.model = st["model"]
            out.thinking, text = split_reasoning(body)
            out.content = text or None
            out.is_message = bool(text or out.thinking)
        else:
            out.role = "system"
        return out

    def _header(self, rec: RawRecord, text: str, st: dict[str, Any]) -> Record:
        stamp = text[len(HEADER) :].strip()
        st.update(
            sid=f"aider:{st['tag']}:{rec.offset}",
            last=None,
            model=None,
            first=False,
            version=None,
            before_header=False,
        )
        try:
            st["ts"] = epoch_ms(
                datetime.fromisoformat(stamp).timestamp() * 1000
            )  # local time, as aider writes it
        except (ValueError, OverflowError, OSError):  # not a date, or one the platform cannot place
            st["ts"] = None
        return Record(
            entry_type="session-start",
            session_id=st["sid"],
            timestamp=st["ts"],
            cwd=st["cwd"],
            session=self._info(st, stamp),
        )

    def _info(self, st: dict[str, Any], stamp: str | None = None) -> SessionInfo:
        return SessionInfo(source=AGENT, external_id=stamp or st["sid"], project_key=st["project"])

    def _facts(self, out: Record, line: str, st: dict[str, Any], offset: int) -> None:
        """Model, version and token counts from aider's own output lines."""
        m = MODEL.match(line)
        if m:
            st["model"] = out.model = m.group(1)
        v = VERSION.match(line)
        if v:
            out.version = v.group(1)
        usage = _tokens(line, f"{st['sid']}:tokens:{offset}")
        if usage is not None:
            out.usage = usage
            out.model = st["model"]


def _opening_header(data: bytes) -> int:
    """Where the session the history's first lines belong to starts: aider begins each run with an
    empty line before its header, so empty lines before the first header are that session's; any
    other line there is the tail of an older run, a session of its own (at 0)."""
    for start, end in _lines(data, 0, len(data)):
        line = data[start:end].removeprefix(BOM)
        if line.strip():
            return start if line.startswith(HEADER) else 0
    return 0


def first_line(lines: Iterable[bytes]) -> bytes:
    """A history's first line that is not blank (aider starts a new file with an empty line), as it
    is written (no BOM, no line end): once written it never changes, as aider only appends."""
    for line in lines:
        line = line.removeprefix(BOM).rstrip(b" \t\r")
        if line:
            return line
    return b""


def history_tag(path: Path, first: bytes) -> str:
    """What a history's session ids start with (`aider:<tag>:<offset>`): a hash of its first line
    (normally `# aider chat started at <time>`) and of its file's and folder's names, never of where
    the folder sits. So the same history pulled onto another machine, or its repository moved,
    keeps its session ids (and the tags, notes and entries kept on them); the names tell apart a
    history copied beside its source (a fork's copy) and two repositories whose histories begin
    alike (started in the same second, or after the same first line)."""
    names = f"{path.parent.name}/{path.name}\n".encode("utf-8", "surrogateescape")
    return hashlib.sha1(names + first).hexdigest()[:8]


def path_tag(path: Path) -> str:
    """The tag session ids had before 14 (`history_tag`): a hash of the history's absolute path,
    which changed with the machine or the folder the file was read at."""
    return hashlib.sha1(str(path).encode("utf-8", "surrogateescape")).hexdigest()[:8]


def renamed_tags(conn: sqlite3.Connection) -> dict[str, str]:
    """Each Aider history's session-id prefix as it was (`path_tag`) and as it is (`history_tag`),
    for what people wrote on the old ids to follow (core.insight.memory.rename_sessions): read from the
    archive's records, so a file gone from the disk is renamed too."""
    from .base import disk_name

    out: dict[str, str] = {}
    for file_id, stored in conn.execute(
        "SELECT id, path FROM source_files WHERE agent = ? AND kind != 'version'", (AGENT,)
    ).fetchall():
        path = Path(disk_name(stored))
        lines = (
            bytes(r[0])
            for r in conn.execute(
                "SELECT raw FROM entries WHERE source_file_id = ? AND byte_offset >= 0 ORDER BY byte_offset",
                (file_id,),
            )
        )
        old, new = path_tag(path), history_tag(path, first_line(lines))
        if old != new:
            out[f"aider:{old}:"] = f"aider:{new}:"
    return out


def split_reasoning(body: str) -> tuple[str | None, str]:
    """(thinking, text) of a reply: what its reasoning tags enclose, and the rest. A reply cut off
    before the closing tag is all thinking after the opening one; a closing tag alone ends the
    thinking that came before it (as aider's own `remove_reasoning_content` reads it)."""
    thoughts: list[str] = []
    rest: list[str] = []
    pos = 0
    while True:
        opening = REASONING_OPEN.search(body, pos)
        if opening is None:
            tail = body[pos:]
            if not thoughts and not rest:
                closing = REASONING_CLOSE.search(tail)
                if closing is not None:
                    thoughts.append(tail[: closing.start()])
                    tail = tail[closing.end() :]
            rest.append(tail)
            break
        rest.append(body[pos : opening.start()])
        end = body.find(f"</{opening.group(1)}>", opening.end())
        if end < 0:
            thoughts.append(body[opening.end() :])
            break
        thoughts.append(body[opening.end() : end])
        pos = end + len(opening.group(1)) + 3
    thinking = "\n\n".join(t.strip() for t in thoughts if t.strip())
    return thinking or None, "".join(rest).strip()


def _number(value: str, suffix: str) -> int:
    """`1,234`, `1.6k`, `2.1M` as a count; 0 for what only looks like one (`1.2.3`, `.`)."""
    try:
        n = float(value.replace(",", ""))
    except ValueError:
        drop("number", value)
        return 0
    return safe_int(round(n * {"k": 1e3, "m": 1e6}.get(suffix.lower(), 1), 0))


def _tokens(line: str, key: str) -> Usage | None:
    """`Tokens: 1.6k sent, 1.6k cache write, 2.1k cache hit, 51 received.`; sent includes the cache."""
    m = TOKENS.match(line)
    if not m:
        return None
    body = m.group(1)
    values: dict[str, int] = {}
    for part in TOKEN_PART.finditer(body):
        values[part.group(3)] = _number(part.group(1), part.group(2))
    received = RECEIVED.search(body.strip())
    output = _number(received.group(1), received.group(2)) if received else 0
    written = values.get("cache write", 0)
    read = values.get("cache hit", 0) + values.get("cached", 0)
    return Usage(key, None, max(0, values.get("sent", 0) - written - read), output, written, read)


# ---------------------------------------------------------------------- blocks


def _lines(data: bytes, begin: int, end: int) -> Iterator[tuple[int, int]]:
    pos = begin
    while pos < end:
        nl = data.find(b"\n", pos, end)
        stop = end if nl < 0 else nl
        yield pos, stop
        pos = stop + 1


def _line_kind(line: bytes) -> str:
    line = line.removeprefix(BOM)
    if line.startswith(HEADER):
        return "header"
    stripped = line.rstrip(b" \r")
    if stripped == b"####" or line.startswith(b"#### "):
        return "user"
    if stripped == b">" or line.startswith(b"> "):
        return "quote"
    if not stripped:
        return "blank"
    return "reply"


def _classify_alone(raw: bytes) -> tuple[str, bool, str]:
    kind = _line_kind(raw)
    return kind, kind not in ("blank", "header"), _strip(kind, raw)


def _strip(kind: str, line: bytes) -> str:
    text = line.removeprefix(BOM).decode("utf-8", "replace").rstrip("\r")
    if kind == "user":
        return text[4:].strip()
    if kind == "quote":
        return text[1:].rstrip().removeprefix(" ")
    return text.rstrip()


def _segment(data: bytes, begin: int) -> dict[int, tuple[str, bool, str]]:
    """Line offset → (kind, first line of its block, the block's text) from `begin` to the end.

    As aider's own history reader does, `#### ` lines are the person's and `> ` lines aider's; but
    inside a code fence of a reply they stay part of the reply, unless they follow a blank line and
    end in aider's two-space line break (the reply was interrupted with its fence open).
    """
    out: dict[int, tuple[str, bool, str]] = {}
    block: list[tuple[int, bytes]] = []
    kind: str | None = None
    fence = False
    prev_blank = True

    def close() -> None:
        if not block:
            return
        texts = [_strip(kind or "reply", line) for _, line in block]
        body = "\n".join(texts).strip("\n")
        for i, (offset, _) in enumerate(block):
            out[offset] = (kind or "reply", i == 0, body if i == 0 else "")
        block.clear()

    for start, end in _lines(data, begin, len(data)):
        line = data[start:end]
        lk = _line_kind(line)
        if lk == "header":
            close()
            kind, fence, prev_blank = None, False, True
            out[start] = ("header", False, "")
            continue
        if (
            fence
            and lk in ("user", "quote")
            and prev_blank
            and (line.endswith(b"  ") or line.startswith(b"> Tokens: "))
        ):
            fence = False  # a reply cut off inside a code block: aider's own line (ends "  ") ends it
        prev_blank = lk == "blank"
        if kind == "reply" and (fence or lk in ("reply", "blank")):
            if line.lstrip().startswith(b"```"):
                fence = not fence
            block.append((start, line))
            continue
        if lk == "blank":
            close()
            kind = None
            out[start] = ("blank", False, "")
            continue
        if lk != kind:
            close()
            kind = lk
        if lk == "reply" and line.lstrip().startswith(b"```"):
            fence = not fence
        block.append((start, line))
    close()
    return out
