"""Hostile input found by a sweep over every agent format: one odd file or row never stops an
ingest, never costs the other files their records, and is never blamed on threadloom's database.

Each test plants what a sweep of mutated logs turned up, next to a good source, and checks that
the run finishes cleanly with everything stored.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from threadloom.core import cli

from tests.builders.claude import Transcript


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def ingest_cli(db: Path, *sources: Path) -> tuple[int, str, str]:
    args = [a for s in sources for a in ("--source", str(s))]
    return run_cli("ingest", "--db", str(db), "--only", "-q", *args)


def statuses(db: Path) -> dict[str, tuple[str, str | None]]:
    conn = sqlite3.connect(db)
    try:
        return {
            Path(p).name: (s, e) for p, s, e in conn.execute("SELECT path, status, error FROM source_files")
        }
    finally:
        conn.close()


def good_claude_session(root: Path) -> Path:
    t = Transcript(
        root / "projects" / "-srv-app" / "aaaaaaaa-1111-4222-8333-000000000001.jsonl",
        "aaaaaaaa-1111-4222-8333-000000000001",
        cwd="/srv/app",
    )
    t.user("a good prompt")
    t.assistant("a good reply")
    t.write()
    return t.path


# ---------------------------------------------------------------------- discovery


def test_a_first_line_whose_type_is_an_object_does_not_stop_discovery(tmp_path):
    """Claude's and Codex's sniffers looked the `type` up in a set: an object there raised
    TypeError out of discovery and the whole ingest stopped with a traceback."""
    root = tmp_path / "logs"
    good = good_claude_session(root)
    odd = root / "exports"
    odd.mkdir()
    (odd / "notes.jsonl").write_text(json.dumps({"type": {"a": 1}, "uuid": "u", "message": {}}) + "\n")
    (odd / "other.jsonl").write_text(json.dumps({"type": ["session_meta"], "payload": {}}) + "\n")
    code, out, err = ingest_cli(tmp_path / "t.db", root)
    assert code == 0, err
    assert statuses(tmp_path / "t.db")[good.name] == ("ok", None)


# ---------------------------------------------------------------------- other programs' databases


def test_database_text_that_is_not_utf8_and_blob_keys_are_read(tmp_path):
    """SQLite never checks that TEXT is UTF-8. A Cursor, OpenCode or Amazon Q row holding such
    bytes stopped the whole ingest, which then called threadloom's own database damaged and told
    the user to rebuild it (which read the same row and failed again); an Amazon Q key stored as a
    BLOB left the database in error."""
    from tests.builders.amazon_q import pairs, state
    from tests.builders.cursor import install
    from tests.builders.opencode import make_db

    user, cursor = install(tmp_path / "cursor")
    cursor.execute(
        "INSERT INTO cursorDiskKV VALUES ('bubbleId:8c1f0e2a-1111-4222-8333-444455556666:bad', "
        "CAST(? AS TEXT))",
        (b'{"type":2,"bubbleId":"bad","text":"caf\xe9 \xff"}',),
    )
    cursor.commit()
    cursor.close()
    opencode = tmp_path / "oc" / "opencode.db"
    opencode.parent.mkdir()
    source = make_db(opencode)
    source.execute("UPDATE part SET session_id = CAST(? AS TEXT) WHERE rowid = 1", (b"ses_\xff\xfe",))
    source.commit()
    source.close()
    q = tmp_path / "q" / "data.sqlite3"
    q.parent.mkdir()
    source = sqlite3.connect(q)
    source.execute("CREATE TABLE conversations (key TEXT PRIMARY KEY, value TEXT)")
    source.execute("INSERT INTO conversations VALUES (?, ?)", (b"/home/dev/\xff", json.dumps(state(pairs()))))
    source.execute("INSERT INTO conversations VALUES (?, CAST(? AS TEXT))", ("/home/dev/other", b"\xc3"))
    source.commit()
    source.close()

    db = tmp_path / "t.db"
    code, out, err = ingest_cli(db, user, opencode, q)
    assert code == 0 and "damaged" not in err and "error" not in err, err
    assert set(statuses(db).values()) == {("ok", None)}
    conn = sqlite3.connect(db)
    stored = b"".join(
        bytes(r[0])
        for r in conn.execute(
            "SELECT raw FROM entries JOIN source_files f ON f.id = source_file_id WHERE f.path LIKE '%state.vscdb'"
        )
    )
    assert "caf\xe9 \xff".encode("latin-1") in stored  # the row's own bytes, not replaced
    assert conn.execute("SELECT count(*) FROM agent_sessions WHERE source = 'amazon-q'").fetchone()[0] >= 1
    code, out, err = run_cli("verify", "--db", str(db))
    assert code == 0, out + err


def test_a_source_database_of_another_layout_is_its_own_error_not_threadloom_s(tmp_path):
    """A `data.sqlite3` or `opencode.db` whose tables lack the columns read raised SQLite's
    OperationalError out of the run: nothing else was read, and the message blamed threadloom's
    database ("could not be used ... may be damaged: rebuild it")."""
    for name, tables in (
        ("data.sqlite3", "CREATE TABLE conversations (k TEXT, v TEXT)"),
        ("opencode.db", "CREATE TABLE session (x); CREATE TABLE message (y); CREATE TABLE part (z)"),
    ):
        source = sqlite3.connect(tmp_path / name)
        source.executescript(tables)
        source.close()
    root = tmp_path / "logs"
    good = good_claude_session(root)
    db = tmp_path / "t.db"
    code, out, err = ingest_cli(db, tmp_path / "data.sqlite3", tmp_path / "opencode.db", root)
    assert code == 0 and "damaged" not in err and "could not be used" not in err, err
    found = statuses(db)
    assert found[good.name] == ("ok", None)
    assert found["data.sqlite3"][0] == found["opencode.db"][0] == "error"
    assert "its database cannot be read (no such column" in found["data.sqlite3"][1]


# ---------------------------------------------------------------------- one odd value, one record


def unreadable(conn: sqlite3.Connection) -> list[str]:
    """The records an adapter failed on (kept raw, their meaning lost)."""
    return [
        r[0]
        for r in conn.execute("SELECT parse_error FROM entries WHERE parse_error LIKE '%reading it failed%'")
    ]


def test_claude_records_with_an_odd_block_type_or_a_side_chain_off_another_session_are_read(tmp_path):
    """A content block whose `type` is a number, an object or a list raised AttributeError, and a
    side-chain line whose parent sits in another session (the sessionId changed mid-file) raised
    IndexError: the whole record was kept raw only, its text and tool calls not shown."""
    from tests.builders.claude import tool_use

    sid = "aaaaaaaa-1111-4222-8333-000000000002"
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{sid}.jsonl", sid, cwd="/srv/app")
    t.user("first prompt")
    for n, odd in enumerate((3.5, {"a": 1}, ["text"], True)):
        t.assistant(f"reply {n}", tools=[tool_use(f"t{n}", "Bash", command="ls"), {"type": odd, "text": "x"}])
    parent = t.add(
        {
            "type": "user",
            "sessionId": "bbbbbbbb-1111-4222-8333-000000000003",
            "message": {"role": "user", "content": "asked in another session"},
        }
    )
    t.add(
        {"type": "user", "isSidechain": True, "message": {"role": "user", "content": "a side chain"}},
        parent=parent,
    )
    t.write()
    conn = sqlite3.connect(tmp_path / "t.db")
    code, out, err = ingest_cli(tmp_path / "t.db", tmp_path / "projects")
    assert code == 0, err
    assert unreadable(conn) == []
    shown = {r[0] for r in conn.execute("SELECT content FROM entries WHERE seq IS NOT NULL")}
    assert {"reply 0", "reply 1", "reply 2", "reply 3", "a side chain"} <= shown
    assert conn.execute("SELECT count(*) FROM agent_tool_calls").fetchone()[0] == 4


def test_a_codex_snapshot_item_nested_deep_or_with_a_huge_number_is_read(tmp_path):
    """The TypeScript-era snapshot keys each item by its JSON, written with orjson: an item nested
    deeper than orjson writes (254 levels) or holding an integer beyond 64 bits raised, and the
    item was kept raw only."""
    from tests.support import snapshot

    deep: object = "bottom"
    for _ in range(300):
        deep = {"a": deep}
    items = [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "deep one"}],
            "x": deep,
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "big one"}],
            "n": 2**80,
        },
    ]
    snapshot(tmp_path / "codex", "deep", items)
    conn = sqlite3.connect(tmp_path / "t.db")
    code, out, err = ingest_cli(tmp_path / "t.db", tmp_path / "codex")
    assert code == 0, err
    assert unreadable(conn) == []
    shown = {r[0] for r in conn.execute("SELECT content FROM entries WHERE seq IS NOT NULL")}
    assert {"deep one", "big one"} <= shown


# ---------------------------------------------------------------------- folders that cannot be read


def cli_as_a_user(*argv: str, home: Path) -> subprocess.CompletedProcess:
    """`threadloom ARGV` in a process that file permissions apply to: as root, without the powers
    that pass over them (root reads a folder of mode 000 as if it were open)."""
    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-m", "threadloom.core.cli", *argv]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: permissions cannot be made to apply")
        drop = "-dac_override,-dac_read_search"
        command = ["setpriv", f"--bounding-set={drop}", f"--inh-caps={drop}", "--", *command]
    env = {
        **os.environ,
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "PYTHONPATH": str(root),
    }
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, cwd=root)


@pytest.fixture
def locked(tmp_path: Path) -> Iterator[list[Path]]:
    """Folders made unreadable by a test; opened again afterwards so they can be removed."""
    folders: list[Path] = []
    yield folders
    for folder in folders:
        folder.chmod(0o755)


def test_a_remembered_source_that_became_unreadable_does_not_stop_every_ingest(tmp_path, locked):
    """Path.is_dir() raises PermissionError: a --source folder that could no longer be read (a
    remembered one, read again by every run) stopped every later ingest, of every other folder too."""
    old = tmp_path / "old-logs"
    good_claude_session(old)
    new = tmp_path / "new-logs"
    good = good_claude_session(new)
    db = tmp_path / "t.db"
    first = cli_as_a_user("ingest", "--db", str(db), "--source", str(old), home=tmp_path / "home")
    assert first.returncode == 0, first.stderr
    old.chmod(0)
    locked.append(old)
    run = cli_as_a_user("ingest", "--db", str(db), "--source", str(new), "--json", home=tmp_path / "home")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert any(str(old) in e and "Permission denied" in e for e in report["errors"]), report["errors"]
    assert str(new / "projects" / "-srv-app" / good.name) in {
        p for (p,) in sqlite3.connect(db).execute("SELECT path FROM source_files WHERE status = 'ok'")
    }


def test_a_folder_that_cannot_be_listed_is_reported_and_read_once_it_can_be(tmp_path, locked):
    """A folder under a source that could not be listed was passed over in silence: its sessions
    were missing with no error said, and once it could be read the folder snapshot kept it unread."""
    root = tmp_path / "logs"
    good_claude_session(root)
    hidden = Transcript(
        root / "projects" / "-srv-hidden" / "aaaaaaaa-1111-4222-8333-0000000000f0.jsonl",
        "aaaaaaaa-1111-4222-8333-0000000000f0",
    )
    hidden.user("in a folder that cannot be listed")
    hidden.write()
    folder = hidden.path.parent
    folder.chmod(0)
    locked.append(folder)
    db = tmp_path / "t.db"
    run = cli_as_a_user(
        "ingest", "--db", str(db), "--only", "--source", str(root), "--json", home=tmp_path / "home"
    )
    assert run.returncode == 0, run.stderr
    assert any(str(folder) in e and "Permission denied" in e for e in json.loads(run.stdout)["errors"]), (
        run.stdout
    )
    folder.chmod(0o755)  # mended as the error says: the next run reads it
    run = cli_as_a_user(
        "ingest", "--db", str(db), "--only", "--source", str(root), "--json", home=tmp_path / "home"
    )
    assert json.loads(run.stdout)["errors"] == []
    assert sqlite3.connect(db).execute(
        "SELECT count(*) FROM source_files WHERE path = ? AND status = 'ok'", (str(hidden.path),)
    ).fetchone() == (1,)


def test_files_in_a_folder_that_became_unreadable_are_not_called_gone(tmp_path, locked):
    """os.path.exists() says False for a file it may not look at: sessions whose folder was made
    unreadable were reported as "source files disappeared" and marked gone."""
    root = tmp_path / "logs"
    path = good_claude_session(root)
    db = tmp_path / "t.db"
    assert (
        cli_as_a_user(
            "ingest", "--db", str(db), "--only", "--source", str(root), home=tmp_path / "home"
        ).returncode
        == 0
    )
    other = Transcript(
        path.parent / "aaaaaaaa-1111-4222-8333-0000000000f1.jsonl", "aaaaaaaa-1111-4222-8333-0000000000f1"
    )
    other.user("a new session beside it: its folder is listed again")
    other.write()
    path.parent.chmod(0)
    locked.append(path.parent)
    run = cli_as_a_user(
        "ingest", "--db", str(db), "--only", "--source", str(root), "--json", home=tmp_path / "home"
    )
    report = json.loads(run.stdout)
    assert report["files_gone"] == 0 and any("Permission denied" in e for e in report["errors"]), run.stdout
    assert statuses(db)[path.name] == ("ok", None)


def test_odd_values_in_cursor_amazon_q_and_opencode_records_cost_nothing_else(tmp_path):
    """A number where Cursor keeps its subagents' ids or Amazon Q its tool calls raised TypeError, and
    an OpenCode part whose session id was 300 characters long raised OSError (file name too long):
    the whole record was kept raw only."""
    from tests.builders.amazon_q import prompt, response, save, state
    from tests.builders.cursor import COMPOSER, make_db, user_dir
    from tests.builders.opencode import message, session_obj, text, write_json

    cursor = user_dir(tmp_path / "cursor") / "globalStorage" / "state.vscdb"
    composer = {
        "composerId": COMPOSER,
        "name": "Odd children",
        "createdAt": 1760000000000,
        "subComposerIds": 5,
        "fullConversationHeadersOnly": [{"bubbleId": "u1", "type": 1}],
    }
    make_db(
        cursor,
        kv=[
            (f"composerData:{COMPOSER}", json.dumps(composer)),
            (f"bubbleId:{COMPOSER}:u1", json.dumps({"type": 1, "bubbleId": "u1", "text": "cursor prompt"})),
        ],
    ).close()
    q = save(
        tmp_path / "q" / "saved.json",
        state(
            [
                [
                    prompt("q prompt"),
                    {"ToolUse": {"message_id": "m1", "content": "q reply", "tool_uses": 1.5}},
                ],
                [prompt("thanks"), response("m2", "welcome")],
            ]
        ),
    )
    storage = tmp_path / "oc" / "storage"
    sid = "ses_" + "x" * 300
    write_json(storage / "session" / "p1" / "ses_a.json", session_obj("ses_a"))
    write_json(storage / "message" / "ses_a" / "msg_01.json", message("msg_01", "user", "ses_a"))
    write_json(storage / "part" / "msg_01" / "prt_01.json", text("prt_01", "msg_01", "opencode prompt", sid))
    write_json(
        storage / "part" / "msg_01" / "prt_02.json", text("prt_02", "msg_01", "escaping part", "../../..")
    )
    from tests.builders.cline import TASK, say, task_folder, write
    from tests.builders.cline import storage as cline_storage

    task_folder(tmp_path / "cline", ui=[say(1, "task", "cline prompt")])
    write(
        cline_storage(tmp_path / "cline") / "state" / "taskHistory.json",
        [
            {"id": "9" * 300, "ts": 1, "task": "a long id"},
            {"id": TASK, "ts": 1, "task": "cline prompt", "cwdOnTaskInitialization": "/work/cline"},
        ],
    )
    db = tmp_path / "t.db"
    code, out, err = ingest_cli(db, cursor, q, storage, cline_storage(tmp_path / "cline"))
    assert code == 0, err
    conn = sqlite3.connect(db)
    assert unreadable(conn) == []
    shown = {r[0] for r in conn.execute("SELECT content FROM entries WHERE content IS NOT NULL")}
    assert {"cursor prompt", "q reply", "opencode prompt", "escaping part", "cline prompt"} <= shown
    assert conn.execute("SELECT project_path FROM agent_sessions WHERE id = ?", (TASK,)).fetchone() == (
        "/work/cline",
    )


# ---------------------------------------------------------------------- what ingest prints


class Terminal(io.StringIO):
    """A stream that says it is a terminal, as stderr is when a person runs `threadloom ingest`."""

    def isatty(self) -> bool:
        return True


def test_the_progress_bar_shows_file_names_without_their_control_characters(tmp_path, monkeypatch):
    """A file under a --source named with escape sequences went into the progress bar as it was:
    the terminal's title was set and its screen cleared by a file name."""
    root = tmp_path / "logs"
    sid = "aaaaaaaa-1111-4222-8333-000000000009"
    t = Transcript(root / "projects" / "-srv-app" / f"\x1b]0;PWNED\x07\x1b[2J\x9b{sid}.jsonl", sid)
    for n in range(3000):  # long enough to read (a few tenths of a second) for the bar to be drawn meanwhile
        t.user(f"question {n} " + "words " * 400)
    t.write()
    out, err = Terminal(), Terminal()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    code = cli.main(["ingest", "--db", str(tmp_path / "t.db"), "--only", "--source", str(root)])
    written = out.getvalue() + err.getvalue()
    assert code == 0 and "PWNED" in written  # the name was shown
    assert "\x1b]0;PWNED" not in written and "\x1b[2J" not in written and "\x9b" not in written


