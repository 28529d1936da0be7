"""A session handed to someone else: Markdown, one self-contained HTML page, or JSON.

All three are built from one `Thread` (the session's messages on the chosen branch, each tool call
with its input, output and diff, and the subagents a call started, nested under it), so they show
the same conversation. Everything from the log is untrusted: HTML is escaped (Markdown is rendered
with raw HTML off and unsafe links refused, and the page's content security policy allows no
script and no network), Markdown and HTML never carry a terminal's escape sequences, and JSON is
orjson's. `--redact` runs every string, raw records included, through `core.base.redact.Redactor`, and
masks a call's input and output, decoded, before a summary is cut from them or a diff split into
rows, so a secret is never cut past recognition or spread over rows that are masked one by one.
"""

from __future__ import annotations

import base64
import html
import os
import re
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from ..adapters import spawned, tool_group
from ..adapters.base import ImageRef
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
    as_dict,
    described,
    is_note,
    parse,
    todo_before,
    todo_changes,
    todo_count,
    todos,
)
from ..base.redact import Redactor
from ..base.text import clock, count_of, drop_colours, human_tokens, one_line, printable
from ..present.markdown import too_deep, typed_source
from ..present.render import (
    CAVEAT_NOTE,
    COMPACT_SUMMARY,
    WITHDRAWN_NOTE,
    WITHDRAWN_TAG,
    chip_mark,
    hook_duration,
    starts_withdrawn,
)
from ..read import browse, images
from ..read.calls import call_params, result_text, tool_summary
from ..read.diffs import DiffLine, call_diff, is_edit
from ..read.images import describe
from ..read.query import (
    MessageRow,
    SessionSummary,
    ToolCall,
    children_of,
    display_title,
    get_session,
    messages,
)

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

FORMATS = ("md", "html", "json")
MAX_DEPTH = 8  # subagents nested deeper than this are named, not included
STATUS_MARK = {"completed": "✓", "failed": "✗", "rejected": "⊘", "interrupted": "⏹", "pending": "…"}
ROLE_NAME = {"user": "User", "assistant": "Assistant", "system": "System"}


class ExportError(ValueError):
    """An export that cannot be made as asked (an unknown branch or format); says what would work."""


@dataclass
class Thread:
    """What an export shows of one session."""

    session: SessionSummary
    messages: list[MessageRow]
    children: dict[str, Thread] = field(default_factory=dict)  # by the id of the call that started it
    extras: dict[str, Any] = field(default_factory=dict)  # a call's structured result, by call id
    branch: browse.Branch | None = None
    branches: int = 0
    # images inside a call's result (a Read of a screenshot), shown with that call: (entry id, image)
    call_images: dict[str, list[tuple[int, ImageRef]]] = field(default_factory=dict)
    withdrawn: frozenset[int] = frozenset()  # what an undo or a rewind took back (`browse.withdrawn_seqs`)

    def own_images(self, msg: MessageRow) -> list[ImageRef]:
        """The images shown on the message itself: in its prompt, or in a result whose call is not here."""
        return [i for i in msg.images if i.place != "tool result" or i.tool_use_id not in self.call_images]


@dataclass
class Exported:
    data: bytes
    messages: int
    subagents: int
    redactor: Redactor
    branch: browse.Branch | None
    branches: int


def export_session(
    conn: sqlite3.Connection,
    session: SessionSummary,
    fmt: str,
    *,
    branch: int | None = None,
    redact: bool = False,
    now: datetime | None = None,
) -> Exported:
    """The session as `fmt` ("md", "html" or "json"); `branch` is a number from `browse.branches`
    (default: the branch the agent continued)."""
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    thread = read_thread(conn, session, branch=branch)
    redactor = Redactor(enabled=redact)
    stamp = _zoned((now or datetime.now(UTC)).astimezone())
    if fmt == "md":
        data = _markdown(thread, redactor, stamp).encode()
    elif fmt == "html":
        data = _html(conn, thread, redactor, stamp).encode()
    else:
        data = _json(conn, thread, redactor, stamp)
    return Exported(
        data,
        len(thread.messages),
        sum(1 for _ in _descendants(thread)),
        redactor,
        thread.branch,
        thread.branches,
    )


def file_name(session: SessionSummary, fmt: str) -> str:
    """A file name that says which session it holds: its title's words (letters, digits and dashes
    only: a title is anyone's text) and its id's start."""
    words = re.sub(r"[^A-Za-z0-9]+", "-", _title(session)).strip("-").lower()[:48].rstrip("-")
    short = re.sub(r"[^A-Za-z0-9]+", "", session.id.split(":")[-1])[:8]
    return f"{words or 'session'}-{short or 'export'}.{fmt}"


def write_new(folder: Path, name: str, data: bytes) -> Path:
    """`data` into a new file in `folder` named `name` (or name-2, name-3, … when it is taken):
    an export never replaces a file."""
    stem, dot, suffix = name.rpartition(".")
    for n in range(1, 1000):
        path = folder / (name if n == 1 else f"{stem}-{n}{dot}{suffix}")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return path
    raise FileExistsError(f"{folder / name} and 998 more names like it are taken")


def read_thread(
    conn: sqlite3.Connection, session: SessionSummary, *, branch: int | None = None, depth: int = 0
) -> Thread:
    found = browse.branches(conn, session.id) if depth == 0 else []
    chosen = None
    msgs = messages(conn, session.id)
    if found:
        if branch is None:
            chosen = next(b for b in found if b.active)
        else:
            chosen = next((b for b in found if b.number == branch), None)
            if chosen is None:
                numbers = ", ".join(f"{b.number} ({b.label[:40]})" for b in found)
                raise ExportError(f"the session has no branch {branch}; its branches: {numbers}")
        keep = set(browse.branch_seqs(conn, session.id, chosen.turn_ids))
        msgs = [m for m in msgs if m.seq in keep]
    elif branch is not None and branch != 1:
        raise ExportError("the session never branched: it has one branch, 1")
    thread = Thread(session, msgs, branch=chosen, branches=len(found))
    thread.withdrawn = browse.withdrawn_seqs(conn, session.id)
    calls = [c for m in msgs for c in m.tool_calls]
    call_ids = {c.id for c in calls}
    for m in msgs:
        for image in m.images:
            if image.place == "tool result" and image.tool_use_id in call_ids:
                thread.call_images.setdefault(image.tool_use_id, []).append((m.entry_id, image))
    for call in calls:
        if is_edit(call.name, call_params(call), call.agent) or tool_group(call.agent, call.name) == "todo":
            thread.extras[call.id] = browse.tool_result_extra(conn, call)
    if depth < MAX_DEPTH:
        started = {
            c.tool_call_id: c for c in children_of(conn, session.id, include_warmup=False) if c.tool_call_id
        }
        for call in calls:
            child = (
                get_session(conn, call.child_session_id) if call.child_session_id else started.get(call.id)
            )
            if child is not None and child.id != session.id:
                thread.children[call.id] = read_thread(conn, child, depth=depth + 1)
    return thread


