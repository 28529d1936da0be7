"""What `show` prints around a session's messages: who says what (a header for an assistant
message holding only calls), drawn the same by Rich and by the plain console."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

from rich.console import Console
from threadloom.core.cli.show import _TrimmedLines
from threadloom.core.present.render import PlainConsole, render_session
from threadloom.core.read.query import resolve_session

from tests.builders.claude import Transcript, tool_use
from tests.support import ingest

SID = "5e5e5e5e-0000-4000-8000-00000000a0a0"


def shown(conn: sqlite3.Connection, session_id: str = SID, width: int = 100) -> str:
    """`show` piped, drawn by Rich and by the plain console: the two must agree."""
    drawn = []
    for plain in (False, True):
        out = io.StringIO()
        lines = _TrimmedLines(out)
        rich = Console(highlight=False, width=width, height=25, file=lines)  # type: ignore[arg-type]
        console = PlainConsole(rich) if plain else rich
        render_session(console, conn, resolve_session(conn, session_id))  # type: ignore[arg-type]
        if isinstance(console, PlainConsole):
            console.flush()
        lines.close()
        drawn.append(out.getvalue())
    assert drawn[0] == drawn[1]
    return drawn[0]


def transcript(tmp_path: Path) -> Transcript:
    return Transcript(tmp_path / "projects" / "-srv-app" / f"{SID}.jsonl", SID, cwd="/srv/app")


def test_an_assistant_message_of_calls_alone_has_its_header(conn: sqlite3.Connection, tmp_path: Path) -> None:
    """Calls made without a word (or after an empty thinking block) are the assistant's, not drawn
    under the prompt; the later lines of one response stay under its one header."""
    t = transcript(tmp_path)
    t.user("check the tree")
    t.assistant(msg_id="msg_A", thinking="")
    t.assistant(msg_id="msg_A", tools=[tool_use("c1", "Bash", command="git status")])
    t.tool_result("c1", "clean")
    t.assistant("Clean. Now the log.", msg_id="msg_B")
    t.assistant(msg_id="msg_B", tools=[tool_use("c2", "Bash", command="git log -1")])
    t.tool_result("c2", "abc fix")
    t.assistant(msg_id="msg_B", tools=[tool_use("c3", "Bash", command="git diff")])
    t.tool_result("c3", "")
    t.write()
    ingest(conn, tmp_path / "projects")
    lines = [line.strip() for line in shown(conn).splitlines() if line.strip()]
    heads = [i for i, line in enumerate(lines) if line.startswith("assistant ")]
    prompt = lines.index("check the tree")
    status = next(i for i, line in enumerate(lines) if "git status" in line)
    assert prompt < heads[0] < status  # the first call under a header of its own
    assert len(heads) == 2  # msg_B's calls go on under its header
    assert heads[1] < next(i for i, line in enumerate(lines) if "git log -1" in line)


def test_images_beside_an_ide_note_are_listed(conn: sqlite3.Connection, tmp_path: Path) -> None:
    """A prompt holding an IDE selection, two pasted images and the words typed: its images are
    listed (`▣`) as those of a plain prompt are."""
    t = transcript(tmp_path)
    png = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    selection = (
        "<ide_selection>The user selected the lines 1 to 2 from /srv/app/a.py:\nx = 1\n\n"
        "This may or may not be related to the current task.</ide_selection>"
    )
    content = [{"type": "text", "text": selection}, png, png, {"type": "text", "text": "what is wrong here?"}]
    t.add({"type": "user", "message": {"role": "user", "content": content}})
    t.assistant("The colours.")
    # compact, as Claude Code writes its lines (the image marker is looked for in those bytes)
    t.path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in t.lines))
    ingest(conn, tmp_path / "projects")
    out = shown(conn)
    assert "[§ a.py:1-2]" in out and "what is wrong here?" in out
    assert out.count("▣ image/png") == 2


def test_a_rewind_is_marked_where_the_later_branch_starts(conn: sqlite3.Connection, tmp_path: Path) -> None:
    """Two prompts answering the same message (the user went back and asked again): the second
    starts a new branch, marked as the viewer marks it, not read on as one conversation."""
    t = transcript(tmp_path)
    t.user("Start")
    ready = t.assistant("Ready")
    t.user("First attempt")
    t.assistant("First answer")
    t.user("Second attempt", parent=ready)
    t.assistant("Second answer")
    t.user("Keep going")
    t.assistant("Kept going")
    t.write()
    ingest(conn, tmp_path / "projects")
    lines = [line.strip() for line in shown(conn).splitlines() if line.strip()]
    (mark,) = [i for i, line in enumerate(lines) if "↶ rewound" in line]
    assert lines[mark] == "── ↶ rewound: a new branch starts here, from an earlier message ──"
    assert (
        lines.index("First answer") < mark < lines.index("Second attempt") == mark + 2
    )  # its header between
    assert lines[mark + 1].startswith("user ")


def test_a_stop_hook_is_printed_once(conn: sqlite3.Connection, tmp_path: Path) -> None:
    """Claude Code 2.1 records a Stop hook twice, as its attachment and in the stop_hook_summary
    after it (the same toolUseID): one line says it ran; a summary of hooks not recorded otherwise
    is still printed."""
    from tests.builders.claude import hook

    t = transcript(tmp_path)
    t.user("tidy up")
    t.assistant("Tidied.")
    command = '"${CLAUDE_PLUGIN_ROOT}/scripts/notify.cmd" actor idle'
    hook(t, "hook_success", "Stop", toolUseID="stop-1", exitCode=0, command=command, durationMs=102)
    for tool_use_id, said in (("stop-1", command), ("stop-2", "./scripts/other.sh")):
        t.add(
            {
                "type": "system",
                "subtype": "stop_hook_summary",
                "toolUseID": tool_use_id,
                "hookCount": 1,
                "hookInfos": [{"command": said, "durationMs": 102}],
                "hookErrors": [],
                "preventedContinuation": False,
            }
        )
    t.write()
    ingest(conn, tmp_path / "projects")
    out = shown(conn)
    assert out.count("notify.cmd") == 1 and "exit 0 · 102 ms" in out
    assert out.count("other.sh") == 1
    # told once by the read API, so the viewer (which reads it) draws it once too
    from threadloom.core.read import query

    commands = [run.command for m in query.messages(conn, SID) for run in m.hooks]
    assert commands.count(command) == 1 and commands.count("./scripts/other.sh") == 1


def test_a_prompt_prints_its_backslashes_as_typed(conn: sqlite3.Connection, tmp_path: Path) -> None:
    """A Windows path in a prompt printed as `C:\\Users\\me.gemini`: Markdown took `\\.` for an
    escape. A prompt is printed as typed, by Rich and the plain console alike; the assistant's
    Markdown as Markdown."""
    t = transcript(tmp_path)
    t.user("look in C:\\Users\\me\\.gemini\\tmp for *.json")
    t.assistant("It holds C:\\Users\\me\\.gemini\\tmp\\*.json")
    t.write()
    ingest(conn, tmp_path / "projects")
    lines = [line.strip() for line in shown(conn).splitlines() if line.strip()]
    assert "look in C:\\Users\\me\\.gemini\\tmp for *.json" in lines
    assert "It holds C:\\Users\\me.gemini\\tmp*.json" in lines