def test_a_usual_folder_that_is_not_there_is_no_error(tmp_path):
    """Codex looks in `sessions` and `archived_sessions` of a CODEX_HOME: the one missing is not a
    folder that cannot be read."""
    from tests.support import full_session

    full_session(tmp_path / "codex-home").write()
    code, out, err = ingest_cli(tmp_path / "t.db", tmp_path / "codex-home")
    assert code == 0 and "error" not in err, err
    assert set(statuses(tmp_path / "t.db").values()) == {("ok", None)}


def test_a_session_id_longer_than_a_like_pattern_is_restored(tmp_path):
    """`restore` found a session's files with LIKE 'id:%': an id of 60,000 characters from a log is
    beyond SQLite's pattern limit, and the restore failed calling the database damaged."""
    sid = "s" * 60_000
    t = Transcript(tmp_path / "projects" / "-srv-app" / "aaaaaaaa-1111-4222-8333-000000000004.jsonl", sid)
    t.user("a prompt in a session with a very long id")
    t.write()
    good_claude_session(tmp_path)  # another session: its records are the ones LIKE is tried on
    db = tmp_path / "t.db"
    assert ingest_cli(db, tmp_path / "projects")[0] == 0
    code, out, err = run_cli("restore", "--db", str(db), "--to", str(tmp_path / "back"), "--", sid)
    assert code == 0, err
    assert (tmp_path / "back" / "-srv-app" / t.path.name).read_bytes() == t.path.read_bytes()