def _descendants(thread: Thread) -> Iterator[Thread]:
    for child in thread.children.values():
        yield child
        yield from _descendants(child)


def clean(text: str | None) -> str:
    """Log text as it may be written into a file someone will `cat`: no escape sequence, no
    control character but newline and tab. A CRLF or a lone CR ends a line, as Markdown reads it
    (drawn as ␍ it kept a fence from closing)."""
    if not text:
        return ""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return printable(drop_colours(text))


def _title(session: SessionSummary) -> str:
    return display_title(session)


def _zoned(when: datetime | int | None) -> str:
    """Local time with its offset from UTC (`2025-11-17 15:30 +05:30`): the reader of a file handed
    on may be anywhere. `when`: a datetime, or milliseconds since the epoch."""
    if when is None:
        return ""
    at = when if isinstance(when, datetime) else datetime.fromtimestamp(when / 1000).astimezone()
    zone = at.strftime("%z")
    return f"{at:%Y-%m-%d %H:%M} {zone[:3]}:{zone[3:]}"


def _facts(thread: Thread, stamp: str) -> list[tuple[str, str]]:
    s = thread.session
    facts = [
        ("Session", s.id),
        ("Agent", s.agent),
        ("Project", s.project_path or s.project or ""),
        ("Git branch", s.git_branch or ""),
        ("Started", _zoned(s.started_at)),
        ("Ended", _zoned(s.ended_at)),
        ("Model", s.model or ""),
        ("Messages", f"{len(thread.messages)}" + (f" of {s.message_count}" if thread.branch else "")),
        ("Cost", s.cost_text + (" (whole session)" if thread.branch and s.cost_text else "")),
        (
            "Tokens",
            f"{human_tokens(s.input_tokens)} in · {human_tokens(s.output_tokens)} out · "
            f"{human_tokens(s.cache_creation_tokens)} cache write · {human_tokens(s.cache_read_tokens)} cache read",
        ),
    ]
    if thread.branch is not None:
        facts.append(("Branch", f"{thread.branch.number} of {thread.branches}: {thread.branch.label}"))
    facts.append(("Exported", f"{stamp} by threadloom"))
    return [(k, v) for k, v in facts if v]


def _who(msg: MessageRow) -> str:
    return ROLE_NAME.get(msg.role or "", msg.role or msg.entry_type or "record")


def _output(call: ToolCall) -> str:
    if call.status is None or call.status == "pending":
        return ""
    return result_text(call)


def _shown_input(call: ToolCall) -> tuple[str, str]:
    """(text, language) of a call's input as a reader wants it: a shell command as shell, a
    subagent's prompt as text, anything else as indented JSON."""
    params = call_params(call)
    if isinstance(params.get("command"), str) and len(params) <= 3:
        return params["command"], "bash"
    spawn = spawned(call.agent, call.name, params)
    if spawn is not None and spawn.prompt is not None:
        return spawn.prompt, ""
    return orjson.dumps(params, option=orjson.OPT_INDENT_2).decode(), "json"


def _masked(call: ToolCall, redact: Redactor) -> ToolCall:
    """The call with its input and output masked as decoded JSON (an escaped newline is a line
    break), before anything is cut or split from them."""
    if not redact.enabled:
        return call
    return replace(
        call,
        name=redact(call.name),
        params_json=redact.json_text(call.params_json) if call.params_json else call.params_json,
        result_json=redact.json_text(call.result_json) if call.result_json else call.result_json,
    )


def _diff(thread: Thread, call: ToolCall, redact: Redactor) -> list[DiffLine]:
    """The rows of an editing call's diff, masked together: a key's BEGIN line and its body sit
    on rows of their own."""
    extra = redact.value(thread.extras.get(call.id))
    rows = call_diff(call.name, call_params(call), extra, call.agent)
    texts = redact.lines([clean(row.text) for row in rows])
    return [DiffLine(row.kind, text) for row, text in zip(rows, texts, strict=True)]


def _image(image: ImageRef, redact: Redactor) -> ImageRef:
    """The image with its declared type (the log's text, shown as its caption) masked."""
    return replace(image, media_type=redact(image.media_type)) if redact.enabled else image


# ------------------------------------------------------------------------------------ Markdown


def _fence(text: str, lang: str = "") -> str:
    """A fenced block that no backtick run inside `text` can close early."""
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


