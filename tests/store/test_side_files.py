"""A Claude Code session's side files are part of its archive: a tool's full output, the copies of
files taken before an edit, its todo list, plans. Stored byte for byte, versioned, restored with
the session after the agent's cleanup deleted them."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from threadloom.core.actions.restore import restore_session
from threadloom.core.cli import main
from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.read.archive import version_as_of

from tests.builders.side_files import BACKUP, BIG_OUTPUT, PROJECT, SID, SLUG, claude_home
from tests.support import ingest, stored_bytes


def side_rows(conn: sqlite3.Connection) -> dict[str, str | None]:
    """Each stored side file (its name) → the session its bytes are kept with."""
    rows = conn.execute(
        "SELECT f.path, (SELECT session_id FROM entries e WHERE e.source_file_id = f.id LIMIT 1) "
        "FROM source_files f WHERE f.kind = 'side'"
    )
    return {Path(path).name: session for path, session in rows}


def test_every_kind_of_side_file_is_stored_with_its_session(conn, tmp_path):
    root = tmp_path / "claude"
    claude_home(root)
    ingest(conn, root)
    assert side_rows(conn) == {
        "toolu_big.txt": SID,
        "3f2a9c@v1": SID,
        "3f2a9c@v2": SID,
        "77e0d1@v1": SID,
        f"{SID}-agent-{SID}.json": SID,
        "brave-dancing-otter.md": None,  # a plan is named by the session's slug: kept under its agent
    }
    # kept, not read as records: no session gained a message, none was made for them
    assert conn.execute("SELECT count(*) FROM agent_sessions").fetchone()[0] == 2  # the session, its subagent
    assert conn.execute("SELECT message_count FROM agent_sessions WHERE id = ?", (SID,)).fetchone()[0] == 6


def test_a_rebuild_after_a_copied_configuration_folder_is_gone_says_what_its_side_files_are(conn, tmp_path):
    """A plan is told by the configuration folder it lies in (one with `projects/`), which a replay
    (a schema upgrade's, `ingest --rebuild`) asked the disk: once a copied folder (a backup) was
    gone, its plan was read as an unreadable record, no longer a plan. A replay tells it as the
    first read did; every side file is what it was, and the session's facts are the same."""
    from threadloom.core.ingest.ledger import rebuild_derived

    root = tmp_path / "backup" / "claude"
    claude_home(root)
    ingest(conn, root)
    what = (
        "SELECT f.path, e.entry_type, e.subtype, e.session_id FROM entries e "
        "JOIN source_files f ON f.id = e.source_file_id WHERE f.kind = 'side' ORDER BY f.path"
    )
    facts = "SELECT id, kind, agent_type, project_path, created_at, title FROM agent_sessions ORDER BY id"
    read_then = (conn.execute(what).fetchall(), conn.execute(facts).fetchall())
    assert ("side-file", "plan") in {row[1:3] for row in read_then[0]}
    shutil.rmtree(root)
    rebuild_derived(conn)
    assert (conn.execute(what).fetchall(), conn.execute(facts).fetchall()) == read_then


def test_a_session_deleted_by_its_agent_is_restored_with_its_side_files(conn, tmp_path):
    """The agent's cleanup deletes the session's folder (transcript, subagents, tool outputs) and its
    file history; the archive writes all of it back, byte for byte."""
    root = tmp_path / "claude"
    original = claude_home(root)
    ingest(conn, root)
    os.remove(root / "projects" / PROJECT / f"{SID}.jsonl")
    shutil.rmtree(root / "projects" / PROJECT / SID)
    shutil.rmtree(root / "file-history" / SID)
    os.remove(root / "todos" / f"{SID}-agent-{SID}.json")
    ingest(conn, root)  # they are gone from the disk: nothing is deleted from the archive
    dest = tmp_path / "restored"
    written = restore_session(conn, SID, dest)
    assert all(r.complete for r in written)
    restored = {str(p.relative_to(dest)): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    expected = {
        # the projects folder is where a restore starts from (as for every transcript); the plan is
        # the session's by its slug
        (name.removeprefix("projects/")): data
        for name, data in original.items()
        if SID in name or SLUG in name
    }
    assert restored == expected
    assert restored[f"{PROJECT}/{SID}/tool-results/toolu_big.txt"] == BIG_OUTPUT


def test_the_cli_restores_side_files_too(conn, tmp_path, capsys):
    root = tmp_path / "claude"
    claude_home(root)
    ingest(conn, root)
    conn.close()
    shutil.rmtree(root / "file-history")
    dest = tmp_path / "out"
    assert main(["--db", str(tmp_path / "ledger.db"), "restore", SID, "--to", str(dest)]) == 0
    assert (dest / "file-history" / SID / "3f2a9c@v2").read_bytes() == BACKUP[::-1]
    assert "3f2a9c@v1" in capsys.readouterr().out


def test_a_rewritten_todo_list_keeps_its_earlier_version(conn, tmp_path):
    root = tmp_path / "claude"
    claude_home(root)
    ingest(conn, root)
    todos = root / "todos" / f"{SID}-agent-{SID}.json"
    before = todos.read_bytes()
    file_id = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(todos),)).fetchone()[0]
    between = conn.execute("SELECT CAST(strftime('%s', 'now') AS INTEGER) * 1000").fetchone()[0] + 1
    os.utime(todos, (1, 1))
    todos.write_bytes(b"[]")
    ingest(conn, root)
    version = version_as_of(conn, file_id, between)
    assert version is not None
    dest = tmp_path / "then"
    restore_session(conn, SID, dest, as_of=between)
    assert (dest / "todos" / todos.name).read_bytes() == before


