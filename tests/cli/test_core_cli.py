"""The command line as a user runs it: real processes, real files, JSON outputs."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from threadloom.core.store import db

from tests.builders.claude import Transcript, tool_use
from tests.support import SID, ingest_into, make_archive, run


def test_ingest_sessions_show_json(tmp_path):
    projects = make_archive(tmp_path)
    dbfile = tmp_path / "cli.db"
    res = run("ingest", "--db", str(dbfile), "--only", "--source", str(projects), "--json")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert {
        k: report[k]
        for k in ("files_seen", "files_skipped", "files_read", "records_added", "sessions", "errors")
    } == {
        "files_seen": 1,
        "files_skipped": 0,
        "files_read": 1,
        "records_added": 4,
        "sessions": 1,
        "errors": [],
    }
    assert report["bytes_read"] == (projects / "-srv-api" / f"{SID}.jsonl").stat().st_size
    again = json.loads(run("ingest", "--db", str(dbfile), "--json").stdout)
    assert (again["files_skipped"], again["files_read"], again["bytes_read"]) == (
        1,
        0,
        0,
    )  # the source is remembered

    sessions = json.loads(run("--db", str(dbfile), "sessions", "--json").stdout)  # --db before the command
    assert len(sessions) == 1
    s = sessions[0]
    for key in (
        "id",
        "agent",
        "project",
        "project_path",
        "title",
        "started_at",
        "ended_at",
        "message_count",
        "is_subagent",
        "parent_session_id",
        "model",
        "input_tokens",
        "output_tokens",
        "cache_creation_tokens",
        "cache_read_tokens",
    ):
        assert key in s
    assert (s["id"], s["agent"], s["project"], s["title"], s["message_count"], s["input_tokens"]) == (
        SID,
        "claude-code",
        "api",
        "Add a health endpoint",
        4,
        22,
    )

    table = run("sessions", "--db", str(dbfile))  # piped: nothing is cut to a terminal's width
    assert table.returncode == 0
    header, line = table.stdout.splitlines()[:2]
    assert header.split() == ["id", "when", "project", "title", "msgs", "tokens", "cost", "model"]
    assert (
        line.startswith(SID[:13]) and " api " in line and "Add a health endpoint" in line and "…" not in line
    )

    shown = run("show", "--db", str(dbfile), SID[:8])
    assert shown.returncode == 0
    assert (
        "Add a health endpoint" in shown.stdout
        and "▸ Write" in shown.stdout
        and "/srv/api/health.py" in shown.stdout
    )
    missing = run("show", "--db", str(dbfile), "zzzz")
    assert missing.returncode == 1 and "no session matches" in missing.stderr


def test_verify_and_restore(tmp_path):
    projects = make_archive(tmp_path)
    dbfile = tmp_path / "cli.db"
    ingest_into(dbfile, projects)  # the subject is verify and restore: the archive made in process
    ok = run("verify", "--db", str(dbfile))
    assert ok.returncode == 0 and "all stored bytes match" in ok.stdout
    source = projects / "-srv-api" / f"{SID}.jsonl"
    original = source.read_bytes()
    source.write_bytes(original.replace(b"Adding it", b"ADDING IT"))
    bad = run("verify", "--db", str(dbfile), "--json")
    assert bad.returncode == 1 and "line 2" in json.loads(bad.stdout)["mismatches"][0]
    res = run("restore", "--db", str(dbfile), SID, "--to", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "out" / "-srv-api" / f"{SID}.jsonl").read_bytes() == original
    again = run("restore", "--db", str(dbfile), SID, "--to", str(tmp_path / "out"))  # the same bytes: fine
    assert again.returncode == 0 and "already there, the same bytes" in again.stdout
    (tmp_path / "out" / "-srv-api" / f"{SID}.jsonl").write_bytes(b"mine")
    other = run("restore", "--db", str(dbfile), SID, "--to", str(tmp_path / "out"))
    assert other.returncode == 1 and "never overwrites" in other.stderr
    assert (tmp_path / "out" / "-srv-api" / f"{SID}.jsonl").read_bytes() == b"mine"


def test_verify_names_the_files_that_vanished_and_how_to_get_them_back(tmp_path):
    """`verify` counted the sources no longer on disk ("1 sources no longer on disk") and named
    none of them: which session is only in the archive now, and how is it written back?"""
    projects = make_archive(tmp_path)
    dbfile = str(tmp_path / "cli.db")
    ingest_into(dbfile, projects)  # the subject is verify: the archive made in process
    gone = projects / "-srv-api" / f"{SID}.jsonl"
    gone.unlink()
    res = run("verify", "--db", dbfile)
    assert res.returncode == 0, res.stderr
    assert "1 source no longer on disk (kept in the archive):" in res.stdout
    assert f"  gone: {gone}  session {SID[:13]}: threadloom restore {SID[:13]} --to DIR" in res.stdout
    data = json.loads(run("verify", "--db", dbfile, "--json").stdout)
    assert data["files_missing"] == 1 and data["missing"] == [{"path": str(gone), "sessions": [SID]}]
    restored = run("restore", "--db", dbfile, SID[:13], "--to", str(tmp_path / "back"))
    assert restored.returncode == 0 and (tmp_path / "back" / "-srv-api" / f"{SID}.jsonl").exists()


def test_restore_from_chooses_among_a_session_s_copies(tmp_path):
    """A session read from two places that hold the same file (the agent's folder and an older
    backup given with --source): restore refuses to pick one, naming the copies and `--from`, and
    `--from` (a copy's path, or the folder it was read from) chooses which is written."""
    projects = make_archive(tmp_path)
    live = projects / "-srv-api" / f"{SID}.jsonl"
    backup = tmp_path / "backup" / "projects"
    older = backup / "-srv-api" / f"{SID}.jsonl"
    older.parent.mkdir(parents=True)
    older.write_bytes(b"".join(live.read_bytes().splitlines(keepends=True)[:2]))
    dbfile = tmp_path / "cli.db"
    res = run(
        "ingest", "--db", str(dbfile), "--only", "--source", str(projects), "--source", str(backup), "--json"
    )
    assert res.returncode == 0 and json.loads(res.stdout)["sessions_total"] == 1, res.stderr
    out = tmp_path / "out"
    refused = run("restore", "--db", str(dbfile), SID, "--to", str(out))
    assert refused.returncode == 1
    assert str(live) in refused.stderr and str(older) in refused.stderr and "--from PATH" in refused.stderr
    assert not out.exists()
    chose_backup = run(
        "restore", "--db", str(dbfile), SID, "--to", str(out / "a"), "--from", str(tmp_path / "backup")
    )
    assert chose_backup.returncode == 0, chose_backup.stderr
    assert (out / "a" / "-srv-api" / f"{SID}.jsonl").read_bytes() == older.read_bytes()
    chose_live = run("restore", "--db", str(dbfile), SID, "--to", str(out / "b"), "--from", str(live))
    assert chose_live.returncode == 0, chose_live.stderr
    assert (out / "b" / "-srv-api" / f"{SID}.jsonl").read_bytes() == live.read_bytes()
    elsewhere = run(
        "restore", "--db", str(dbfile), SID, "--to", str(out / "c"), "--from", str(tmp_path / "nowhere")
    )
    assert elsewhere.returncode == 1 and "no file of the session was read from there" in elsewhere.stderr
    assert not (out / "c").exists()


def test_database_file_is_private_and_pragmas_set(tmp_path):
    conn = db.connect(tmp_path / "p.db")
    assert stat.S_IMODE(os.stat(tmp_path / "p.db").st_mode) == 0o600
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == db.BUSY_TIMEOUT_MS
    assert conn.execute("PRAGMA user_version").fetchone()[0] == db.SCHEMA_VERSION
    cols = {r[1] for r in conn.execute("PRAGMA table_info(entries)")}
    assert {
        "id",
        "source_file_id",
        "byte_offset",
        "line_number",
        "raw",
        "hash",
        "entry_type",
        "uuid",
        "parent_uuid",
        "logical_parent_uuid",
        "session_id",
        "agent_id",
        "timestamp",
        "is_sidechain",
        "is_meta",
        "role",
        "content",
    } <= cols
    cols = {r[1] for r in conn.execute("PRAGMA table_info(source_files)")}
    assert {
        "id",
        "path",
        "agent",
        "size",
        "mtime_ns",
        "bytes_ingested",
        "content_hash",
        "status",
        "error",
        "ingested_at",
    } <= cols


def test_corrupt_database_names_rebuild(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(
        b"\x00\xffthis is definitely not sqlite" * 100
    )  # binary, as damage leaves (text is a note)
    res = run("sessions", "--db", str(bad))
    assert res.returncode == 1 and "--rebuild" in res.stderr and "Traceback" not in res.stderr
    projects = make_archive(tmp_path)
    res = run("ingest", "--db", str(bad), "--rebuild", "--only", "--source", str(projects), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["records_added"] == 4
    assert list(tmp_path.glob("bad.db.*.bak"))


def test_locked_database_gets_a_clear_message(tmp_path, monkeypatch, capsys):
    dbfile = tmp_path / "locked.db"
    db.connect(dbfile).close()
    holder = sqlite3.connect(dbfile, isolation_level=None)
    holder.execute("PRAGMA journal_mode = DELETE")
    holder.execute("BEGIN EXCLUSIVE")
    monkeypatch.setattr(db, "BUSY_TIMEOUT_MS", 200)
    projects = make_archive(tmp_path)
    from threadloom.core.cli import main

    try:
        code = main(["ingest", "--db", str(dbfile), "--only", "--source", str(projects), "--json"])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert code == 1
    assert "locked by another process" in capsys.readouterr().err


def test_database_locked_in_the_middle_of_an_ingest(tmp_path, monkeypatch, capsys):
    dbfile = tmp_path / "busy.db"
    db.connect(dbfile).close()
    monkeypatch.setattr(db, "BUSY_TIMEOUT_MS", 100)
    projects = make_archive(tmp_path)
    holder = sqlite3.connect(dbfile, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the WAL write lock; readers still work
    from threadloom.core.cli import main

    try:
        code = main(["ingest", "--db", str(dbfile), "--only", "--source", str(projects), "--json"])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert code == 1
    err = capsys.readouterr().err
    assert "locked by another process" in err and "Traceback" not in err


def test_help_answers_questions():
    res = run("--help")
    assert res.returncode == 0
    for word in (
        "ingest",
        "sessions",
        "show",
        "verify",
        "restore",
        "--demo",
        "THREADLOOM_DB",
        "CLAUDE_CONFIG_DIR",
    ):
        assert word in res.stdout
    assert "--rebuild" in run("ingest", "--help").stdout
    assert "--db, else $THREADLOOM_DB" in res.stdout  # the order that applies: --db wins
    for command in (
        "ingest",
        "index",
        "sessions",
        "show",
        "search",
        "fork",
        "resume",
        "verify",
        "restore",
        "sources",
    ):
        text = run(command, "--help").stdout
        usage_end = text.index("\n\n")
        description = text[usage_end : text.index("options:")].strip()
        assert description and not description.startswith("positional"), command  # says what it does
        if "[--json]" in text:  # and what --json prints
            assert re.search(r"^  --json +\S", text, re.M), command


def test_a_subagent_is_shown_by_the_id_the_sessions_list_gives_it(tmp_path):
    from threadloom.core.adapters.claude_demo import write_demo_archive

    root = write_demo_archive(tmp_path / "demo", long_turns=3)
    dbp = str(tmp_path / "t.db")
    ingest_into(dbp, root)
    listed = run("--db", dbp, "sessions").stdout.splitlines()
    ids = [line.split()[0] for line in listed[1:] if "↳" in line]
    assert len(ids) >= 3 and len(set(ids)) == len(ids)  # each subagent's own, whole
    for sub in ids:
        shown = run("--db", dbp, "show", sub, "--no-subagents")
        assert shown.returncode == 0, shown.stderr
        assert f":{sub}" in shown.stdout.replace("\n", "")


def test_the_console_script_opens_the_tui_but_core_alone_does_not(tmp_path, monkeypatch, capsys):
    import threadloom.tui.app
    from threadloom.core.cli import main
    from threadloom.tui import entry

    assert main(["--db", str(tmp_path / "x.db")]) == 2 and "threadloom` command" in capsys.readouterr().err
    opened = []
    monkeypatch.setattr(threadloom.tui.app, "run_app", lambda **kw: opened.append(kw) or 0)
    assert entry.main(["--db", str(tmp_path / "x.db"), "--no-ingest"]) == 0
    assert opened == [
        {"db_path": tmp_path / "x.db", "sources": [], "demo": False, "ingest": False, "open_session": None}
    ]


def test_new_databases_get_the_schema_the_sqlmodel_classes_compile_to(tmp_path):
    # schema.sql is what a new ledger is created from (no SQLModel import on a first launch)
    assert db.SCHEMA_FILE.read_text() == db.fresh_schema(), (
        "core/schema.sql is stale: run `python -m threadloom.core.store.db`"
    )
    fast = db.connect(tmp_path / "fast.db")
    slow = sqlite3.connect(tmp_path / "slow.db")
    slow.isolation_level = None
    db._create_tables(slow, drop_derived=False)
    slow.execute(f"PRAGMA user_version = {db.SCHEMA_VERSION}")

    def schema(conn):
        return sorted(
            (t, n, " ".join((sql or "").split()))
            for t, n, sql in conn.execute("SELECT type, name, sql FROM sqlite_master")
        )

    assert schema(fast) == schema(slow) and len(schema(fast)) > 30
    assert db.user_version(fast) == db.SCHEMA_VERSION
    # and creating one in a fresh process never imports SQLModel or SQLAlchemy
    code = (
        "import sys; from core.store import db; db.connect(sys.argv[1]); "
        "print(sorted(m for m in sys.modules if m.startswith(('sqlmodel', 'sqlalchemy')))[:3])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "third.db")],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.stdout.strip() == "[]"


def test_show_prints_no_escape_sequences_that_tools_left_in_the_log(tmp_path):
    from tests.builders.claude import ansi_session

    ansi_session(tmp_path)
    dbp = str(tmp_path / "t.db")
    ingest_into(dbp, tmp_path / "projects")
    out = run("--db", dbp, "show", "eeeeeeee").stdout  # piped
    assert "\x1b" not in out and "\x07" not in out
    assert "PostToolUse:Edit" in out and "Done: 12 passed." in out


def test_show_prints_a_background_tasks_notification_as_a_notice(tmp_path):
    from tests.builders.claude import notice_session

    notice_session(tmp_path)
    dbp = str(tmp_path / "t.db")
    ingest_into(dbp, tmp_path / "projects")
    out = run("--db", dbp, "show", "eeeeeeee").stdout
    assert "<task-notification>" not in out and "<summary>" not in out
    assert "background task" in out and 'Agent "Coverage analysis" completed\n' in out
    assert "(completed)" not in out  # the summary says it already
    assert "Coverage is now 96%." in out
    assert not [
        line for line in out.splitlines() if line.endswith(" ")
    ]  # piped lines end where their text does


def test_show_prints_aider_edit_blocks_as_diffs(tmp_path):
    from tests.builders.aider import AIDER_EDITS

    folder = tmp_path / "parser-project"
    folder.mkdir()
    (folder / ".aider.chat.history.md").write_text(AIDER_EDITS)
    dbp = str(tmp_path / "t.db")
    ingest_into(dbp, tmp_path)
    listed = json.loads(run("--db", dbp, "sessions", "--json").stdout)
    sid = next(s["id"] for s in listed if s["message_count"])
    out = run("--db", dbp, "show", sid).stdout
    assert "<<<<<<< SEARCH" not in out and "=======" not in out and "```" not in out
    assert "  parser.py\n" in out and "  -    for i in range(len(out) - 1):\n" in out
    assert "  +    for i in range(len(out)):\n" in out and "  +# Tokenizer\n" in out
    assert "\n\n  Both edits are small." in out  # set apart from the diff above it


def test_a_command_on_an_older_database_says_it_is_upgrading_before_the_wait(tmp_path):
    projects = make_archive(tmp_path)
    path = tmp_path / "t.db"
    ingest_into(path, projects)  # the subject is the command after it
    old = sqlite3.connect(path)
    old.execute(f"PRAGMA user_version = {db.SCHEMA_VERSION - 1}")
    old.close()
    proc = run("sessions", "--db", str(path))
    assert proc.returncode == 0 and SID[:8] in proc.stdout
    assert "rebuilt from the stored records, once" in proc.stderr
    assert db.stored_version(path) == db.SCHEMA_VERSION
    assert "rebuilt" not in run("sessions", "--db", str(path)).stderr  # once


def test_show_prints_a_huge_message_in_part_and_json_all_of_it_with_the_thinking(tmp_path):
    root = tmp_path / "projects"
    t = Transcript(root / "-srv-api" / f"{SID}.jsonl", SID, cwd="/srv/api")
    t.user("paste: " + "x" * 1_000_000)  # one line of a megabyte (Rich wraps one long line slowly)
    t.assistant("Seen.", thinking="a pelican weighs the paste")
    t.write()
    path = tmp_path / "t.db"
    ingest_into(path, root)
    shown = run("show", SID[:8], "--db", str(path))
    assert shown.returncode == 0 and "Seen." in shown.stdout
    assert "… 900,007 more characters (show --json prints all of it)" in shown.stdout
    assert len(shown.stdout) < 200_000
    whole = json.loads(run("show", SID[:8], "--db", str(path), "--json").stdout)
    assert any(len(m.get("content") or "") == 1_000_007 for m in whole["messages"])
    # the thinking `show` prints is in its JSON too (it was left out)
    assert "(thinking)" in shown.stdout and "a pelican weighs the paste" in shown.stdout
    assert [m["thinking"] for m in whole["messages"]] == [None, "a pelican weighs the paste"]


def test_sessions_prints_ids_that_show_takes_back_unambiguously(tmp_path: Path) -> None:
    """Ids sharing their first 13 characters (aider's all do) are printed as long as they must be."""
    twins = ["dddddddd-1111-4222-8333-00000000aa01", "dddddddd-1111-4222-8333-00000000aa02"]
    for sid in [*twins, "eeeeeeee-1111-4222-8333-000000000001"]:
        t = Transcript(tmp_path / "projects" / "-home-dev-app" / f"{sid}.jsonl", sid)
        t.user(f"question of {sid[-4:]}")
        t.assistant("answer")
        t.write()
    dbfile = str(tmp_path / "ids.db")
    ingest_into(dbfile, tmp_path / "projects")
    listed = run("sessions", "--db", dbfile).stdout.splitlines()[1:]
    printed = sorted(line.split()[0] for line in listed)
    assert printed == [*twins, "eeeeeeee-1111"]  # the twins whole, the other at the usual 13
    for shown, full in zip(printed, [*twins, "eeeeeeee-1111-4222-8333-000000000001"], strict=True):
        res = run("show", shown, "--db", dbfile)
        assert res.returncode == 0, res.stderr
        assert f"question of {full[-4:]}" in res.stdout


MARKDOWN_ANSWER = (
    "## The plan\n\n"
    "Rename **every** caller of `load()`:\n\n"
    "1. the reader\n2. the writer\n\n"
    "| file | calls |\n|---|--:|\n| io.py | 3 |\n\n"
    "```python\ndef load(path):\n    return open(path).read()\n```\n\n"
    "> See [the notes](https://example.com/notes).\n\n"
    "# Title \x9b2J\x07end"  # controls without an escape sequence: rendered, drawn visibly
)


def test_show_renders_markdown_and_as_written_prints_its_source(tmp_path):
    sid = "dddddddd-1111-4222-8333-00000000d0c5"
    t = Transcript(tmp_path / "projects" / "-srv-md" / f"{sid}.jsonl", sid, cwd="/srv/md")
    t.user("Plan the *rename*, please")
    t.assistant(MARKDOWN_ANSWER)
    t.write()
    dbfile = tmp_path / "md.db"
    ingest_into(dbfile, tmp_path / "projects")

    rendered = run("show", "--db", str(dbfile), sid[:8])
    assert rendered.returncode == 0, rendered.stderr
    out = rendered.stdout
    lines = [line.strip() for line in out.splitlines()]
    assert "The plan" in lines and "## The plan" not in out  # the heading, without its hashes
    assert "Rename every caller of load():" in lines and "**" not in out and "`" not in out
    assert "1. the reader" in lines and "2. the writer" in lines
    assert any(line.split() == ["io.py", "3"] for line in lines) and "|---|" not in out
    assert "▏ def load(path):" in lines and "```" not in out
    assert "▎ See the notes (https://example.com/notes)." in lines
    assert "Plan the rename, please" in lines  # the user's text too
    assert "Title \\u009b2J␇end" in lines  # what a terminal acts on, drawn as text
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", out)

    written = run("show", "--db", str(dbfile), sid[:8], "--as-written")
    assert written.returncode == 0, written.stderr
    source = written.stdout
    for line in ("## The plan", "Rename **every** caller of `load()`:", "| file | calls |", "```python"):
        assert line in source, line
    assert "Plan the *rename*, please" in source
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", source)


def _three_sessions(tmp_path: Path) -> tuple[str, dict[str, str]]:
    """alpha: oldest, short; beta: most messages, longest; gamma: newest, most tokens."""
    ids = {
        "alpha": "a1a1a1a1-1111-4222-8333-000000000001",
        "beta": "b2b2b2b2-1111-4222-8333-000000000002",
        "gamma": "c3c3c3c3-1111-4222-8333-000000000003",
    }
    for name, start, turns, tokens in (("alpha", 0, 1, 10), ("beta", 100, 4, 20), ("gamma", 300, 1, 90_000)):
        t = Transcript(tmp_path / "projects" / "-home-dev-app" / f"{ids[name]}.jsonl", ids[name])
        t.n = start  # each record a second after the one before: where the session starts in time
        for turn in range(turns):
            t.user(f"{name} question {turn}")
            t.assistant("answer", usage={"input_tokens": tokens, "output_tokens": 5})
        t.write()
    dbfile = str(tmp_path / "three.db")
    ingest_into(dbfile, tmp_path / "projects")
    return dbfile, ids


def test_sessions_sort_orders_the_table_and_the_json(tmp_path: Path) -> None:
    dbfile, ids = _three_sessions(tmp_path)
    by_id = {sid: name for name, sid in ids.items()}
    expected = {
        "recent": ["gamma", "beta", "alpha"],
        "oldest": ["alpha", "beta", "gamma"],
        "messages": ["beta", "gamma", "alpha"],  # 8, then 2 and 2 newest first
        "tokens": ["gamma", "beta", "alpha"],
        "duration": ["beta", "gamma", "alpha"],  # 7 s, then 1 s and 1 s newest first
    }
    for order, names in expected.items():
        listed = json.loads(run("sessions", "--db", dbfile, "--sort", order, "--json").stdout)
        assert [by_id[s["id"]] for s in listed] == names, order
        table = run("sessions", "--db", dbfile, "--sort", order).stdout.splitlines()[1:]
        assert [line.split()[0] for line in table] == [ids[n][:13] for n in names], order
    bad = run("sessions", "--db", dbfile, "--sort", "size")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_sessions_wide_prints_every_column_whole_and_json_carries_the_same(tmp_path: Path) -> None:
    dbfile, ids = _three_sessions(tmp_path)
    out = run("sessions", "--db", dbfile, "--wide", "--sort", "oldest").stdout.splitlines()
    header = re.split(r"\s{2,}", out[0].strip())
    assert header == [
        "id", "agent", "project", "branch", "started", "last activity", "msgs", "input", "output",
        "cache write", "cache read", "cost", "duration", "model", "title", "file",
    ]  # fmt: skip
    gamma = re.split(r"\s{2,}", out[3].strip())
    path = tmp_path / "projects" / "-home-dev-app" / f"{ids['gamma']}.jsonl"
    assert gamma[:3] == [ids["gamma"], "claude-code", "app"]  # the whole id, never cut
    assert gamma[3] == "main"  # the git branch
    assert re.fullmatch(r"01 Mar (\d\d:\d\d|\d{4})", gamma[4]) and gamma[5] == gamma[4]  # one minute
    assert gamma[6:9] == ["2", "90,000", "5"] and gamma[12] == "1s"
    assert gamma[-2:] == ["gamma question 0", str(path)]
    assert all(len(line) == len(line.rstrip()) for line in out)  # no padding to a terminal's width
    listed = json.loads(run("sessions", "--db", dbfile, "--json", "--sort", "oldest").stdout)
    g = listed[2]
    assert (g["id"], g["git_branch"], g["file_path"], g["duration_ms"], g["input_tokens"]) == (
        ids["gamma"],
        "main",
        str(path),
        1000,
        90_000,
    )
    assert g["first_prompt"] == "gamma question 0" and {"started_at", "ended_at", "cost_usd"} <= set(g)


def test_a_folder_name_with_a_newline_keeps_each_session_on_one_line(tmp_path: Path) -> None:
    """A session's folder comes from its log: a newline in it broke the row of `sessions` in two."""
    sid = "abcdef01-2345-4678-9abc-def012345678"
    t = Transcript(tmp_path / "projects" / "-srv-odd" / f"{sid}.jsonl", sid, cwd="/srv/odd\nname\there")
    t.user("hello")
    t.assistant("hi")
    t.write()
    dbfile = str(tmp_path / "t.db")
    ingest_into(dbfile, tmp_path / "projects")
    listed = run("sessions", "--db", dbfile).stdout.splitlines()
    assert len(listed) == 2 and "odd name here" in listed[1]
    wide = run("sessions", "--db", dbfile, "--wide").stdout.splitlines()
    assert len(wide) == 2 and "odd␊name␉here" in wide[1] and sid in wide[1]


def test_an_empty_answer_says_why_and_a_filter_that_cannot_be_honoured_stops(tmp_path, capsys):
    """Nothing listed because of the filters is not "no sessions yet"; a date that is no date, an
    unknown signal or a reversed range stops with exit 2 (a script would otherwise get the whole
    archive); a phrase left open is read to the end, and said."""
    from threadloom.core.cli import main

    projects = make_archive(tmp_path)
    dbp = str(tmp_path / "t.db")
    assert main(["ingest", "--db", dbp, "--source", str(projects), "--only", "--quiet"]) == 0
    capsys.readouterr()

    def said(*args: str) -> tuple[int, str]:
        code = main([*args, "--db", dbp])
        return code, capsys.readouterr().err.strip()

    assert said("sessions", "--project", "nosuch") == (
        0,
        "no sessions match --project nosuch: leave one out to see more",
    )
    assert said("stats", "--agent", "codex") == (
        0,
        "no sessions match --agent codex: leave one out to see more",
    )
    code, err = said("stats", "--agent", "nosuch")  # no agent's name: which there are
    assert code == 2 and "--agent nosuch: no agent is called 'nosuch': give one of claude-code," in err
    code, err = said("stats", "--since", "2026-05-01", "--until", "2026-04-01")
    assert code == 2 and "--since 2026-05-01 is after --until 2026-04-01" in err
    for query, problem in (
        ("after:2026-13-01 health", "after:2026-13-01 is not a date"),
        ("signal:retry health", "signal:retry is not known (retry-loop"),
        ("in:nowhere health", "in:nowhere is not known"),
    ):
        code, err = said("search", query)
        assert (
            code == 2
            and problem in err
            and err.endswith("nothing searched: mend the filter, or leave it out")
        )
    code = main(["search", '"health endpoint', "--db", dbp, "--json"])
    captured = capsys.readouterr()
    assert code == 0 and 'a " was not closed' in captured.err
    assert [h["session_id"] for h in json.loads(captured.out)] == [SID]
    # nothing found: said in a line, with no table of headings over nothing
    assert main(["search", "xylophone", "--db", dbp, "--mode", "words"]) == 0
    out = capsys.readouterr().out
    assert "nothing like 'xylophone'" in out and "no hits (" in out and "snippet" not in out


def test_the_ids_stats_and_search_print_are_the_ones_show_takes_back(tmp_path, capsys):
    """Aider's session ids share a long prefix (its history file's): stats by session and search
    print each id as `sessions` does, long enough to name one session, whole when a subagent's."""
    from threadloom.core.cli import main
    from threadloom.core.read import query

    from tests.builders.aider import SESSION_1, SESSION_2, history

    history(tmp_path / "proj", SESSION_1 + SESSION_2)
    dbp = str(tmp_path / "t.db")
    assert main(["ingest", "--db", dbp, "--source", str(tmp_path / "proj"), "--only", "--quiet"]) == 0
    capsys.readouterr()
    conn = db.connect(Path(dbp))
    ids = sorted(query.values(conn, "SELECT id FROM agent_sessions"))
    assert len(ids) >= 2 and len({i[:13] for i in ids}) == 1

    assert main(["stats", "--by", "session", "--db", dbp]) == 0
    printed = [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:-1]]
    named = [query.resolve_session(conn, p).id for p in printed]
    assert len(named) >= 2 and len(set(named)) == len(named) and set(named) <= set(ids)

    assert main(["search", "tokenizer", "--db", dbp]) == 0
    out = capsys.readouterr().out
    (shown,) = [line.strip() for line in out.splitlines() if line.strip().startswith("aider:")]
    assert query.resolve_session(conn, shown).id in ids and "Fix the tokenizer" in out


def test_piped_tables_carry_no_padding(tmp_path):
    """Piped, nothing is cut (for grep) and no line ends in the spaces that pad it to the table's
    width (its last column's: the model's, the changed lines')."""
    dbp = str(tmp_path / "t.db")
    t = Transcript(tmp_path / "projects" / "-srv-x" / f"{SID}.jsonl", SID)
    t.user("a title that is long " * 8)
    t.assistant("ok")
    t.write()
    t = Transcript(
        tmp_path / "projects" / "-srv-x" / "dddddddd-1111-4222-8333-000000000002.jsonl",
        "dddddddd-1111-4222-8333-000000000002",
    )
    t.user("short")
    t.assistant("ok")
    t.write()
    ingest_into(dbp, tmp_path / "projects")
    for command in (["sessions"], ["stats"]):
        lines = run("--db", dbp, *command, env_extra={"COLUMNS": "1000"}).stdout.splitlines()
        assert len(lines) >= 2 and all(line == line.rstrip() for line in lines), command
    listed = run("--db", dbp, "sessions", env_extra={"COLUMNS": "1000"}).stdout.splitlines()
    assert "a title that is long " * 3 in listed[1] + listed[2]  # piped: not cut


def test_show_draws_claude_codes_markup_for_what_it_is(tmp_path):
    """`!` commands with their output as the terminal showed it, slash commands as typed, command
    output and caveats as notes, IDE chips, TodoWrite as a checklist, hooks; no tag, no escape."""
    from tests.builders.claude import markup_session

    markup_session(tmp_path)
    dbp = str(tmp_path / "t.db")
    ingest_into(dbp, tmp_path / "projects")
    out = run("--db", dbp, "show", "eeeeeeee").stdout
    assert not any(tag in out for tag in ("<bash-", "<command-", "<local-command", "<ide_"))
    # the hook's stderr holds a window-title sequence: its words shown, the sequence never sent
    assert "\x1b" not in out and "\x07" not in out and "notify: no display" in out
    lines = out.splitlines()

    def at(text: str) -> int:  # below the header (whose title is the first prompt, `/model opus`)
        return next(n for n, line in enumerate(lines) if text in line and n > 2)

    assert lines[at("/model opus") - 1].startswith("user ")
    assert "↳ Set model to opus (claude-opus-4-7)" in lines[at("/model opus") + 1]
    assert not lines[at("local commands follow") - 1].startswith("user")  # the caveat is no turn
    assert "[§ split.py:12-14]" in lines[at("Why does the tokenizer") - 1]
    bang = at("! uv run pytest -q tests/test_split.py")
    assert lines[bang + 1 : bang + 3] == ["    F....", "    === FAILURES ==="]  # not a Markdown heading
    assert "1 failed, 4 passed in 0.12s" in lines[bang + 5] and "warning: no coverage" in lines[bang + 6]
    context = at("/context")
    assert lines[context + 1 : context + 3] == ["", "user 2026-03-01 10:00"]  # its empty output: nothing
    todo = at("1 of 4 done · ◐ Fixing the loop bound")
    assert [line.strip() for line in lines[todo + 1 : todo + 4]] == [
        "☑ Reproduce the dropped token",
        "◐ Fixing the loop bound",
        "+ ☐ Run the whole suite",
    ]
    assert "⚙ SessionStart:startup hook  ./scripts/notify.sh started  exit 0 · 1.2 s" in out
    assert "⚙ PostToolUse:TodoWrite hook  ./scripts/notify.sh todo  exit 1 · 75 ms" in out
    assert "⚙ PreToolUse:Bash hook  ./scripts/guard.sh  blocked" in out and "rm -rf is not allowed" in out
    assert "⚙ Stop hook  ./scripts/notify.sh idle  ran · 102 ms" in out
    data = json.loads(run("--db", dbp, "show", "eeeeeeee", "--json").stdout)
    bang = next(m for m in data["messages"] if (m["content"] or "").startswith("<bash-input>"))
    assert bang["markup"] == [{"kind": "shell", "command": "uv run pytest -q tests/test_split.py"}]
    first = data["messages"][0]
    assert first["markup"][0]["kind"] == "caveat" and first["hooks"][0]["kind"] == "hook_success"
    assert first["hooks"][0]["before"] is True and first["hooks"][0]["duration_ms"] == 1203
    # every reply has its label, the empty thinking blocks before them notwithstanding, and one
    # of a call alone too (msg_tok_2's TodoWrite)
    assert [line.split()[0] for line in lines if line.startswith(("user ", "assistant "))].count(
        "assistant"
    ) == 4


def test_the_parser_built_for_one_command_reads_and_helps_as_the_whole_one():
    """`main` builds only the command it runs in full (the others by name and help line): each
    command's help, the top level's, and what a command line parses to are those of the whole
    parser."""
    import argparse
    import contextlib
    import io

    import pytest
    from threadloom.core import cli

    def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices

    whole = cli.build_parser()
    names = sorted(subcommands(whole))
    assert {"ingest", "memory", "hide", "resume", "open"} <= set(names)
    assert cli.build_parser(only="").format_help() == whole.format_help()
    for name in names:
        alone = cli.build_parser(only=name)
        assert subcommands(alone)[name].format_help() == subcommands(whole)[name].format_help(), name
        others = [n for n in names if n not in (name, "open")]
        assert all(not subcommands(alone)[n]._actions for n in others), name  # only listed
    lines = [
        ["ingest", "--rebuild", "-q", "--source", "a", "--source", "b"],
        ["--db", "x.db", "sessions", "--json", "--sort", "tokens"],
        ["memory", "add", "--kind", "fact", "--title", "t", "body"],
        ["search", "a", "b", "--mode", "words", "--limit", "3"],
        ["--db", "ingest", "3f2a"],  # a command's name as --db's value: the session follows it
    ]
    # the session is opened where it stands, not where its name first appears (as --db's value)
    assert cli._session_opens(["--db", "3f2a", "3f2a"], whole) == ["--db", "3f2a", "open", "3f2a"]
    assert cli._session_opens(lines[4], whole) == ["--db", "ingest", "open", "3f2a"]
    assert cli._first_word(lines[4]) == "3f2a" and cli._first_word(["--no-ingest", "--", "x"]) == ""
    for argv in lines:
        words = cli._session_opens(argv, whole)
        assert cli.build_parser(only=cli._first_word(argv)).parse_args(words) == whole.parse_args(words)
    with contextlib.redirect_stderr(io.StringIO()) as said, pytest.raises(SystemExit):
        cli.build_parser(only="ingest").parse_args(["ingest", "--no-such"])
    assert "unrecognized arguments: --no-such" in said.getvalue()


def test_words_no_option_takes_are_said_with_the_command_s_own_usage(tmp_path, capsys):
    """`sessions --bogus` printed the top level's usage, and `ingest FOLDER` (a folder given as a
    word) said nothing of how to give one; `show 'SESSION#5'` (the form tag and note take) said no
    session matched."""
    import pytest
    from threadloom.core import cli

    from tests.support import ingest

    db_path = str(tmp_path / "a.db")
    for argv, usage, said in (
        (
            ["--db", db_path, "sessions", "--bogus"],
            "usage: threadloom sessions",
            "unrecognized arguments: --bogus",
        ),
        (
            ["--db", db_path, "ingest", "/logs/my folder"],
            "usage: threadloom ingest",
            "(a folder of logs to read is given as --source '/logs/my folder')",
        ),
    ):
        with pytest.raises(SystemExit) as exited:
            cli.main(argv)
        err = capsys.readouterr().err
        assert exited.value.code == 2 and err.startswith(usage) and said in err, err
    with pytest.raises(SystemExit):  # what a terminal would act on is said, not sent
        cli.main(["--db", db_path, "ingest", "x\x1b]0;TITLE\x07\nnext"])
    err = capsys.readouterr().err
    # (no line of its own for "next": how many lines the usage takes depends on the terminal's width)
    assert "\x1b" not in err and "\x07" not in err and "\nnext" not in err and "␛]0;TITLE" in err, err
    conn = db.connect(tmp_path / "a.db")
    ingest(conn, make_archive(tmp_path / "claude"))
    conn.close()
    # bytes that are not UTF-8 (the shell's $'\xff') match no session, and say so
    assert cli.main(["--db", db_path, "show", "\udcff\udcfe"]) == 1
    assert "no session matches" in capsys.readouterr().err
    assert cli.main(["--db", db_path, "search", "\udcff"]) == 0
    capsys.readouterr()
    assert cli.main(["--db", db_path, "show", f"{SID[:8]}#99"]) == 1
    assert f"session {SID} has no message #99" in capsys.readouterr().err


def test_a_source_that_is_not_there_and_a_date_that_is_none_are_said(tmp_path, capsys):
    """`ingest --source` with a typo exited 0 saying nothing, and the path was remembered and
    listed by `sources` as if it were there; `context --since 2026-13-01` warned about an `after:`
    the user never typed and gave turns of any time, exit 0."""
    from threadloom.core import cli

    db_path = str(tmp_path / "a.db")
    missing = tmp_path / "old-claude-projects"
    assert cli.main(["--db", db_path, "ingest", "--source", str(missing), "--only", "-q"]) == 0
    assert f"--source {missing}: no such file or folder" in capsys.readouterr().err
    assert cli.main(["--db", db_path, "sources"]) == 0
    assert (
        f"--source     {missing}  (not present; `threadloom sources --forget {missing}`"
        in capsys.readouterr().out
    )
    assert cli.main(["--db", db_path, "context", "render html", "--since", "2026-13-01"]) == 2
    assert "--since '2026-13-01' is not a date" in capsys.readouterr().err


def test_one_is_said_in_the_singular(tmp_path, capsys):
    """'1 files restored', '(1 files)': counts of one said as one."""
    from threadloom.core import cli

    from tests.support import ingest

    db_path = str(tmp_path / "a.db")
    conn = db.connect(tmp_path / "a.db")
    ingest(conn, make_archive(tmp_path / "claude"))
    conn.close()
    assert cli.main(["--db", db_path, "restore", SID, "--to", str(tmp_path / "back")]) == 0
    assert f"1 file restored for session {SID}" in capsys.readouterr().out
    assert cli.main(["--db", db_path, "sources"]) == 0
    assert "ingested: claude-code ok: 1 file, " in capsys.readouterr().out


def test_tokens_an_agent_never_recorded_are_shown_unknown_not_zero(tmp_path):
    """An Amazon Q save holds no token counts: `show` and `sessions` say "?", not "0 tokens",
    while a session whose usage records count tokens keeps its count."""
    from tests.builders.amazon_q import CONV, pairs, save, state

    save(tmp_path / "saves" / "convo.md", state(pairs()))
    make_archive(tmp_path)
    dbp = str(tmp_path / "t.db")
    ingest_into(dbp, tmp_path)
    shown = " ".join(run("--db", dbp, "show", CONV[:8]).stdout.split())
    assert "· ? tokens ·" in shown and "0 tokens" not in shown
    assert "· 57 tokens ·" in " ".join(run("--db", dbp, "show", SID[:8]).stdout.split())
    listed = {
        line.split()[0][:8]: line.split() for line in run("--db", dbp, "sessions").stdout.splitlines()[1:]
    }
    assert "?" in listed[CONV[:8]] and "57" in listed[SID[:8]]


def test_help_names_the_agents_an_option_takes(capsys):
    """`hooks --agent` and `mcp install --agent` named no agent: the accepted ones were learnt by
    giving a wrong one; each help lists them (from the agents' own adapters)."""
    import pytest
    from threadloom.core import cli

    for argv, wanted in (
        (["hooks", "--help"], ["claude"]),
        (["mcp", "install", "--help"], ["claude", "codex", "gemini"]),
    ):
        with pytest.raises(SystemExit):
            cli.main(argv)
        said = " ".join(capsys.readouterr().out.split())
        assert all(f"{name}" in said.split("--agent AGENT", 1)[1] for name in wanted), said


def test_the_id_column_is_as_wide_as_the_ids_it_shows(tmp_path, capsys, monkeypatch):
    """On a 120-column terminal the id column was 24 wide for ids of 13, and the project and
    model were cut to a few letters: it is as wide as the widest id shown."""
    import sys

    from threadloom.core import cli

    from tests.support import ingest

    conn = db.connect(tmp_path / "a.db")
    ingest(conn, make_archive(tmp_path / "claude"))
    conn.close()
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert cli.main(["--db", str(tmp_path / "a.db"), "sessions"]) == 0
    header, row = [
        line.replace("\x1b[1m", "").replace("\x1b[0m", "")
        for line in capsys.readouterr().out.splitlines()[:2]
    ]
    shown_id = row.split()[0]
    assert header.index("when") == len(shown_id) + 2, (header, row)


def test_a_subagent_s_long_id_is_cut_as_a_session_s_is(tmp_path, capsys, monkeypatch):
    """A subagent's own id (`agent-` and 17 characters) widened the id column to 23 and cut the
    project and model: it is cut to a unique prefix of 13 as a main session's is, which `show` takes."""
    from threadloom.core import cli

    from tests.support import ingest

    root = "c0000000-0000-4000-8000-0000000000c1"
    projects = tmp_path / "claude" / "projects" / "-srv-api"
    main = Transcript(projects / f"{root}.jsonl", root, cwd="/srv/api")
    main.user("Audit the API")
    main.assistant("Done.")
    main.write()
    for agent in ("a6d4b2c0e1f2a3b4c", "a6d4b2c0e9f9f9f9f"):  # alike for their first 15 characters
        sub = Transcript(projects / root / "subagents" / f"agent-{agent}.jsonl", root, cwd="/srv/api",
                         isSidechain=True, agentId=agent)  # fmt: skip
        sub.user(f"audit part {agent}", parent=False)
        sub.assistant("Audited.")
        sub.write()
    conn = db.connect(tmp_path / "a.db")
    ingest(conn, tmp_path / "claude")
    conn.close()
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert cli.main(["--db", str(tmp_path / "a.db"), "sessions"]) == 0
    header, *rows = [
        line.replace("\x1b[1m", "").replace("\x1b[0m", "") for line in capsys.readouterr().out.splitlines()
    ]
    shown = [row.split()[0] for row in rows]
    assert shown == [root[:13], "agent-a6d4b2c0e1", "agent-a6d4b2c0e9"], rows
    assert header.index("when") == 16 + 2, (header, rows)
    said = run("--db", str(tmp_path / "a.db"), "show", shown[2])
    assert said.returncode == 0 and "audit part a6d4b2c0e9f9f9f9f" in said.stdout, said.stderr


def test_a_prefix_of_several_sessions_is_refused_though_aider_ids_hold_a_colon(tmp_path, capsys):
    """Every aider id (`aider:...`) holds a ':', which once marked a subagent: `show a` then
    opened the one other session starting with 'a' without saying the prefix named many."""
    from threadloom.core.cli import main
    from threadloom.core.read import query

    from tests.builders.aider import SESSION_1, history

    history(tmp_path / "proj", SESSION_1 * 6)
    sid = "aaaaaaaa-1111-4222-8333-000000000001"
    t = Transcript(tmp_path / "projects" / "-srv-x" / f"{sid}.jsonl", sid)
    t.user("the one claude session")
    t.assistant("ok")
    t.write()
    dbp = str(tmp_path / "t.db")
    for source in ("proj", "projects"):
        assert main(["ingest", "--db", dbp, "--source", str(tmp_path / source), "--only", "--quiet"]) == 0
    capsys.readouterr()
    conn = db.connect(Path(dbp))
    aider = sorted(query.values(conn, "SELECT id FROM agent_sessions WHERE id LIKE 'aider:%'"))
    assert len(aider) >= 5

    with pytest.raises(query.AmbiguousSession) as refused:
        query.resolve_session(conn, "a")
    said = str(refused.value)
    assert sid in said and aider[0] in said and f"({len(aider) + 1} in all)" in said
    res = run("--db", dbp, "show", "a")
    assert res.returncode != 0 and "matches several sessions" in res.stderr
    # a unique prefix, a whole aider id and a prefix naming one aider session still open it
    assert query.resolve_session(conn, "aa").id == sid
    assert query.resolve_session(conn, aider[0]).id == aider[0]
    one = next(i for i in aider if sum(o.startswith(i[:-1]) for o in aider) == 1)
    assert query.resolve_session(conn, one[:-1]).id == one


def test_the_turn_a_context_cites_opens_as_printed_in_a_shell(tmp_path):
    """`context` cited `threadloom show ID #2`: a shell takes `#2` for a comment, and quoted `show`
    took no turn; the citation now runs as printed and shows that turn alone."""
    t = Transcript(tmp_path / "projects" / "-srv-api" / f"{SID}.jsonl", SID, cwd="/srv/api")
    t.user("Add a health endpoint")
    t.assistant("Added /health.")
    t.user("Now export the request latency metrics")
    t.assistant(None, tools=[tool_use("m1", "Bash", command="curl localhost/metrics")])
    t.tool_result("m1", "latency_p50 12ms")
    t.assistant("Exported them as a histogram.")
    t.write()
    dbp = tmp_path / "t.db"
    ingest_into(dbp, tmp_path / "projects")
    said = run("--db", str(dbp), "context", "request latency metrics", "--json")
    assert said.returncode == 0, said.stderr
    cited = json.loads(said.stdout)["turns"][0]["reference"]
    assert cited == f"threadloom show '{SID}#2'"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "threadloom"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} -m threadloom.core.cli "$@"\n')
    script.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", THREADLOOM_DB=str(dbp))
    shown = subprocess.run(
        cited, shell=True, capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parents[2]
    )
    assert shown.returncode == 0, shown.stderr
    assert "Now export the request latency metrics" in shown.stdout and "histogram" in shown.stdout
    assert "Add a health endpoint" not in shown.stdout.split(SID, 1)[1]  # the other turn is left out
    # its JSON is the whole session's, cut to that turn (read from the turn's first message on)
    turn = json.loads(run("--db", str(dbp), "show", f"{SID}#2", "--json").stdout)["messages"]
    whole = json.loads(run("--db", str(dbp), "show", SID, "--json").stdout)["messages"]
    assert turn == [m for m in whole if m["seq"] >= 2] and turn[1]["tool_calls"][0]["name"] == "Bash"