@cache
def _md_blocks() -> MarkdownIt:
    """CommonMark's block reading of a message once `_md_text` has escaped its HTML (so none)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False})


def _md_text(text: str, typed: bool = False) -> str:
    """A message's text as Markdown that shows what was written and ends where the message ends.
    Its Markdown stays (headings, lists, emphasis, code, links) but outside code raw HTML is text
    (`<` escaped, and `&` where it starts an entity, which could spell a scheme), a link to a
    javascript:, vbscript: or data: address is text, and a fence it leaves open (a reply
    interrupted inside a code block) is closed, or it would swallow every message after it.
    `typed`: a person typed it (a prompt): its backslashes are shown as typed (`_md_prose`)."""
    lines = text.split("\n")
    code = [False] * len(lines)
    prose: list[tuple[int, int]] = []  # line ranges where a code span may run (a paragraph, a heading)
    close = ""
    for token in _md_blocks().parse(text):
        if not token.map:
            continue
        start, end = token.map
        if token.type == "inline":
            prose.append((start, end))
        elif token.type in ("fence", "code_block"):
            code[start:end] = [True] * (end - start)
        if token.type == "fence" and not token.level:  # in a list or quote it ends with them
            closer = re.fullmatch(r" {0,3}(`+|~+)[ \t]*", lines[end - 1]) if end - 1 > start else None
            mark = token.markup
            if closer is None or closer[1][0] != mark[0] or len(closer[1]) < len(mark):
                close = mark
    spans = {start: end for start, end in prose}
    out: list[str] = []
    row = 0
    while row < len(lines):
        if code[row]:
            out.append(lines[row])
            row += 1
            continue
        end = max(spans.get(row, row + 1), row + 1)
        out.append(_md_prose("\n".join(lines[row:end]), typed))
        row = end
    shown = "\n".join(out)
    if close:
        shown += close if shown.endswith("\n") else f"\n{close}"
    return shown


# an autolink a reader may keep: a web or mail address (any other <…> is escaped)
SAFE_AUTOLINK = re.compile(r"<(?:(?:https?|ftp|mailto):[^\s<>]*|[\w.!#$%&'*+/=?^`{|}~-]+@[\w.-]+)>", re.I)
ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
# a link's destination (`](…` or a definition's `]: …`) that would run or carry what it names
UNSAFE_LINK = re.compile(r"\](?:\(|:)[\s<\\]*(?:javascript|vbscript|data)[\s\\]*:", re.I)
SPECIAL = re.compile(r"[\\<&\]]|`+")
PUNCTUATION = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _md_prose(text: str, typed: bool = False) -> str:
    """Lines of one paragraph (or heading) with raw HTML, entities and unsafe links made text,
    its code spans (which CommonMark shows as written) left as they are. `typed`: a backslash is
    a backslash, escaped where Markdown would read an escape (`C:\\me\\.config`) or a line break."""
    out: list[str] = []
    i = 0
    while (found := SPECIAL.search(text, i)) is not None:
        at = found.start()
        out.append(text[i:at])
        c = text[at]
        end = at + 1
        if c == "\\" and typed:
            after = text[at + 1 : at + 2]
            out.append("\\\\" if after in PUNCTUATION or after in ("\n", "") else "\\")
        elif c == "\\":
            end = at + 2 if text[at + 1 : at + 2] in PUNCTUATION else end
            out.append(text[at:end])
        elif c == "`":
            run = found.end() - at
            closing = re.compile(f"(?<!`){'`' * run}(?!`)").search(text, found.end())
            end = closing.end() if closing else found.end()  # no closer: the run is text
            out.append(text[at:end])
        elif c == "<":
            link = SAFE_AUTOLINK.match(text, at)
            out.append(link[0] if link else "&lt;")
            end = link.end() if link else end
        elif c == "&":
            out.append("&amp;" if ENTITY.match(text, at) else "&")
        else:  # `]`
            out.append("]\\" if UNSAFE_LINK.match(text, at) else "]")  # `]\(` is no link: it reads as written
        i = end
    out.append(text[i:])
    return "".join(out)


def _md_inline(text: str) -> str:
    """Text for a heading or a table's cell: one line, Markdown and HTML specials escaped."""
    one = " ".join(text.split())
    return re.sub(r"([\\`*_\[\]<>#|])", r"\\\1", html.escape(one, quote=False)) if one else ""


def _html_inline(text: str) -> str:
    """Text on one line inside raw HTML (a `<summary>`), which CommonMark leaves as it is: escaped
    for HTML only, as a Markdown escape there would show its backslash."""
    return html.escape(" ".join(text.split()))


def _markdown(thread: Thread, redact: Redactor, stamp: str) -> str:
    out = [f"# {_md_inline(redact(clean(_title(thread.session))))}", ""]
    out += ["| | |", "|---|---|"]
    out += [f"| {k} | {_md_inline(redact(clean(v)))} |" for k, v in _facts(thread, stamp)]
    out.append("")
    _md_messages(out, thread, redact, level=2)
    return "\n".join(out).rstrip() + "\n"


def _headed(thread: Thread) -> Iterator[tuple[MessageRow, str]]:
    """Each message worth showing, and how it sits: `new` starts a speaker's block (an agent's
    reply is often several records, text then each tool call: they read as one, under one
    heading), `same` goes on in the block above, `note` stands alone without a heading (Claude
    Code's caveat, a command's output with no command above it), `event` is a system record. A
    command's output goes on under the command; `summary` is the summary a compaction wrote (Claude
    Code's, a user record), no one's message; a record with nothing to show but the hooks
    after it (a tool's result) shows them in the block above; an empty output shows nothing."""
    previous: str | None = None
    for msg in thread.messages:
        if msg.role == "system" or msg.entry_type == "system":
            previous = None
            # a compaction's line that holds its summary (pi's, Kimi Code's): the summary, whole
            yield msg, "summary" if msg.subtype == COMPACTION_SUMMARY and msg.content else "event"
            continue
        if msg.is_compact_summary:
            previous = None
            yield msg, "summary"
            continue
        parts = _parts(msg)
        if parts and all(isinstance(p, CommandOutput) and not p.text.strip() for p in parts):
            if msg.hooks:
                yield msg, "same" if previous else "note"
            continue
        if is_note(parts):
            outputs = not any(isinstance(p, Caveat) for p in parts)
            yield msg, "same" if outputs and previous == "user" else "note"
            if not outputs:
                previous = None
            continue
        if not (msg.content or msg.thinking or msg.tool_calls or thread.own_images(msg)):
            if msg.hooks:
                yield msg, "same" if previous else "note"
            continue
        yield msg, "new" if msg.role != previous or msg.role != "assistant" else "same"
        previous = msg.role


COMPACTION_SUMMARY = "compaction_summary"  # the subtype of a compaction's line holding its summary


def _summary_label(text: str) -> str:
    """A compaction's summary named as the viewer names it (it reads as no one's message)."""
    return f"≡ {COMPACT_SUMMARY[:1].upper()}{COMPACT_SUMMARY[1:]} · {len(text):,} chars"


def _parts(msg: MessageRow) -> list[Part]:
    """The parts of a user message that holds Claude Code's markup (`core.base.markup`); none else."""
    parts = parse(msg.content) if msg.role == "user" and msg.content else []
    return parts if any(not isinstance(p, Typed) for p in parts) else []