def test_side_files_are_found_in_the_default_folders(tmp_path, monkeypatch):
    root = tmp_path / "claude"
    claude_home(root)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(root))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "home" / ".codex"))
    from threadloom.core.store import db

    conn = db.connect(tmp_path / "defaults.db")
    report = run_ingest(conn, [], include_defaults=True)
    assert not report.errors
    assert set(side_rows(conn)) == {
        "toolu_big.txt",
        "3f2a9c@v1",
        "3f2a9c@v2",
        "77e0d1@v1",
        f"{SID}-agent-{SID}.json",
        "brave-dancing-otter.md",
    }
    conn.close()


def history_line(prompt: str, session: str = SID) -> bytes:
    """A line of a prompt log as Claude Code and Codex write theirs (each its own keys)."""
    return json.dumps({"display": prompt, "pastedContents": {}, "timestamp": 1767225600000,
                       "project": "/srv/app", "sessionId": session, "session_id": session,
                       "ts": 1767225600, "text": prompt}).encode() + b"\n"  # fmt: skip


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_the_prompt_log_beside_the_sessions_is_kept_whole_and_restored_with_none(
    conn, tmp_path, monkeypatch, agent
):
    """`history.jsonl` in Claude Code's and Codex's homes logs every prompt typed in every project,
    and outlives the transcripts the agents delete: it was listed as a file no reader takes, and
    lost with them. It is kept whole as its agent's (read from where the last ingest stopped as it
    grows), makes no session, and no session's restore writes it (it is every session's)."""
    root = tmp_path / ("claude" if agent == "claude-code" else "codex")
    if agent == "claude-code":
        claude_home(root)
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(root))
    else:
        (root / "sessions" / "2026" / "01" / "01").mkdir(parents=True)
        monkeypatch.setenv("CODEX_HOME", str(root))
    history = root / "history.jsonl"
    history.write_bytes(history_line("fix the flaky test") + history_line("now the docs"))
    elsewhere = tmp_path / "notes" / "history.jsonl"  # a file of that name elsewhere: no agent's
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(history_line("not a prompt log of theirs"))
    sessions_before = 2 if agent == "claude-code" else 0
    for source in ([root, elsewhere.parent], []):  # named as a source, then found in the default places
        run_ingest(conn, source, include_defaults=not source)
        kept = conn.execute("SELECT agent, kind FROM source_files WHERE path = ?", (str(history),)).fetchall()
        assert [tuple(r) for r in kept] == [(agent, "index")]
        assert stored_bytes(conn, history) == history.read_bytes()
        assert not conn.execute("SELECT 1 FROM source_files WHERE path = ?", (str(elsewhere),)).fetchall()
        assert conn.execute("SELECT count(*) FROM agent_sessions").fetchone()[0] == sessions_before
    with history.open("ab") as f:
        f.write(history_line("and the changelog"))
    report = run_ingest(conn, [root], include_defaults=False)
    assert report.bytes_read == len(history_line("and the changelog"))  # only what was added
    assert stored_bytes(conn, history) == history.read_bytes()
    if agent == "claude-code":
        restore_session(conn, SID, tmp_path / "back")
        assert (tmp_path / "back" / PROJECT / f"{SID}.jsonl").is_file()
        assert not list((tmp_path / "back").rglob("history.jsonl"))


