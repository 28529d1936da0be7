"""Finding inside one session (`core.read.find`): text, thinking, tool input and output, any case, in
the order the viewer shows them; the prompts and the failed calls the viewer jumps between."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from threadloom.core.read import browse
from threadloom.core.read.find import Place, failed_calls, find_in_session, prompt_seqs, session_segments

from tests.conftest import Transcript, ingest, tool_use

SID = "f1f1f1f1-0000-4000-8000-00000000f1f1"


def session(root: Path) -> Path:
    t = Transcript(root / "proj" / f"{SID}.jsonl", SID)
    t.user("The ParseConfig tests fail since Monday")  # 0
    t.assistant("Looking at parseconfig first.", thinking="Maybe PARSECONFIG reads the wrong file.")  # 1
    t.assistant(tools=[tool_use("toolu_grep", "Bash", command="grep -rn parseConfig src")])  # 2
    t.tool_result("toolu_grep", "src/config.py:12: def load_settings(path)")  # 3
    t.assistant(tools=[tool_use("toolu_read", "Read", file_path="src/ui.py")])  # 4
    t.tool_result("toolu_read", "TITLE = 'Überschrift der Seite'", is_error=True)  # 5
    t.add(
        {
            "type": "user",
            "isMeta": True,
            "message": {"role": "user", "content": "Caveat: the messages below were local commands"},
        }
    )  # 6
    # two calls made in one record, their results in one record: each call is checked on its own
    t.assistant(
        tools=[
            tool_use("toolu_ls", "Bash", command="ls src"),
            tool_use("toolu_cat", "Bash", command="cat src/config.py"),
        ]
    )  # 7
    t.add(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_ls", "content": "config.py ui.py"},
                    {"type": "tool_result", "tool_use_id": "toolu_cat", "content": "RETRIES = 3 # flaky"},
                ],
            },
        }
    )  # 8
    before = t.last
    t.add(
        {
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "logicalParentUuid": before,
            "level": "info",
            "compactMetadata": {"trigger": "auto", "preTokens": 150000},
        },
        parent=False,
    )  # 9
    t.add(
        {
            "type": "user",
            "isCompactSummary": True,
            "message": {"role": "user", "content": "Summary: the user asked to retry ParseConfig"},
        }
    )  # 10: not a prompt
    t.user("Now make it retry")  # 11
    t.assistant("Done: it retries three times.")  # 12
    return t.write().parent.parent


def opened(conn: sqlite3.Connection, tmp_path: Path) -> sqlite3.Connection:
    ingest(conn, session(tmp_path / "logs"))
    return conn


def seq_of(conn: sqlite3.Connection, text: str) -> int:
    (seq,) = conn.execute(
        "SELECT seq FROM entries WHERE session_id = ? AND content = ?", (SID, text)
    ).fetchone()
    return int(seq)


def call_seq(conn: sqlite3.Connection, call_id: str) -> int:
    (seq,) = conn.execute(
        "SELECT e.seq FROM agent_tool_calls c JOIN entries e ON e.id = c.entry_id WHERE c.id = ?", (call_id,)
    ).fetchone()
    return int(seq)


def test_text_thinking_and_tool_input_any_case_in_reading_order(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    opened(conn, tmp_path)
    found = find_in_session(conn, SID, "parseCONFIG")
    assert [(p.part, p.call_id) for p in found] == [
        ("text", None),  # the prompt
        ("text", None),  # the reply
        ("thinking", None),  # the reply's thinking, after its text as the viewer draws them
        ("tool", "toolu_grep"),  # the command that greps for it
        ("text", None),  # the compaction's summary
    ]
    prompt = seq_of(conn, "The ParseConfig tests fail since Monday")
    reply = seq_of(conn, "Looking at parseconfig first.")
    summary = seq_of(conn, "Summary: the user asked to retry ParseConfig")
    assert [p.seq for p in found] == [prompt, reply, reply, call_seq(conn, "toolu_grep"), summary]
    assert prompt < reply < found[3].seq < summary


def test_a_match_in_a_tools_output_is_the_call_that_made_it(conn: sqlite3.Connection, tmp_path: Path) -> None:
    opened(conn, tmp_path)
    found = find_in_session(conn, SID, "LOAD_SETTINGS")
    assert found == [Place(call_seq(conn, "toolu_grep"), found[0].entry_id, "tool", "toolu_grep")]
    # in the input and in the output alike: each call is one place
    assert [p.call_id for p in find_in_session(conn, SID, "SRC")] == [
        "toolu_grep",
        "toolu_read",
        "toolu_ls",
        "toolu_cat",
    ]


def test_calls_sharing_a_record_are_told_apart(conn: sqlite3.Connection, tmp_path: Path) -> None:
    opened(conn, tmp_path)
    assert [p.call_id for p in find_in_session(conn, SID, "flaky")] == ["toolu_cat"]
    assert [p.call_id for p in find_in_session(conn, SID, "ls src")] == ["toolu_ls"]


def test_letters_beyond_ascii_match_in_any_case(conn: sqlite3.Connection, tmp_path: Path) -> None:
    opened(conn, tmp_path)
    assert [p.call_id for p in find_in_session(conn, SID, "ÜBERSCHRIFT")] == ["toolu_read"]
    assert [p.call_id for p in find_in_session(conn, SID, "überschrift")] == ["toolu_read"]


def test_nothing_found_and_nothing_asked(conn: sqlite3.Connection, tmp_path: Path) -> None:
    opened(conn, tmp_path)
    assert find_in_session(conn, SID, "kubernetes") == []
    assert find_in_session(conn, SID, "   ") == []
    assert find_in_session(conn, "no-such-session", "config") == []


def test_prompts_are_what_the_user_typed(conn: sqlite3.Connection, tmp_path: Path) -> None:
    opened(conn, tmp_path)
    assert prompt_seqs(conn, SID) == [
        seq_of(conn, "The ParseConfig tests fail since Monday"),
        seq_of(conn, "Now make it retry"),
    ]  # not the tool results, not the meta caveat


def test_segments_of_a_compacted_session_and_none_read_for_the_others(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    opened(conn, tmp_path)
    count = browse.get_node(conn, SID).message_count  # type: ignore[union-attr]
    segments = session_segments(conn, SID, count)
    assert [(s.number, s.start_seq, s.end_seq, s.pre_tokens) for s in segments] == [
        (1, 0, seq_of(conn, "Conversation compacted") - 1, None),
        (2, seq_of(conn, "Conversation compacted"), count - 1, 150000),
    ]
    assert segments == browse.compaction_segments(conn, SID, count)
    other = "f1f1f1f1-0000-4000-8000-0000000000aa"
    t = Transcript(tmp_path / "more" / "proj" / f"{other}.jsonl", other)
    t.user("hello")
    t.assistant("hi")
    ingest(conn, t.write().parent.parent)
    assert session_segments(conn, other, 2) == []


def test_a_codex_compaction_starts_a_segment_too(conn: sqlite3.Connection, tmp_path: Path) -> None:
    """Codex marks a compaction with a `compacted` item, not Claude Code's boundary: its session
    is cut into segments there as well (without a token count: Codex records none)."""
    from tests.support import THREAD, Rollout

    r = Rollout(tmp_path / "codex", THREAD)
    r.meta()
    r.prompt("port the parser")
    r.say("Ported the lexer")
    r.add("compacted", {"message": "We ported the lexer.", "replacement_history": []})
    r.prompt("now the parser proper")
    r.say("Done")
    r.write()
    ingest(conn, tmp_path / "codex")
    count = browse.get_node(conn, THREAD).message_count  # type: ignore[union-attr]
    cut = conn.execute(
        "SELECT seq FROM entries WHERE session_id = ? AND entry_type = 'compacted'", (THREAD,)
    ).fetchone()[0]
    assert cut is not None and 0 < cut < count
    segments = session_segments(conn, THREAD, count)
    assert [(s.number, s.start_seq, s.end_seq, s.pre_tokens) for s in segments] == [
        (1, 0, cut - 1, None),
        (2, cut, count - 1, None),
    ]


def test_failed_calls_in_order(conn: sqlite3.Connection, tmp_path: Path) -> None:
    opened(conn, tmp_path)
    failed = failed_calls(conn, SID)
    assert [(p.part, p.call_id, p.seq) for p in failed] == [
        ("tool", "toolu_read", call_seq(conn, "toolu_read"))
    ]


def test_a_long_session_answers_every_match(conn: sqlite3.Connection, tmp_path: Path) -> None:
    """2,000 messages: every tenth turn's output holds the word; each is found once, in order."""
    sid = "f1f1f1f1-0000-4000-8000-0000000002cc"
    t = Transcript(tmp_path / "logs" / "proj" / f"{sid}.jsonl", sid)
    for turn in range(500):
        t.user(f"step {turn}")
        t.assistant(tools=[tool_use(f"toolu_{turn:04d}", "Bash", command=f"make step{turn}")])
        t.tool_result(f"toolu_{turn:04d}", "Segfault in worker" if turn % 10 == 3 else "ok")
        t.assistant(f"Step {turn} done.")
    ingest(conn, t.write().parent.parent)
    assert browse.get_node(conn, sid) is not None and browse.get_node(conn, sid).message_count == 2000  # type: ignore[union-attr]
    found = find_in_session(conn, sid, "segfault")
    assert [p.call_id for p in found] == [f"toolu_{turn:04d}" for turn in range(3, 500, 10)]
    assert [p.seq for p in found] == sorted(p.seq for p in found)
    assert len(find_in_session(conn, sid, "STEP")) == 1500  # prompts, replies, and each call's input
    assert len(prompt_seqs(conn, sid)) == 500


def test_prompts_leave_out_commands_output_and_notes(conn: sqlite3.Connection, tmp_path: Path) -> None:
    """`{` and `}` stop at what the user typed: the prompt under its IDE selection, the `!` command,
    the last prompt; not `/context` (bare), `/model opus`'s output, the `!` command's output, the
    caveat, nor an empty command output."""
    from tests.conftest import markup_session

    t = markup_session(tmp_path)
    ingest(conn, tmp_path / "projects")
    texts = [
        conn.execute(
            "SELECT content FROM entries WHERE session_id = ? AND seq = ?", (t.session_id, seq)
        ).fetchone()[0]
        for seq in prompt_seqs(conn, t.session_id)
    ]
    assert [text.split(">", 1)[0] if text.startswith("<") else text for text in texts] == [
        "<command-name",  # /model opus: a command given with its argument
        "<ide_selection",
        "<bash-input",
        "Fix it and run the tests again.",
    ]