def _md_messages(out: list[str], thread: Thread, redact: Redactor, level: int) -> None:
    hashes = "#" * min(level, 6)
    for msg, block in _headed(thread):
        new_block = block == "new"
        if block == "event" and msg.hooks:
            out += [_md_hook(run, redact) for run in msg.hooks] + [""]
            continue
        if block == "summary":
            text = redact(clean(msg.content))
            out += [
                f"<details><summary>{_summary_label(text)}</summary>",
                "",
                _md_text(text),
                "",
                "</details>",
                "",
            ]
            continue
        if msg.role == "system" or msg.entry_type == "system":
            if msg.content:
                out += [
                    f"*— {_md_inline(redact(clean(msg.subtype or 'system')))}: "
                    f"{_md_inline(redact(clean(msg.content))[:300])}*",
                    "",
                ]
            continue
        if new_block:
            when = clock(msg.timestamp)
            model = (
                f" · {_md_inline(redact(clean(msg.model)))}" if msg.model and msg.role == "assistant" else ""
            )
            withdrawn = msg.seq in thread.withdrawn  # as show and the viewer mark it
            if withdrawn and starts_withdrawn(msg.seq, thread.withdrawn):
                out += [f"*{WITHDRAWN_NOTE}*", ""]
            mark = f" · {WITHDRAWN_TAG}" if withdrawn else ""
            out += [f"{hashes} {_who(msg)}" + (f" · {when}" if when else "") + model + mark, ""]
        out += [_md_hook(run, redact) + "\n" for run in msg.hooks if run.before]
        parts = _parts(msg)
        if parts:
            _md_parts(out, parts, redact)
            out += [_md_hook(run, redact) + "\n" for run in msg.hooks if not run.before]
            continue
        if msg.thinking:
            out += [
                "<details><summary>Thinking</summary>",
                "",
                _fence(redact(clean(msg.thinking))),
                "",
                "</details>",
                "",
            ]
        if msg.content:
            out += [_md_text(redact(clean(msg.content)), typed=msg.role == "user"), ""]
        out += [f"*▣ {_md_inline(describe(_image(image, redact)))}*\n" for image in thread.own_images(msg)]
        for call in msg.tool_calls:
            _md_call(out, thread, call, redact, level)
        out += [_md_hook(run, redact) + "\n" for run in msg.hooks if not run.before]


def _md_parts(out: list[str], parts: list[Part], redact: Redactor) -> None:
    """Claude Code's markup in Markdown: a slash command as typed, a `!` command as shell code
    and its output fenced (closed, in a details block), a command's output and the caveat as
    quiet italic notes, IDE notes as chips (a selection's lines inside)."""
    for part in parts:
        if isinstance(part, (Selection, OpenedFile)):
            chip = f"{chip_mark(part)} {redact(clean(part.chip))}"
            if isinstance(part, Selection) and part.text:
                lang = _lexer_name(part.path)
                out += [
                    f"<details><summary>{_html_inline(chip)}</summary>",
                    "",
                    _fence(redact(clean(part.text)), lang),
                    "",
                    "</details>",
                    "",
                ]
            else:
                out += [f"*{_md_inline(chip)}*", ""]
        elif isinstance(part, Command):
            out += [f"**{_md_inline(redact(clean(part.line)))}**", ""]
        elif isinstance(part, Shell):
            out += ["**!** shell command", "", _fence(redact(clean(part.command)), "bash"), ""]
        elif isinstance(part, ShellOutput):
            if part.empty:
                out += ["*↳ (no output)*", ""]
                continue
            out += [f"<details><summary>Output · {_output_size(part)}</summary>", ""]
            if part.stdout.strip():
                out += [_fence(redact(clean(part.stdout.rstrip(chr(10)))), "text"), ""]
            if part.stderr.strip():
                out += ["stderr:", "", _fence(redact(clean(part.stderr.rstrip(chr(10)))), "text"), ""]
            out += ["</details>", ""]
        elif isinstance(part, CommandOutput):
            text = redact(clean(part.text.strip("\n")))
            if "\n" in text:
                out += ["↳", "", _fence(text, "text"), ""]
            elif text:
                out += [f"*↳ {_md_inline(text)}*", ""]
        elif isinstance(part, Caveat):
            out += [f"*{CAVEAT_NOTE}*", ""]
        else:
            out += [_md_text(redact(clean(part.text)), typed=True), ""]


def _output_size(part: ShellOutput) -> str:
    """`5 lines · stderr 1 line`."""
    sizes = []
    for label, text in (("", part.stdout), ("stderr ", part.stderr)):
        lines = len(text.rstrip("\n").splitlines())
        if text.strip():
            sizes.append(f"{label}{lines:,} line{'' if lines == 1 else 's'}")
    return " · ".join(sizes)


def _lexer_name(path: str) -> str:
    """The fence language of a file's lines, from its name (`.py` → python); none when unknown."""
    from pygments.lexers import get_lexer_for_filename
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_for_filename(path.replace("\\", "/").rsplit("/", 1)[-1])
    except (ClassNotFound, ValueError):
        return ""
    return lexer.aliases[0] if lexer.aliases else ""


def _hook_words(run: HookRun, redact: Redactor) -> tuple[str, str, str]:
    """(name, command, how it ended and how long it took) of a hook, masked and made safe."""
    name = redact(clean(run.name or run.event or "hook"))
    command = redact(clean(one_line(run.command, 200)))
    end = run.outcome + (f" · {hook_duration(run.duration_ms)}" if run.duration_ms is not None else "")
    return name, command, end


def _hook_said(run: HookRun, redact: Redactor) -> str:
    """What a hook said that a reader wants: its message, and its stderr when it failed."""
    said = run.message or (run.stderr if run.failed else "")
    return redact(clean(said.strip()))


def _md_hook(run: HookRun, redact: Redactor) -> str:
    name, command, end = _hook_words(run, redact)
    line = (
        f"*⚙ {_md_inline(name)} hook"
        + (f" · {_md_inline(command)}" if command else "")
        + f" · {_md_inline(end)}*"
    )
    said = _hook_said(run, redact)
    return line + (f" — {_md_inline(one_line(said, 300))}" if said else "")