# ---------------------------------------------------------------------- files rewritten


def rewrite(path: Path, data: bytes) -> None:
    """The file's bytes replaced, its time moved on (an ingest then reads it again whole)."""
    path.write_bytes(data)
    later = path.stat().st_mtime + 10
    os.utime(path, (later, later))


def test_a_rewritten_line_a_summary_points_at_does_not_stop_every_ingest(tmp_path):
    """A summary's leaf uuid then named two records: the line as it now is, and as it was (kept,
    of no session). The summaries were sorted whole, the None of the one against the session id
    of the other: TypeError out of the ingest, a traceback on every later run."""
    sid = "aaaaaaaa-1111-4222-8333-000000000005"
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{sid}.jsonl", sid, cwd="/srv/app")
    t.user("a prompt")
    leaf = t.assistant("a reply")
    t.raw({"type": "summary", "summary": "The session's title", "leafUuid": leaf})
    t.write()
    db = tmp_path / "t.db"
    assert ingest_cli(db, tmp_path / "projects")[0] == 0
    t.lines[1]["message"]["content"][0]["text"] = "a reply, edited"
    rewrite(t.path, "\n".join(json.dumps(line) for line in t.lines).encode() + b"\n")
    code, out, err = ingest_cli(db, tmp_path / "projects")
    assert code == 0 and "Traceback" not in err, err
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT title FROM agent_sessions WHERE id = ?", (sid,)).fetchone() == (
        "The session's title",
    )
    assert run_cli("verify", "--db", str(db))[0] == 0


