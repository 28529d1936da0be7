"""Codex CLI rollouts of every era, written here line by line, plus the corpus samples."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import zstandard
from threadloom.core.adapters import ADAPTERS
from threadloom.core.adapters.codex import CodexAdapter
from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.read.archive import file_bytes
from threadloom.core.read.query import messages
from threadloom.core.store import db

from tests.support import CORPUS, THREAD, Rollout, full_session, ingest, snapshot, usage

CHILD = "019a0000-1111-7222-8333-777788889999"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    codex = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(codex))
    return codex


def session(conn: sqlite3.Connection, sid: str) -> dict:
    cur = conn.execute("SELECT * FROM agent_sessions WHERE id = ?", (sid,))
    row = cur.fetchone()
    assert row is not None, sid
    return dict(zip([d[0] for d in cur.description], row, strict=True))


def round_trips(conn: sqlite3.Connection, path: Path) -> bool:
    fid = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(path.resolve()),)).fetchone()[0]
    data, contiguous = file_bytes(conn, fid)
    return contiguous and data == path.read_bytes()


# ---------------------------------------------------------------------- wrapped era


def test_wrapped_rollout_sessions_turns_tools_and_tokens(conn, home):
    r = full_session(home)
    path = r.write()
    report = ingest(conn, home)
    assert report.files_read == 1
    s = session(conn, THREAD)
    assert (s["source"], s["kind"], s["project_path"], s["git_branch"], s["cli_version"], s["model"]) == (
        "codex",
        "main",
        "/home/dev/shop",
        "feature/cart",
        "0.101.0",
        "gpt-5.2-codex",
    )
    assert s["turn_count"] == 2 and s["title"] == "add a cart total" and s["title_source"] == "prompt"
    # each prompt shows once although both streams log it
    prompts = conn.execute(
        "SELECT content FROM entries WHERE session_id = ? AND role = 'user' AND seq IS NOT NULL "
        "AND content IS NOT NULL ORDER BY seq",
        (THREAD,),
    ).fetchall()
    assert [p[0] for p in prompts] == ["add a cart total", "now the tests"]
    said = conn.execute(
        "SELECT count(*) FROM entries WHERE session_id = ? AND seq IS NOT NULL AND "
        "content = 'Added the total.'",
        (THREAD,),
    ).fetchone()[0]
    assert said == 1
    calls = dict(
        conn.execute("SELECT id, status FROM agent_tool_calls WHERE session_id = ?", (THREAD,)).fetchall()
    )
    assert calls == {"call_1": "failed", "call_2": "completed"}
    params = conn.execute("SELECT params_json FROM agent_tool_calls WHERE id = 'call_1'").fetchone()[0]
    assert json.loads(params) == {"command": ["bash", "-lc", "pytest -q"]}
    # the duplicated token_count is one request; input excludes the cached part
    assert (s["input_tokens"], s["cache_read_tokens"], s["output_tokens"]) == (200 + 300, 800 + 1200, 80)
    turns = conn.execute(
        "SELECT token_count FROM agent_turns WHERE session_id = ? ORDER BY sequence", (THREAD,)
    ).fetchall()
    assert [t[0] for t in turns] == [1050, 1530]
    thinking = conn.execute(
        "SELECT thinking FROM entries WHERE thinking LIKE 'Looking%' AND seq IS NOT NULL"
    ).fetchall()
    assert len(thinking) == 1
    diff = conn.execute("SELECT count(*) FROM entries WHERE tool_text LIKE '%total = 0%'").fetchone()[0]
    assert diff >= 2  # the patch as sent and the diff as applied are both searchable in:tools
    assert round_trips(conn, path)
    assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == len(r.lines)


def test_default_root_honours_codex_home(home):
    assert CodexAdapter().default_roots()[0] == home / "sessions"


@pytest.mark.parametrize("cut", [3, 9, 12, 16])
def test_appended_lines_keep_the_state_of_the_lines_before(conn, home, tmp_path, cut):
    r = full_session(home)
    r.tokens(usage(10, 0, 5), with_last=False)  # an old shape: totals only, the delta is the request
    full = list(r.lines)
    r.write(full[:cut])
    ingest(conn, home)
    with open(r.path, "a") as f:
        f.write("".join(json.dumps(x) + "\n" for x in full[cut:]))
    ingest(conn, home)
    fresh = db.connect(tmp_path / "fresh.db")
    ingest(fresh, home)
    for table, cols in (
        (
            "agent_sessions",
            "turn_count, message_count, input_tokens, output_tokens, cache_read_tokens, "
            "model, project_path, title",
        ),
        ("agent_turns", "id, parent_turn_id, token_count, sequence"),
        ("agent_usage", "message_id, input_tokens, output_tokens, turn_id"),
    ):
        sql = f"SELECT {cols} FROM {table} ORDER BY 1"
        assert conn.execute(sql).fetchall() == fresh.execute(sql).fetchall(), table
    assert session(conn, THREAD)["input_tokens"] == 510


def test_cumulative_totals_are_never_summed(conn, home):
    r = Rollout(home, THREAD)
    r.meta()
    r.prompt("go")
    r.tokens(usage(100, 0, 10), with_last=False)
    r.tokens(None, with_last=False)  # the same totals again: nothing new
    r.add("event_msg", {"type": "token_count", "info": None, "rate_limits": {"primary": {"used_percent": 3}}})
    r.tokens(usage(300, 100, 20), with_last=False)
    r.write()
    ingest(conn, home)
    s = session(conn, THREAD)
    assert (s["input_tokens"] + s["cache_read_tokens"], s["output_tokens"]) == (400, 30)


def test_a_request_s_usage_record_is_known_and_not_counted_again(conn, home):
    """0.153 writes each request's usage twice: a top-level `token_usage_record`, then the
    `token_count` event; it is read as an event of its kind and the tokens are counted once."""
    r = Rollout(home, THREAD)
    r.meta(cli_version="0.153.4")
    r.context()
    r.prompt("go")
    for n, last in enumerate((usage(14689, 11008, 210), usage(14920, 14080, 68))):
        r.usage_record(last, f"resp_{n}")
        r.tokens(last)
    r.write()
    ingest(conn, home)
    assert conn.execute("SELECT entry_type FROM entries WHERE NOT known").fetchall() == []
    s = session(conn, THREAD)
    assert (s["input_tokens"], s["cache_read_tokens"], s["output_tokens"]) == (4521, 25088, 278)


def test_bare_era_header_items_and_cwd_from_environment_context(conn, home):
    path = home / "sessions" / "2025" / "08" / "20" / f"rollout-2025-08-20T09-00-00-{THREAD}.jsonl"
    lines = [
        {
            "id": THREAD,
            "timestamp": "2025-08-20T09:00:00.000Z",
            "instructions": None,
            "git": {"branch": "main"},
        },
        {
            "type": "message",
            "role": "user",
            "content": [
                {
                    "type": "input_text",
                    "text": "<environment_context>\n  <cwd>/srv/api</cwd>\n</environment_context>",
                }
            ],
        },
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "why is login slow?"}],
        },
        {"record_type": "state"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "profiling"}]},
        {
            "type": "function_call",
            "name": "shell",
            "arguments": '{"command":["rg","login"]}',
            "call_id": "c1",
        },
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": '{"output":"auth.py","metadata":{"exit_code":0}}',
        },
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "N+1 query."}]},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]},
    ]
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    ingest(conn, home)
    s = session(conn, THREAD)
    assert (s["turn_count"], s["project_path"], s["tool_call_count"], s["title"]) == (
        2,
        "/srv/api",
        1,
        "why is login slow?",
    )
    assert conn.execute("SELECT status FROM agent_tool_calls WHERE id = 'c1'").fetchone()[0] == "completed"
    assert round_trips(conn, path)


def test_fork_and_its_copied_history_count_tokens_once(conn, home):
    parent = full_session(home)
    parent.write()
    fork_id = "019a0000-1111-7222-8333-aaaabbbbcccc"
    fork = Rollout(home, fork_id, day="2026/03/03")
    fork.meta(forked_from_id=THREAD)
    burst = "2026-03-03T08:00:00.000Z"
    for line in parent.lines:  # Codex copies the parent's rollout, written in one burst
        fork.add(line["type"], line["payload"], ts=burst)
    fork.total = dict(parent.total)
    fork.tokens(None)  # on start the fork replays its parent's last total
    fork.context()
    fork.prompt("try another way")
    fork.tokens(usage(2000, 1500, 40))
    fork.write()
    ingest(conn, home)
    s = session(conn, fork_id)
    assert (s["kind"], s["parent_session_id"], s["forked_from_session_id"]) == ("fork", THREAD, THREAD)
    assert s["turn_count"] == 3  # the copied turns and its own
    parent_tokens = session(conn, THREAD)["input_tokens"] + session(conn, THREAD)["cache_read_tokens"]
    assert parent_tokens == 2500
    assert s["input_tokens"] + s["cache_read_tokens"] == 2000
    total = conn.execute("SELECT sum(input_tokens + cache_read_tokens) FROM agent_usage").fetchone()[0]
    assert total == 4500


def test_subagent_rollout_links_to_its_parent_thread(conn, home):
    parent = Rollout(home, THREAD)
    parent.meta()
    parent.prompt("review this with a helper")
    parent.add(
        "response_item",
        {
            "type": "function_call",
            "name": "spawn_agent",
            "call_id": "spawn_1",
            "arguments": json.dumps({"message": "check the tests"}),
        },
    )
    parent.add(
        "event_msg",
        {
            "type": "collab_agent_spawn_end",
            "call_id": "spawn_1",
            "sender_thread_id": THREAD,
            "new_thread_id": CHILD,
            "new_agent_nickname": "Ada",
            "status": "running",
        },
    )
    parent.write()
    child = Rollout(home, CHILD)
    child.meta(
        source={
            "subagent": {
                "thread_spawn": {
                    "parent_thread_id": THREAD,
                    "depth": 1,
                    "agent_nickname": "Ada",
                    "agent_role": "explorer",
                }
            }
        }
    )
    child.prompt("check the tests")
    child.say("They pass.")
    child.write()
    ingest(conn, home)
    s = session(conn, CHILD)
    assert (s["kind"], s["is_subagent"], s["parent_session_id"], s["agent_type"]) == (
        "subagent",
        1,
        THREAD,
        "explorer",
    )
    call = conn.execute(
        "SELECT tool_name, child_agent_id FROM agent_tool_calls WHERE id = 'spawn_1'"
    ).fetchone()
    assert call == ("spawn_agent", CHILD)


def test_rollback_makes_a_branch(conn, home):
    r = Rollout(home, THREAD)
    r.meta()
    r.prompt("first")
    r.say("one")
    r.prompt("second")
    r.say("two")
    r.add("event_msg", {"type": "thread_rolled_back", "num_turns": 1})
    r.prompt("second, differently")
    r.say("two again")
    r.write()
    ingest(conn, home)
    assert session(conn, THREAD)["branch_count"] == 1
    turns = conn.execute(
        "SELECT id, parent_turn_id FROM agent_turns WHERE session_id = ? ORDER BY sequence", (THREAD,)
    ).fetchall()
    assert turns[1][1] == turns[0][0] and turns[2][1] == turns[0][0]


@pytest.mark.parametrize("turns", [1, 2])
def test_a_rollback_withdraws_what_it_took_back_even_to_the_first_turn(conn, home, turns):
    """A rollback of the last turn starts a branch at the turn before it, and what it took back is
    marked withdrawn; one of every turn (back to before the first prompt) started a tree of its
    own, which no rewind is read from: its turns were shown as if the model still had them."""
    from threadloom.core.read.browse import withdrawn_seqs

    r = Rollout(home, THREAD)
    r.meta()
    r.prompt("first")
    r.say("one")
    r.prompt("second")
    r.say("two")
    r.add("event_msg", {"type": "thread_rolled_back", "num_turns": turns})
    r.prompt("again")
    r.say("three")
    r.write()
    ingest(conn, home)
    gone = withdrawn_seqs(conn, THREAD)
    shown = conn.execute(
        "SELECT seq, content FROM entries WHERE session_id = ? AND seq IS NOT NULL AND content IS NOT NULL "
        "AND role IN ('user', 'assistant') AND is_meta = 0 ORDER BY seq",
        (THREAD,),
    ).fetchall()
    taken = {"one", "first", "second", "two"} if turns == 2 else {"second", "two"}
    assert {text for seq, text in shown if seq in gone} == taken
    assert all(seq not in gone for seq, text in shown if text in ("again", "three"))


def test_thread_names_are_titles(conn, home):
    r = Rollout(home, THREAD)
    r.meta()
    r.prompt("hello")
    r.add("event_msg", {"type": "thread_name_updated", "thread_id": THREAD, "thread_name": "Cart totals"})
    r.write()
    other = Rollout(home, CHILD)
    other.meta()
    other.prompt("another")
    other.write()
    (home / "session_index.jsonl").write_text(
        json.dumps({"id": CHILD, "thread_name": "Renamed in the app", "updated_at": "2026-03-02T11:00:00Z"})
        + "\n"
    )
    ingest(conn, home)
    assert session(conn, THREAD)["title"] == "Cart totals"
    assert session(conn, CHILD)["title"] == "Renamed in the app"


# ---------------------------------------------------------------------- TypeScript snapshots


def test_typescript_snapshots_collapse_into_one_conversation(conn, home):
    items = [
        {"role": "user", "type": "message", "content": [{"type": "input_text", "text": "rename foo to bar"}]},
        {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "grep first"}]},
        {
            "id": "fc_1",
            "type": "function_call",
            "call_id": "call_a",
            "name": "shell",
            "arguments": '{"command":["rg","foo"]}',
            "status": "completed",
        },
        {
            "type": "function_call_output",
            "call_id": "call_a",
            "output": '{"output":"a.py","metadata":{"exit_code":0}}',
        },
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Renamed.", "annotations": []}],
        },
    ]
    later = [
        *items,
        {"role": "user", "type": "message", "content": [{"type": "input_text", "text": "thanks"}]},
    ]
    a = snapshot(home, "11111111-1111-4111-8111-111111111111", items[:1])
    b = snapshot(home, "22222222-2222-4222-8222-222222222222", later)
    c = snapshot(home, "33333333-3333-4333-8333-333333333333", items)
    ingest(conn, home)
    sessions = conn.execute("SELECT id, turn_count, tool_call_count FROM agent_sessions").fetchall()
    assert len(sessions) == 1 and sessions[0][1:] == (2, 1)
    texts = conn.execute(
        "SELECT content FROM entries WHERE seq IS NOT NULL AND content IS NOT NULL ORDER BY seq"
    ).fetchall()
    assert [t[0] for t in texts] == ["rename foo to bar", "Renamed.", "thanks"]
    assert conn.execute("SELECT status FROM agent_tool_calls").fetchone()[0] == "completed"
    for path in (a, b, c):
        assert round_trips(conn, path)


# ---------------------------------------------------------------------- compressed rollouts


def test_zst_rollout_is_read_message_by_message_kept_whole_and_never_double_counted(conn, home, tmp_path):
    r = full_session(home)
    plain = r.write()
    packed = plain.with_name(plain.name + ".zst")
    packed.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    report = ingest(conn, home)
    assert report.files_read == 1  # while both exist, Codex itself reads the plain file
    before = session(conn, THREAD)
    plain.unlink()  # the compression worker removes the plain file
    ingest(conn, home)
    after = session(conn, THREAD)
    for key in ("turn_count", "message_count", "input_tokens", "output_tokens", "cache_read_tokens"):
        assert after[key] == before[key], key
    fid = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(packed.resolve()),)).fetchone()[0]
    assert file_bytes(conn, fid)[0] == packed.read_bytes()
    # never seen plain: the whole conversation is read from the compressed file
    other = db.connect(tmp_path / "other.db")
    ingest(other, home)
    s = session(other, THREAD)
    for key in (
        "title",
        "project_path",
        "turn_count",
        "message_count",
        "tool_call_count",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
    ):
        assert s[key] == before[key], key
    texts = [
        r[0]
        for r in other.execute(
            "SELECT content FROM entries WHERE session_id = ? AND seq IS NOT NULL AND content IS NOT NULL ORDER BY seq",
            (s["id"],),
        )
    ]
    plain_texts = [
        r[0]
        for r in conn.execute(
            "SELECT content FROM entries WHERE session_id = ? AND seq IS NOT NULL AND content IS NOT NULL "
            "AND dup_of IS NULL ORDER BY seq",
            (s["id"],),
        )
    ]
    assert texts == plain_texts and len(texts) >= 3
    from threadloom.core.actions.restore import restore_session
    from threadloom.core.read.archive import verify
    from threadloom.core.read.search import search

    assert search(other, "cart total").hits
    checked = verify(other)
    assert not checked.mismatches and checked.files_missing == 0 and checked.files_checked == 2
    restored = restore_session(other, s["id"], tmp_path / "restored")
    assert [Path(r.written_to).read_bytes() for r in restored] == [packed.read_bytes()]
    again = ingest(other, home)  # nothing changed: nothing read, the decoded log is not "gone"
    assert again.files_read == 0 and again.files_gone == 0
    assert other.execute("SELECT count(*) FROM source_files WHERE status = 'gone'").fetchone()[0] == 0
    # a ledger from before decoded logs existed reads its .zst files once more, then never again
    other.execute(
        "DELETE FROM entries WHERE source_file_id IN (SELECT id FROM source_files WHERE kind = 'decoded')"
    )
    other.execute("DELETE FROM source_files WHERE kind = 'decoded'")
    other.execute("DELETE FROM ledger_meta WHERE key LIKE 'reread:%'")
    assert ingest(other, home).files_read == 1 and ingest(other, home).files_read == 0
    assert session(other, THREAD)["message_count"] == s["message_count"]
    # a damaged compressed file is kept raw and says why
    packed.write_bytes(b"\x28\xb5\x2f\xfd" + b"garbage" * 10)
    ingest(other, home)
    error = other.execute(
        "SELECT parse_error FROM entries WHERE entry_type = 'compressed-rollout' ORDER BY id DESC LIMIT 1"
    ).fetchone()[0]
    assert error and error.startswith("cannot decompress")


# ---------------------------------------------------------------------- detection


def test_detection_keeps_claude_and_codex_apart(tmp_path, conn):
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "exported.jsonl").write_text(
        json.dumps(
            {
                "timestamp": "2026-01-01T00:00:00Z",
                "type": "session_meta",
                "payload": {"id": THREAD, "cwd": "/x"},
            }
        )
        + "\n"
    )
    claude = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "c1",
        "timestamp": "2026-01-01T00:00:00Z",
        "message": {"role": "user", "content": "hi"},
    }
    (folder / "notes.jsonl").write_text(json.dumps(claude) + "\n")
    run_ingest(conn, [folder], include_defaults=False)
    agents = dict(conn.execute("SELECT path, agent FROM source_files").fetchall())
    assert agents == {str(folder / "exported.jsonl"): "codex", str(folder / "notes.jsonl"): "claude-code"}
    assert not ADAPTERS["claude-code"].claims(folder / "exported.jsonl")
    assert not ADAPTERS["claude-code"].claims(folder / "rollout-2026-01-01T00-00-00-x.jsonl")


def test_a_jsonl_is_claude_codes_only_when_its_records_are(tmp_path, conn):
    """Away from Claude Code's own folders a JSONL is looked at: a rollout named like a Claude
    session is Codex's, any other tool's JSONL is nobody's, a Claude transcript stays Claude's."""
    folder = tmp_path / "downloads"
    folder.mkdir()
    rollout = folder / f"{THREAD}.jsonl"
    rollout.write_text(
        json.dumps(
            {
                "timestamp": "2026-01-01T00:00:00Z",
                "type": "session_meta",
                "payload": {"id": THREAD, "cwd": "/x"},
            }
        )
        + "\n"
    )
    (folder / "metrics.jsonl").write_text('{"step": 1, "loss": 0.5}\n{"step": 2, "loss": 0.4}\n')
    (folder / "events.jsonl").write_text('{"type": "user", "text": "not a transcript"}\n')
    claude = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "c1",
        "timestamp": "2026-01-01T00:00:00Z",
        "message": {"role": "user", "content": "hi"},
    }
    (folder / "c1.jsonl").write_text(json.dumps(claude) + "\n")
    run_ingest(conn, [folder], include_defaults=False)
    agents = {Path(p).name: a for p, a in conn.execute("SELECT path, agent FROM source_files")}
    assert agents == {rollout.name: "codex", "c1.jsonl": "claude-code"}
    for name in ("metrics.jsonl", "events.jsonl", rollout.name):
        assert not ADAPTERS["claude-code"].claims(folder / name)


# ---------------------------------------------------------------------- corpus

CODEX = CORPUS / "codex"


@pytest.mark.corpus
@pytest.mark.skipif(not CODEX.is_dir(), reason="../shared/corpus/codex is not present")
def test_corpus_codex(tmp_path):
    conn = db.connect(tmp_path / "corpus.db")
    report = run_ingest(conn, [CODEX], include_defaults=False)
    assert not report.errors, report.errors
    files = sorted(CODEX.rglob("*.jsonl"))
    assert len(files) >= 9
    lines = 0
    for path in files:
        row = conn.execute(
            "SELECT id, agent FROM source_files WHERE path = ?", (str(path.resolve()),)
        ).fetchone()
        assert row is not None and row[1] == "codex", path
        assert round_trips(conn, path), path
        data = path.read_bytes()
        count = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
        lines += count
        assert (
            conn.execute("SELECT count(*) FROM entries WHERE source_file_id = ?", (row[0],)).fetchone()[0]
            == count
        )
    assert report.records_added == lines
    sessions = dict(
        conn.execute("SELECT id, turn_count FROM agent_sessions WHERE source = 'codex'").fetchall()
    )
    assert len(sessions) == len(files)
    assert sessions["44444444-4444-4444-8444-444444444444"] == 1  # bare era
    assert sessions["019b2ea4-aaaa-bbbb-cccc-58208e1f0000"] == 6
    assert sessions["019fc8be-3658-7ca3-9e29-000000000000"] >= 2
    # tokens as Codex reports them: every distinct request once, cached input apart
    tokens = dict(
        conn.execute(
            "SELECT id, input_tokens + cache_read_tokens + output_tokens FROM agent_sessions"
        ).fetchall()
    )
    assert tokens["test-ratelimit-session"] == 12091 + 182
    assert tokens["019b2ea4-aaaa-bbbb-cccc-58208e1f0000"] == 12091 + 182
    assert tokens["codex:session-alpha"] == 1000 + 125 + 2500 + 300  # no id inside: its name, marked
    assert tokens["019fc8be-3658-7ca3-9e29-000000000000"] == 16341 + 81
    assert tokens["test-legacy-session"] == 0  # `info: {prompt, completion}` is no Codex shape
    conn.close()


def test_a_byte_order_mark_before_the_session_meta(conn, home):
    path = full_session(home).write()
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    ingest(conn, home)
    assert conn.execute("SELECT count(*) FROM entries WHERE parse_error IS NOT NULL").fetchone()[0] == 0
    s = session(conn, THREAD)
    assert (s["project_path"], s["cli_version"], s["git_branch"], s["turn_count"]) == (
        "/home/dev/shop",
        "0.101.0",
        "feature/cart",
        2,
    )
    assert round_trips(conn, path)


def test_response_items_of_every_kind_are_shown(conn, home):
    """Items that are not `"type": "message"` (reasoning, calls of each kind), the short `{role,
    content}` form with no type, and a kind this version does not know: each is kept and shown."""
    r = Rollout(home, THREAD)
    r.meta()
    r.context()
    r.add(
        "response_item", {"role": "user", "content": [{"type": "input_text", "text": "list the big files"}]}
    )
    r.add(
        "response_item", {"type": "reasoning", "summary": [], "content": None, "encrypted_content": "gAAAA"}
    )
    r.add(
        "response_item",
        {
            "type": "local_shell_call",
            "call_id": "ls1",
            "status": "completed",
            "action": {"type": "exec", "command": ["du", "-sh", "."]},
        },
    )
    r.add("response_item", {"type": "function_call_output", "call_id": "ls1", "output": "4.0M\t."})
    r.add(
        "response_item",
        {
            "type": "web_search_call",
            "id": "ws1",
            "status": "completed",
            "action": {"type": "search", "query": "du sort by size"},
        },
    )
    # Codex 0.116+ writes searches with no id (a real 0.117 rollout had 11 of 42 calls so): still calls
    r.add(
        "response_item",
        {
            "type": "web_search_call",
            "status": "completed",
            "action": {"type": "open_page", "url": "https://x.io/"},
        },
    )
    r.add(
        "response_item",
        {"type": "custom_tool_call", "call_id": "ap1", "name": "apply_patch", "input": "*** Begin Patch"},
    )
    r.add(
        "response_item",
        {"type": "tool_call", "function": {"name": "run_shell_command"}, "arguments": {"command": "ls -S"}},
    )
    r.add(
        "response_item",
        {"type": "function_call", "name": "shell", "arguments": json.dumps({"command": ["ls"]})},
    )
    r.add(
        "response_item",
        {"role": "assistant", "content": [{"type": "output_text", "text": "big.bin is the biggest."}]},
    )
    r.write()
    ingest(conn, home)
    rows = conn.execute(
        "SELECT role, content, thinking, is_meta FROM entries WHERE session_id = ? AND seq IS NOT NULL "
        "ORDER BY seq",
        (THREAD,),
    ).fetchall()
    assert rows[0] == ("user", "list the big files", None, 0)
    assert rows[1] == ("assistant", None, "[encrypted reasoning]", 0)
    assert [r[0] for r in rows[2:7]] == [
        "assistant",
        "user",
        "assistant",
        "assistant",
        "assistant",
    ]  # shell, its output, search, search, patch
    assert (
        rows[7][0] == "assistant"
        and rows[7][1].startswith("[tool_call] ")
        and "ls -S" in rows[7][1]
        and rows[7][3] == 1
    )
    assert rows[8][0] == "assistant" and rows[8][1] is None  # a call written without an id: shown as a call
    assert rows[9] == ("assistant", "big.bin is the biggest.", None, 0)
    calls = {
        call_id: (name, status)
        for call_id, name, status in conn.execute("SELECT id, tool_name, status FROM agent_tool_calls")
    }
    assert calls == {
        "ls1": ("local_shell", "completed"),
        "ws1": ("web_search", "completed"),
        f"{THREAD}:8:call": ("web_search", "completed"),
        "ap1": ("apply_patch", "pending"),
        f"{THREAD}:11:call": ("shell", "pending"),
    }
    s = session(conn, THREAD)
    assert (s["turn_count"], s["title"]) == (1, "list the big files")


def test_a_rollout_without_an_id_is_never_merged_into_another_agents_session(conn, tmp_path):
    """A rollout that names no session (no session_meta, no UUID in its file name) takes its file
    name as its id, marked as Codex's: a Claude Code session whose id is the same word stays its
    own session (the corpus's two `session-alpha` files became one, 125 days long)."""
    from tests.builders.claude import Transcript

    rollout = Rollout(tmp_path / "codex" / "project-alpha", "unused")
    rollout.path = tmp_path / "codex" / "project-alpha" / "session-alpha.jsonl"
    rollout.prompt("count the tokens")
    rollout.say("Counting.")
    rollout.write()
    claude = Transcript(
        tmp_path / "claude" / "project-alpha" / "session-alpha" / "chat.jsonl", "session-alpha"
    )
    claude.user("hello")
    claude.assistant("hi")
    claude.write()
    ingest(conn, rollout.path, claude.path)
    rows = dict(conn.execute("SELECT id, source FROM agent_sessions ORDER BY id"))
    assert rows == {"codex:session-alpha": "codex", "session-alpha": "claude-code"}
    counts = dict(conn.execute("SELECT session_id, count(*) FROM entries GROUP BY session_id"))
    assert counts == {"codex:session-alpha": len(rollout.lines), "session-alpha": len(claude.lines)}


def test_a_prompt_is_shown_with_no_model(conn, home, tmp_path, capsys):
    """Codex names the turn's model on every item: `show` printed it beside each prompt and tool
    output ("user 2026-04-02 04:58  gpt-5.4"), as if the model had written them; it is shown on
    what the model wrote only, as the exports show it."""
    from threadloom.core.cli import main

    full_session(home).write()
    ingest(conn, home)
    conn.close()
    assert main(["--db", str(tmp_path / "ledger.db"), "show", THREAD]) == 0
    heads = [
        line for line in capsys.readouterr().out.splitlines() if line.startswith(("user ", "assistant "))
    ]
    assert heads and any(h.startswith("assistant ") and "gpt" in h for h in heads)
    assert not [h for h in heads if h.startswith("user ") and "gpt" in h], heads


def test_injected_context_is_kept_but_not_shown_as_the_users_words(conn, home):
    """`<environment_context>` and AGENTS.md, which Codex gives the model as user messages, are
    context, not prompts: neither `show` nor the viewer (both read the messages) lists them, as
    Cline's environment details are not; the cwd is still read from them."""
    from threadloom.core.read.query import messages

    r = Rollout(home, THREAD)
    r.meta()
    r.context()
    env = "<environment_context>\n  <cwd>/home/dev/shop</cwd>\n  <shell>zsh</shell>\n</environment_context>"
    for text in ("# AGENTS.md instructions for /home/dev/shop\n\n<INSTRUCTIONS>be brief</INSTRUCTIONS>", env):
        r.add(
            "response_item",
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
        )
    r.add("event_msg", {"type": "user_message", "message": env, "images": []})
    r.prompt("add a cart")
    r.say("Added.")
    r.write()
    ingest(conn, home)
    shown = [(m.role, m.content) for m in messages(conn, THREAD) if m.content]
    assert shown == [("user", "add a cart"), ("assistant", "Added.")]
    assert session(conn, THREAD)["project_path"] == "/home/dev/shop"


def test_a_call_named_inside_its_function_object_keeps_its_name(conn, home):
    """`{"type":"function_call","function":{"name":"translate"},…}` (a drifted writer's shape) is
    the call `translate`, not `tool_search`, the name of a call written with none."""
    path = home / "sessions" / "2025" / "09" / "10" / f"rollout-2025-09-10T12-00-00-{THREAD}.jsonl"
    lines = [
        {"id": THREAD, "timestamp": "2025-09-10T12:00:00.000Z", "instructions": None},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "say hello in Spanish"}],
        },
        {
            "type": "function_call",
            "function": {"name": "translate"},
            "arguments": {"text": "hello", "to": "es"},
        },
    ]
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    ingest(conn, home)
    assert [r[0] for r in conn.execute("SELECT tool_name FROM agent_tool_calls")] == ["translate"]