def _md_todo(out: list[str], items: list[Todo], before: list[Todo] | None, redact: Redactor) -> None:
    """A TodoWrite list as a Markdown checklist, each item marked with what this write changed."""
    changes = todo_changes(before, items) if before else []
    kinds = {c.todo.content: c.kind for c in changes if c.kind != "removed"}
    out += [f"**☰ Todo list** · {todo_count(items)}", ""]
    for todo in items:
        text = _md_inline(redact(clean(todo.shown)))
        if todo.status == "completed":
            text = f"~~{text}~~"
        elif todo.status == "in_progress":
            text = f"◐ **{text}**"
        change = kinds.get(todo.content)
        out.append(
            f"- [{'x' if todo.status == 'completed' else ' '}] {text}" + (f" *({change})*" if change else "")
        )
    out += [
        f"- ~~{_md_inline(redact(clean(c.todo.content)))}~~ *(removed)*"
        for c in changes
        if c.kind == "removed"
    ]
    out.append("")


def _md_call(out: list[str], thread: Thread, call: ToolCall, redact: Redactor, level: int) -> None:
    call = _masked(call, redact)
    items = todos(call_params(call)) if tool_group(call.agent, call.name) == "todo" else None
    if items is not None and call.status != "failed":
        _md_todo(out, items, todo_before(redact.value(thread.extras.get(call.id))), redact)
        return
    mark = STATUS_MARK.get(call.status or "pending", "?")
    gist = _html_inline(redact(clean(tool_summary(call))))
    out += [f"<details><summary>{mark} <b>{_html_inline(clean(call.name))}</b> {gist}</summary>", ""]
    params = call_params(call)
    if is_edit(call.name, params, call.agent):
        out += [_fence("\n".join(row.text for row in _diff(thread, call, redact)), "diff"), ""]
    else:
        text, lang = _shown_input(call)
        out += ["**Input**", "", _fence(redact(clean(text)), lang), ""]
    output = _output(call)
    if output and not (is_edit(call.name, params, call.agent) and call.status == "completed"):
        out += ["**Output**", "", _fence(redact(clean(output))), ""]
    elif call.status is None or call.status == "pending":
        out += ["*(no result recorded)*", ""]
    out += [
        f"*▣ {_md_inline(describe(_image(image, redact)))}*\n"
        for _, image in thread.call_images.get(call.id, [])
    ]
    child = thread.children.get(call.id)
    if child is not None:
        out += [
            f"<details><summary>Subagent: {_html_inline(redact(clean(_title(child.session))))} "
            f"({count_of(len(child.messages), 'message')})</summary>",
            "",
        ]
        _md_messages(out, child, redact, level + 1)
        out += ["</details>", ""]
    out += ["</details>", ""]


# ---------------------------------------------------------------------------------------- HTML

CSS = """
:root { color-scheme: light dark; --bg: #fdfdfc; --fg: #1f2328; --dim: #667085; --line: #d0d7de;
  --user: #0b6bcb; --assistant: #1a7f37; --card: #f6f8fa; --add: #dafbe1; --del: #ffebe9; --fail: #cf222e;
  --cmd: #8250df; --warn: #9a6700; --chip: #eef1f5; --summary: #2f7f7f; }
@media (prefers-color-scheme: dark) { :root { --bg: #0d1117; --fg: #e6edf3; --dim: #8b949e; --line: #30363d;
  --user: #58a6ff; --assistant: #3fb950; --card: #161b22; --add: #12361f; --del: #3d1a1d; --fail: #f85149;
  --cmd: #d2a8ff; --warn: #d29922; --chip: #21262d; --summary: #87afaf; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 15px/1.55 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; }
main { max-width: 960px; margin: 0 auto; padding: 24px 20px 64px; }
h1 { font-size: 1.6em; margin: 0 0 12px; overflow-wrap: anywhere; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0 0 24px;
  color: var(--dim); font-size: .9em; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.msg { border-left: 3px solid var(--line); padding: 2px 0 2px 14px; margin: 18px 0; }
.msg.user { border-color: var(--user); } .msg.assistant { border-color: var(--assistant); }
.who { font-weight: 600; font-size: .9em; } .msg.user > .who { color: var(--user); }
.msg.assistant > .who { color: var(--assistant); } .who .when, .who .model { color: var(--dim); font-weight: 400; }
.system { color: var(--dim); font-size: .85em; font-style: italic; margin: 8px 0; }
.body { overflow-wrap: anywhere; } .body > :first-child { margin-top: 4px; } .body > :last-child { margin-bottom: 4px; }
pre { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px;
  white-space: pre-wrap; overflow-wrap: anywhere; font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .92em; }
table { border-collapse: collapse; } th, td { border: 1px solid var(--line); padding: 4px 8px; }
blockquote { margin: 0; padding-left: 12px; border-left: 3px solid var(--line); color: var(--dim); }
details { margin: 6px 0; } summary { cursor: pointer; }
details.tool { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 4px 10px; }
details.tool > summary { font: 13px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  overflow-wrap: anywhere; }
details.tool.failed > summary .mark { color: var(--fail); } .mark { color: var(--assistant); }
.label { color: var(--dim); font-size: .8em; text-transform: uppercase; letter-spacing: .04em; margin-top: 8px; }
details.thinking > summary, details.subagent > summary { color: var(--dim); font-size: .9em; }
details.summary { margin: 18px 0; } details.summary > summary { color: var(--summary); font-size: .9em; }
details.subagent { border-left: 2px dashed var(--line); padding-left: 12px; }
.diff { white-space: pre-wrap; } .diff .added { background: var(--add); display: block; }
.diff .removed { background: var(--del); display: block; } .diff .file { font-weight: 700; display: block; }
.diff .hunk { color: var(--dim); display: block; } .diff .context { display: block; }
footer { color: var(--dim); font-size: .8em; margin-top: 40px; }
.command { font: 600 14px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; color: var(--cmd); margin: 4px 0; }
.shell { display: flex; gap: 8px; align-items: baseline; } .shell pre { flex: 1; margin: 4px 0; }
.shell .bang { font: 700 15px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; color: var(--warn); }
details.shell-output { margin: 0 0 8px 18px; } details.shell-output > summary { color: var(--dim); font-size: .85em; }
details.shell-output pre { margin: 4px 0; } pre.stderr, .note.stderr .out { color: var(--fail); }
.note { color: var(--dim); font-size: .9em; margin: 2px 0 8px 18px; white-space: pre-wrap; overflow-wrap: anywhere; }
.chips { display: flex; flex-wrap: wrap; gap: 6px; margin: 6px 0; }
.chip { display: inline-block; background: var(--chip); border: 1px solid var(--line); border-radius: 10px;
  padding: 0 8px; font: 12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; color: var(--dim); }
details.chip[open] { display: block; border-radius: 6px; } details.chip > summary { list-style: none; }
.hook { color: var(--dim); font-size: .85em; margin: 4px 0; overflow-wrap: anywhere; }
.hook.failed { color: var(--warn); } .hook code { font-size: .95em; }
.hook pre { margin: 4px 0 4px 18px; padding: 6px 8px; font-size: 12px; }
.hook details.printed { display: inline-block; margin: 0 0 0 8px; vertical-align: top; }
.todo { border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px; margin: 6px 0; background: var(--card); }
.todo-head { font-weight: 600; font-size: .9em; } .todo ul { list-style: none; margin: 4px 0; padding: 0; }
.todo li { font-size: .92em; } .todo li.completed { color: var(--dim); text-decoration: line-through; }
.todo li.in_progress { font-weight: 600; color: var(--user); } .todo li.removed { color: var(--dim); text-decoration: line-through; }
.todo .change { font-size: .75em; color: var(--dim); border: 1px solid var(--line); border-radius: 8px; padding: 0 5px;
  text-decoration: none; display: inline-block; font-weight: 400; }
figure.image { margin: 8px 0; } figure.image img { max-width: 100%; max-height: 480px; border: 1px solid var(--line); }
figure.image figcaption { color: var(--dim); font-size: .8em; }
"""