def test_a_line_that_lost_its_newline_in_a_rewrite_keeps_it_in_the_old_version(tmp_path):
    """A rewritten file's records whose bytes it still holds are taken back, placed anew: a line
    the old version ended with a newline and the new one ends the file without one took its
    newline with it, and the old version (`restore --as-of`) came back a byte short."""
    from threadloom.core.read import archive

    t = Transcript(
        tmp_path / "projects" / "-srv-app" / "aaaaaaaa-1111-4222-8333-000000000006.jsonl",
        "aaaaaaaa-1111-4222-8333-000000000006",
    )
    t.user("first")
    t.assistant("second")
    lines = [json.dumps(line).encode() for line in t.lines]
    old = lines[1] + b"\n" + lines[0] + b"\n" + lines[1]  # the last line duplicated at the top
    t.path.write_bytes(old)
    db_path = tmp_path / "t.db"
    assert ingest_cli(db_path, tmp_path / "projects")[0] == 0
    rewrite(t.path, lines[0] + b"\n" + lines[1])
    assert ingest_cli(db_path, tmp_path / "projects")[0] == 0
    conn = sqlite3.connect(db_path)
    (fid,) = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(t.path),)).fetchone()
    (version,) = archive.versions(conn, fid)
    assert archive.version_bytes(conn, version) == (old, True)
    assert archive.file_bytes(conn, fid) == (t.path.read_bytes(), True)