def test_a_session_opened_and_left_without_a_prompt_holds_no_message(conn, home):
    """Codex 0.9x-0.12x writes its instructions to the model as developer messages (permissions,
    skills, collaboration mode), each part one tagged block: a session opened and closed with no
    prompt was listed as '(untitled) · 1 message' (30 of 61 sessions of a real 2026 home)."""
    blocks = [
        "<permissions instructions>\nFilesystem sandboxing defines which files can be read.\n</permissions instructions>",
        "<skills_instructions>\n## Skills\nA skill is a set of local instructions.\n</skills_instructions>",
    ]
    developer = {
        "type": "message",
        "role": "developer",
        "content": [{"type": "input_text", "text": b} for b in blocks],
    }
    empty = Rollout(home, THREAD)
    empty.meta()
    empty.add("response_item", developer)
    empty.write()
    talked = Rollout(home, CHILD, day="2026/03/03")
    talked.meta(id=CHILD)
    talked.add("response_item", developer)
    talked.context()
    talked.prompt("list the files")
    talked.say("Two files.")
    talked.write()
    ingest(conn, home)
    assert session(conn, THREAD)["message_count"] == 0
    assert [(m.role, m.content) for m in messages(conn, CHILD) if m.content] == [
        ("user", "list the files"),
        ("assistant", "Two files."),
    ]