class Render(Protocol):
    """Markdown → HTML (`_md_renderer`); `typed`: a person typed it (a prompt)."""

    def __call__(self, text: str, typed: bool = False) -> str: ...


def _md_renderer() -> Render:
    """Markdown → HTML with raw HTML off (so a log cannot inject tags), links markdown-it deems
    unsafe (javascript:, data: but images) refused, and fenced code highlighted by Pygments with
    inline styles (the page has no stylesheet to fetch). `typed`: what a person typed (a prompt),
    its backslashes and entities kept as typed, as `show` draws them (`render_markdown`)."""
    from markdown_it import MarkdownIt
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    formatter = HtmlFormatter(nowrap=True, noclasses=True, style="friendly")

    def highlighted(code: str, lang: str, _attrs: str) -> str:
        if not lang:
            return ""
        try:
            lexer = get_lexer_by_name(lang.split()[0])
        except ClassNotFound:
            return ""  # markdown-it escapes it plainly
        return f"<pre><code>{highlight(code, lexer, formatter)}</code></pre>"

    def as_typed(_renderer: object, tokens: list[Token], idx: int, _options: object, _env: object) -> str:
        return html.escape(tokens[idx].markup)  # an escape or an entity, as it was typed

    def parser(typed: bool) -> MarkdownIt:
        md = MarkdownIt("commonmark", {"html": False, "linkify": False, "highlight": highlighted})
        md.enable(["table", "strikethrough"])
        if typed:  # escapes and entities stay tokens of their own (`parser(typed=True)`)
            md.disable("text_join")
            md.add_render_rule("text_special", as_typed)
        return md

    written, typed_by_hand = parser(False), parser(True)

    def render(text: str, typed: bool = False) -> str:
        md = typed_by_hand if typed else written
        tokens = md.parse(typed_source(text) if typed else text)
        if too_deep(tokens, md.options.maxNesting):  # the parser left out what lies deeper
            return f"<pre>{html.escape(text)}</pre>"
        rendered: str = md.renderer.render(tokens, md.options, {})
        return rendered

    return render


def _html(conn: sqlite3.Connection, thread: Thread, redact: Redactor, stamp: str) -> str:
    render = _md_renderer()
    e = html.escape
    title = redact(clean(_title(thread.session)))
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        # no script, no fetch: the page is a document, whatever the log held
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(title)} · threadloom</title>",
        f"<style>{CSS}</style></head><body><main>",
        f"<h1>{e(title)}</h1>",
        '<dl class="facts">',
    ]
    parts += [f"<dt>{e(k)}</dt><dd>{e(redact(clean(v)))}</dd>" for k, v in _facts(thread, stamp)]
    parts.append("</dl>")

    def picture(entry_id: int, image: ImageRef) -> str:
        """An image embedded as a data URL, of the four types a browser is safe to be handed (its
        bytes decide, not the type the log declares); anything else named in a line."""
        loaded = images.load(conn, entry_id, image.index)
        caption = e(describe(_image(image, redact)))
        if loaded.note is not None:
            return f'<div class="system">▣ {caption} ({e(loaded.note)})</div>'
        url = f"data:{loaded.media_type};base64,{base64.b64encode(loaded.data).decode()}"
        return f'<figure class="image"><img src="{url}" alt="{caption}"><figcaption>{caption}</figcaption></figure>'

    _html_messages(parts, thread, redact, render, picture)
    parts.append(f"<footer>Exported {e(stamp)} by threadloom.</footer></main></body></html>")
    return "\n".join(parts) + "\n"


Picture = Callable[[int, ImageRef], str]