def test_a_file_whose_folder_became_a_file_is_gone_not_a_mismatch(tmp_path):
    """Reading a path through a file raises NotADirectoryError, not FileNotFoundError: `verify`
    called a session file whose folder had been replaced by a file unreadable, a mismatch (and
    failed), where a file gone is kept in the archive and reported as missing."""
    path = good_claude_session(tmp_path / "logs")
    db = tmp_path / "t.db"
    assert ingest_cli(db, tmp_path / "logs")[0] == 0
    folder = path.parent
    shutil.rmtree(folder)
    folder.write_text("a file where the folder was\n")
    code, out, err = run_cli("verify", "--db", str(db))
    assert code == 0 and "cannot read" not in out + err, out + err
    assert "1 file" in out or path.name in out, out


def test_a_document_its_adapter_fails_to_cut_is_still_kept_whole(tmp_path, monkeypatch):
    """An adapter that raises on a document's bytes (a bug, a shape nobody foresaw) left the file in
    error with none of its bytes stored: they are kept as they are, in pieces, each read as it can be."""
    from threadloom.core.adapters.gemini import GeminiAdapter
    from threadloom.core.store import db

    from tests.support import stored_bytes

    chat = (
        tmp_path
        / "ghome"
        / ".gemini"
        / "tmp"
        / "webshop"
        / "chats"
        / "session-2026-04-29T21-39-a1b2c3d4.json"
    )
    chat.parent.mkdir(parents=True)
    chat.write_text(
        json.dumps({"sessionId": "a1b2c3d4", "messages": [{"id": "u1", "type": "user", "content": "hi"}]})
    )
    os.utime(chat, (1_700_000_000, 1_700_000_000))  # long finished

    def broken(self, data):  # noqa: ANN001, ANN202 - the adapter's own signature
        raise RuntimeError("a shape nobody foresaw")

    monkeypatch.setattr(GeminiAdapter, "split", broken)
    monkeypatch.setattr(GeminiAdapter, "split_unfinished", broken)
    code, _, err = ingest_cli(tmp_path / "t.db", tmp_path / "ghome" / ".gemini")
    conn = db.connect(tmp_path / "t.db")
    try:
        assert stored_bytes(conn, chat) == chat.read_bytes(), err
    finally:
        conn.close()
    assert statuses(tmp_path / "t.db")[chat.name][0] != "error"