def test_a_plans_folder_of_a_project_is_not_claude_code_s(conn, tmp_path):
    """Only Claude Code's own folders hold its side files: a repository's docs/plans/*.md is not one."""
    repo = tmp_path / "repo"
    (repo / "docs" / "plans").mkdir(parents=True)
    (repo / "docs" / "plans" / "roadmap.md").write_text("# Roadmap\n")
    (repo / "todos").mkdir()
    (repo / "todos" / "list.json").write_text("[]")
    ingest(conn, repo)
    assert side_rows(conn) == {}


def test_a_saved_output_is_found_from_a_backup_read_elsewhere(conn, tmp_path):
    """The transcript names the agent's machine's path; the archive may have read a backup of the
    folder from anywhere (or the agent ran on Windows): the session's own tool-results file is found."""
    from threadloom.core.read.side_files import persisted_output, side_files

    original = tmp_path / "claude"
    claude_home(original)
    backup = tmp_path / "backups" / "laptop-claude"
    backup.parent.mkdir()
    original.rename(backup)
    ingest(conn, backup)
    for named in (
        str(original / "projects" / PROJECT / SID / "tool-results" / "toolu_big.txt"),
        rf"C:\Users\dev\.claude\projects\{PROJECT}\{SID}\tool-results\toolu_big.txt",
    ):
        notice = f"<persisted-output>\nOutput too large (1.9MB). Full output saved to: {named}\n\nPreview (first 2KB):\n"
        found = persisted_output(conn, notice)
        assert found is not None and found.data == BIG_OUTPUT and found.complete
        assert found.stored.startswith(str(backup)) and found.named == named
    assert (
        persisted_output(conn, "<persisted-output>\nOutput too large (1KB). Full output saved to: /x/y.txt\n")
        is None
    )
    assert persisted_output(conn, "an ordinary output") is None
    kept = side_files(conn, SID)
    assert sorted(f.what for f in kept) == [
        "file-history",
        "file-history",
        "file-history",
        "todo",
        "tool-result",
    ]
    assert all(f.status == "ok" for f in kept)


GEMINI_SID = "2cbc6e5f-eb6a-4869-9d0f-a07806539ff7"


def gemini_project(root: Path, name: str = "03-potencial") -> Path:
    """A Gemini CLI project folder holding one chat of GEMINI_SID (as a real 2026 backup holds it)."""
    project = root / ".gemini" / "tmp" / name
    chat = project / "chats" / "session-2026-06-08T18-27-2cbc6e5f.jsonl"
    chat.parent.mkdir(parents=True)
    chat.write_bytes(
        b'{"sessionId":"%s","projectHash":"0330","startTime":"2026-06-08T18:27:18.103Z",'
        b'"lastUpdated":"2026-06-08T18:27:18.103Z","kind":"main"}\n'
        b'{"id":"d049","timestamp":"2026-06-08T18:27:18.105Z","type":"user","content":[{"text":"grep the logs"}]}\n'
        % GEMINI_SID.encode()
    )
    return project