def _html_messages(
    parts: list[str], thread: Thread, redact: Redactor, render: Render, picture: Picture
) -> None:
    e = html.escape
    open_article = False
    for msg, block in _headed(thread):
        new_block = block == "new"
        if block in ("new", "note", "event", "summary") and open_article:
            parts.append("</article>")
            open_article = False
        if block == "event" and msg.hooks:
            parts += [_html_hook(run, redact) for run in msg.hooks]
            continue
        if block == "summary":
            text = redact(clean(msg.content))
            parts.append(
                f'<details class="summary"><summary>{_summary_label(text)}</summary>'
                f'<div class="body">{render(text)}</div></details>'
            )
            continue
        if block == "note":
            parts += [_html_hook(run, redact) for run in msg.hooks if run.before]
            _html_parts(parts, _parts(msg), redact, render)
            parts += [_html_hook(run, redact) for run in msg.hooks if not run.before]
            continue
        if msg.role == "system" or msg.entry_type == "system":
            if msg.content:
                parts.append(
                    f'<div class="system">— {e(redact(clean(msg.subtype or "system")))}: '
                    f"{e(redact(clean(msg.content))[:300])}</div>"
                )
            continue
        if new_block:
            role = msg.role if msg.role in ROLE_NAME else "other"
            head = f'<div class="who">{e(_who(msg))}'
            if msg.timestamp is not None:
                head += f' <span class="when">{e(clock(msg.timestamp))}</span>'
            if msg.model and msg.role == "assistant":
                head += f' <span class="model">{e(redact(clean(msg.model)))}</span>'
            if msg.seq in thread.withdrawn:  # as show and the viewer mark it
                if starts_withdrawn(msg.seq, thread.withdrawn):
                    parts.append(f'<div class="system">{e(WITHDRAWN_NOTE)}</div>')
                head += f' <span class="when">{e(WITHDRAWN_TAG)}</span>'
            parts.append(f'<article class="msg {role}">{head}</div>')
            open_article = True
        parts += [_html_hook(run, redact) for run in msg.hooks if run.before]
        markup_parts = _parts(msg)
        if markup_parts:
            _html_parts(parts, markup_parts, redact, render)
            parts += [_html_hook(run, redact) for run in msg.hooks if not run.before]
            continue
        if msg.thinking:
            parts.append(
                f'<details class="thinking"><summary>Thinking</summary><pre>{e(redact(clean(msg.thinking)))}</pre>'
                "</details>"
            )
        if msg.content:
            typed = msg.role == "user"
            parts.append(f'<div class="body">{render(redact(clean(msg.content)), typed=typed)}</div>')
        parts += [picture(msg.entry_id, image) for image in thread.own_images(msg)]
        for call in msg.tool_calls:
            _html_call(parts, thread, call, redact, render, picture)
        parts += [_html_hook(run, redact) for run in msg.hooks if not run.before]
    if open_article:
        parts.append("</article>")


def _html_parts(parts: list[str], markup_parts: list[Part], redact: Redactor, render: Render) -> None:
    """Claude Code's markup as HTML: a `!` command as a card (the command coloured as shell, its
    output closed beneath it, stderr apart, as preformatted text: never Markdown), a slash
    command as typed, a command's output and the caveat as quiet notes, IDE notes as chips (a
    selection opens on its lines)."""
    e = html.escape
    chips = [p for p in markup_parts if isinstance(p, (Selection, OpenedFile))]
    if chips:
        shown = []
        for chip in chips:
            label = f"{chip_mark(chip)} {e(redact(clean(chip.chip)))}"
            where = e(redact(clean(chip.path)))
            if isinstance(chip, Selection) and chip.text:
                code = render(_fence(redact(clean(chip.text)), _lexer_name(chip.path)))
                shown.append(
                    f'<details class="chip" title="{where}"><summary>{label}</summary>{code}</details>'
                )
            else:
                shown.append(f'<span class="chip" title="{where}">{label}</span>')
        parts.append(f'<div class="chips">{"".join(shown)}</div>')
    for part in markup_parts:
        if isinstance(part, Command):
            parts.append(f'<div class="command">{e(redact(clean(part.line)))}</div>')
        elif isinstance(part, Shell):
            command = render(_fence(redact(clean(part.command)), "bash"))
            parts.append(f'<div class="shell"><span class="bang">!</span>{command}</div>')
        elif isinstance(part, ShellOutput):
            if part.empty:
                parts.append('<div class="note">↳ (no output)</div>')
                continue
            body = ""
            if part.stdout.strip():
                body += f"<pre>{e(redact(clean(part.stdout.rstrip(chr(10)))))}</pre>"
            if part.stderr.strip():
                body += f'<pre class="stderr">{e(redact(clean(part.stderr.rstrip(chr(10)))))}</pre>'
            parts.append(
                f'<details class="shell-output"><summary>output · {e(_output_size(part))}</summary>{body}</details>'
            )
        elif isinstance(part, CommandOutput):
            text = redact(clean(part.text.strip("\n")))
            if text:
                kind = " stderr" if part.stream == "stderr" else ""
                parts.append(f'<div class="note{kind}">↳ <span class="out">{e(text)}</span></div>')
        elif isinstance(part, Caveat):
            parts.append(f'<div class="note">{e(CAVEAT_NOTE)}</div>')
        elif isinstance(part, Typed):
            parts.append(f'<div class="body">{render(redact(clean(part.text)), typed=True)}</div>')


def _html_hook(run: HookRun, redact: Redactor) -> str:
    """A hook as one quiet line (failed ones stand out), what it said and printed beneath."""
    e = html.escape
    name, command, end = _hook_words(run, redact)
    state = "failed" if run.failed else "ok"
    line = f'<div class="hook {state}">⚙ <b>{e(name)}</b> hook'
    if command:
        line += f" <code>{e(command)}</code>"
    line += f' <span class="end">{e(end)}</span>'
    said = _hook_said(run, redact)
    printed = redact(clean(run.stdout.strip())) if run.stdout.strip() else ""
    if said and run.failed:
        line += f'<pre class="said">{e(said)}</pre>'
    elif said:
        line += f' <span class="said">— {e(one_line(said, 300))}</span>'
    if printed and printed != said:
        line += f'<details class="printed"><summary>stdout</summary><pre>{e(printed)}</pre></details>'
    return line + "</div>"


def _html_todo(items: list[Todo], before: list[Todo] | None, redact: Redactor) -> str:
    """A TodoWrite list as a checklist (☐ ◐ ☑), each item marked with what this write changed."""
    e = html.escape
    changes = todo_changes(before, items) if before else []
    kinds = {c.todo.content: c.kind for c in changes if c.kind != "removed"}
    rows = []
    for todo in items:
        change = kinds.get(todo.content)
        badge = f' <span class="change">{e(change)}</span>' if change else ""
        rows.append(f'<li class="{e(todo.status)}">{todo.mark} {e(redact(clean(todo.shown)))}{badge}</li>')
    rows += [
        f'<li class="removed">{c.todo.mark} {e(redact(clean(c.todo.content)))} <span class="change">removed</span></li>'
        for c in changes
        if c.kind == "removed"
    ]
    return (
        f'<div class="todo"><div class="todo-head">☰ Todo list · {e(todo_count(items))}</div>'
        f"<ul>{''.join(rows)}</ul></div>"
    )


def _html_call(
    parts: list[str],
    thread: Thread,
    call: ToolCall,
    redact: Redactor,
    render: Render,
    picture: Picture,
) -> None:
    e = html.escape
    call = _masked(call, redact)
    items = todos(call_params(call)) if tool_group(call.agent, call.name) == "todo" else None
    if items is not None and call.status != "failed":
        parts.append(_html_todo(items, todo_before(redact.value(thread.extras.get(call.id))), redact))
        return
    status = call.status or "pending"
    mark = STATUS_MARK.get(status, "?")
    gist = redact(clean(tool_summary(call)))
    parts.append(
        f'<details class="tool {e(status)}"><summary><span class="mark">{mark}</span> '
        f"<b>{e(clean(call.name))}</b> {e(gist)}</summary>"
    )
    params = call_params(call)
    edit = is_edit(call.name, params, call.agent)
    if edit:
        rows = _diff(thread, call, redact)
        parts.append(f'<pre class="diff">{"".join(_diff_row(row) for row in rows)}</pre>')
    else:
        text, lang = _shown_input(call)
        parts.append('<div class="label">input</div>')
        parts.append(render(_fence(redact(clean(text)), lang)))
    output = _output(call)
    if output and not (edit and call.status == "completed"):
        parts.append('<div class="label">output</div>')
        parts.append(f"<pre>{e(redact(clean(output)))}</pre>")
    elif status == "pending":
        parts.append('<div class="label">no result recorded</div>')
    parts += [picture(entry_id, image) for entry_id, image in thread.call_images.get(call.id, [])]
    child = thread.children.get(call.id)
    if child is not None:
        parts.append(
            f'<details class="subagent" open><summary>Subagent: {e(redact(clean(_title(child.session))))} '
            f"· {count_of(len(child.messages), 'message')}</summary>"
        )
        _html_messages(parts, child, redact, render, picture)
        parts.append("</details>")
    parts.append("</details>")


def _diff_row(row: DiffLine) -> str:
    return f'<span class="{row.kind}">{html.escape(row.text) or "&nbsp;"}</span>'


# ---------------------------------------------------------------------------------------- JSON


def _json(conn: sqlite3.Connection, thread: Thread, redact: Redactor, stamp: str) -> bytes:
    data = {
        "threadloom_export": 1,
        "exported_at": stamp,
        **_json_thread(conn, thread, redact),
    }
    # orjson writes DEL, the C1 controls and the bidi controls as they are: a file `cat` shows to a
    # terminal would act on them (U+009B starts a CSI); as \uXXXX escapes a JSON reader reads the same
    return printable(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()).encode() + b"\n"


def _json_thread(conn: sqlite3.Connection, thread: Thread, redact: Redactor) -> dict[str, Any]:
    """The session, its branch and messages (every string masked on request, a call's input and
    output as decoded JSON), its raw records and its subagents'."""
    branch = thread.branch
    shown = redact.value(
        {
            "session": _session(thread, redact),
            "branch": None
            if branch is None
            else {
                "number": branch.number,
                "of": thread.branches,
                "label": branch.label,
                "active": branch.active,
            },
            "messages": [_json_message(m) for m in thread.messages],
        }
    )
    return {
        **shown,
        "records": _json_records(conn, thread, redact),
        "subagents": {
            call_id: _json_thread(conn, child, redact) for call_id, child in thread.children.items()
        },
    }


def _session(thread: Thread, redact: Redactor) -> dict[str, Any]:
    """The session's fields. Masked, its first prompt (which the archive keeps cut to 2,000
    characters) is cut again from its message masked whole: a secret the archive's cut split is no
    longer a stump that no pattern knows."""
    out = thread.session.as_dict()
    prompt = out.get("first_prompt")
    if redact.enabled and isinstance(prompt, str) and prompt:
        whole = next((m.content for m in thread.messages if m.content and m.content.startswith(prompt)), None)
        if whole is not None and len(whole) > len(prompt):
            out["first_prompt"] = redact(whole)[: len(prompt)]
    return out


def _json_message(msg: MessageRow) -> dict[str, Any]:
    return {
        "entry_id": msg.entry_id,
        "seq": msg.seq,
        "uuid": msg.uuid,
        "parent_uuid": msg.parent_uuid,
        "turn_id": msg.turn_id,
        "role": msg.role,
        "type": msg.entry_type,
        "subtype": msg.subtype,
        "timestamp": msg.timestamp,
        "model": msg.model,
        "is_meta": msg.is_meta,
        "is_sidechain": msg.is_sidechain,
        "content": msg.content,
        "thinking": msg.thinking,
        "tool_calls": [
            {
                "id": c.id,
                "name": c.name,
                "status": c.status,
                "input": c.params_json,
                "output": c.result_json,
                "started_at": c.started_at,
                "completed_at": c.completed_at,
                "child_session_id": c.child_session_id,
            }
            for c in msg.tool_calls
        ],
        "images": [i.as_dict() for i in msg.images],
        # Claude Code's markup read (`core.base.markup`): what the content's tags stand for, beside it
        "markup": described(msg.content) if msg.role == "user" else None,
        "hooks": [as_dict(h) for h in msg.hooks] or None,
    }


def _json_records(conn: sqlite3.Connection, thread: Thread, redact: Redactor) -> list[dict[str, Any]]:
    """The session's records byte for byte (as text, or base64 when not UTF-8): on a chosen branch,
    those of its messages and the records that are no message. Masked, a record is decoded and its
    strings masked (see `Redactor.json_text`); one with nothing to mask keeps its bytes."""
    keep = {m.seq for m in thread.messages} if thread.branch is not None else None
    out = []
    for entry_id, seq, line, raw, path in conn.execute(
        "SELECT e.id, e.seq, e.line_number, e.raw, f.path FROM entries e "
        "JOIN source_files f ON f.id = e.source_file_id WHERE e.session_id = ? "
        "ORDER BY e.source_file_id, e.byte_offset",
        (thread.session.id,),
    ):
        if keep is not None and seq is not None and seq not in keep:
            continue
        record: dict[str, Any] = {"entry_id": entry_id, "file": redact(path), "line": line}
        data = bytes(raw)
        try:
            record["raw"] = redact.json_text(data.decode())
        except UnicodeDecodeError:
            if redact.enabled:  # masked as text: a secret must not pass because its line is not UTF-8
                record["raw"], record["not_utf8"] = redact.json_text(data.decode(errors="replace")), True
            else:
                record["raw_base64"] = base64.b64encode(data).decode()
        out.append(record)
    return out