def test_gemini_tool_outputs_and_plans_are_kept_with_their_session(conn, tmp_path):
    """Gemini CLI saves a tool's whole output to `tool-outputs/session-<id>/` and plans to
    `<id>/plans/` beside the project's chats (as a real 2026 backup holds them)."""
    project = gemini_project(tmp_path)
    output = project / "tool-outputs" / f"session-{GEMINI_SID}" / "grep_search_1780943303151_1_xdk71.txt"
    plan = project / GEMINI_SID / "plans" / "2026-06-16-fix-schema.md"
    for path, data in ((output, BIG_OUTPUT[:5000]), (plan, b"# Fix the schema\n")):
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
    ingest(conn, tmp_path / ".gemini")
    assert side_rows(conn) == {output.name: GEMINI_SID, plan.name: GEMINI_SID}
    assert conn.execute("SELECT count(*) FROM agent_sessions").fetchone()[0] == 1
    shutil.rmtree(project)
    dest = tmp_path / "restored"
    restore_session(conn, GEMINI_SID, dest)
    restored = {str(p.relative_to(dest)): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    assert restored[f"03-potencial/tool-outputs/session-{GEMINI_SID}/{output.name}"] == BIG_OUTPUT[:5000]
    assert restored[f"03-potencial/{GEMINI_SID}/plans/{plan.name}"] == b"# Fix the schema\n"
    assert any(name.startswith("03-potencial/chats/") for name in restored)


def test_gemini_s_files_for_all_of_a_project_s_sessions_are_kept_and_restored_with_each(conn, tmp_path):
    """Beside a project's chats Gemini CLI keeps the log of every prompt typed (`logs.json`), the `!`
    shell history, conversations `/chat save` kept and the snapshots `/restore` goes back to (as a
    real 2026 home holds them): they were left unread. Kept whole, with no session of their own,
    and written back with each of the project's sessions; Qwen Code's files of the same names are
    not Gemini CLI's."""
    project = gemini_project(tmp_path)
    kept = {
        "logs.json": b'[{"sessionId":"%s","messageId":0,"type":"user","message":"grep the logs"}]'
        % GEMINI_SID.encode(),
        "shell_history": b"ls -la\n",
        "checkpoint-before%20refactor.json": b'{"history":[{"role":"user","parts":[{"text":"grep"}]}]}',
        "checkpoints/2026-06-08T18-30-00_000Z-app.py-write_file.json": b'{"toolCall":{"name":"write_file"},"commitHash":"8d1c"}',
    }
    for name, data in kept.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_bytes(data)
    qwen = tmp_path / ".gemini" / "tmp" / ".qwen" / "tmp" / "other" / "logs.json"
    qwen.parent.mkdir(parents=True)
    qwen.write_bytes(b"[]")
    # another home (a backup, another machine's) with a project folder of the same name: its own
    other = tmp_path / "backup" / ".gemini" / "tmp" / "03-potencial"
    other.mkdir(parents=True)
    (other / "logs.json").write_bytes(b'[{"message":"typed elsewhere"}]')
    (other / "checkpoint-elsewhere.json").write_bytes(b'{"history":[]}')
    # and the registry of projects beside tmp/, found from the Gemini CLI folder given
    registry = b'{"projects":{"/home/dev/03-potencial":"03-potencial"}}'
    (tmp_path / ".gemini" / "projects.json").write_bytes(registry)
    ingest(conn, tmp_path / ".gemini", tmp_path / "backup" / ".gemini")
    assert (
        conn.execute("SELECT count(*) FROM source_files WHERE kind = 'side'").fetchone()[0] == len(kept) + 3
    )
    from threadloom.core.read.side_files import side_file_counts

    # they belong to the project's sessions: none is counted "of no session in the archive"
    assert [(c.what, c.without_session) for c in side_file_counts(conn) if c.without_session] == []
    subtypes = {
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT subtype FROM entries WHERE source_file_id IN (SELECT id FROM source_files WHERE kind = 'side')"
        )
    }
    assert subtypes == {"prompt-log", "shell-history", "chat-save", "checkpoint", "project-registry"}
    assert conn.execute("SELECT count(*) FROM agent_sessions").fetchone()[0] == 1
    shutil.rmtree(project)
    dest = tmp_path / "restored"
    restore_session(conn, GEMINI_SID, dest)
    restored = {str(p.relative_to(dest)): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    for name, data in kept.items():
        assert restored[f"03-potencial/{name}"] == data
    assert any(name.startswith("03-potencial/chats/") for name in restored)
    assert "03-potencial/checkpoint-elsewhere.json" not in restored  # nor was it refused as a copy
    assert restored[".gemini/projects.json"] == registry


@pytest.mark.parametrize("name", ["chats", "checkpoints", "tool-outputs"])
def test_a_gemini_project_named_as_a_folder_inside_it_is_restored_as_it_was(conn, tmp_path, name):
    """Gemini CLI names a project's folder after the project (`tmp/<name>/chats/…`): a project
    named `chats` (or as another of its folders) was taken to be the folder of that name nearest
    the file: its chat was restored one folder too high and its project files left out."""
    project = gemini_project(tmp_path, name)
    kept = {
        "logs.json": b'[{"sessionId":"%s","messageId":0,"type":"user","message":"grep"}]'
        % GEMINI_SID.encode(),
        "checkpoints/2026-06-08T18-30-00_000Z-app.py-write_file.json": b'{"toolCall":{"name":"write_file"}}',
        f"tool-outputs/session-{GEMINI_SID}/grep_search_1_x.txt": b"found\n",
    }
    for relative, data in kept.items():
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).write_bytes(data)
    chat = next((project / "chats").iterdir())
    kept[f"chats/{chat.name}"] = chat.read_bytes()
    ingest(conn, tmp_path / ".gemini")
    assert {r[0] for r in conn.execute("SELECT project_key FROM source_files")} == {name}
    shutil.rmtree(project)
    dest = tmp_path / "restored"
    restore_session(conn, GEMINI_SID, dest)
    restored = {str(p.relative_to(dest)): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    assert restored == {f"{name}/{relative}": data for relative, data in kept.items()}


def test_a_session_s_plan_is_found_by_its_slug(conn, tmp_path, capsys):
    from threadloom.core.read.archive import plan_files
    from threadloom.core.read.side_files import session_plans

    root = tmp_path / "claude"
    claude_home(root)
    # another session's plan, another slug: not this session's
    (root / "plans" / "quiet-sleeping-heron.md").write_text("# Someone else's plan\n")
    ingest(conn, root)
    assert [Path(p).name for _, p, _ in plan_files(conn, SID)] == [f"{SLUG}.md"]
    (plan,) = session_plans(conn, SID)
    assert plan.data == b"# Plan\n\n1. build\n2. ship\n" and plan.kind == "plan"
    conn.close()
    db = str(tmp_path / "ledger.db")
    assert main(["--db", db, "show", SID, "--plan"]) == 0
    out = capsys.readouterr().out
    assert out.endswith("# Plan\n\n1. build\n2. ship\n\n") and f"plans/{SLUG}.md" in out
    assert main(["--db", db, "show", SID, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [Path(p).name for p in shown["plans"]] == [f"{SLUG}.md"]
    assert sorted(f["what"] for f in shown["side_files"]) == [
        "file-history",
        "file-history",
        "file-history",
        "todo",
        "tool-result",
    ]
