"""Every real and fixture Claude Code file in ../shared/corpus: byte-exact, linked, tokens right."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.read.archive import file_bytes
from threadloom.core.store import db

from tests.conftest import CORPUS

CLAUDE = CORPUS / "claude-code"
pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(not CLAUDE.is_dir(), reason="../shared/corpus/claude-code is not present"),
]


@pytest.fixture(scope="module")
def ledger(tmp_path_factory):
    conn = db.connect(tmp_path_factory.mktemp("corpus") / "corpus.db")
    report = run_ingest(conn, [CLAUDE], include_defaults=False)
    assert not report.errors, report.errors
    yield conn, report
    conn.close()


def jsonl_files() -> list[Path]:
    return sorted(CLAUDE.rglob("*.jsonl"))


def test_every_line_is_a_row_and_round_trips_byte_for_byte(ledger):
    conn, report = ledger
    files = jsonl_files()
    assert len(files) >= 130
    for path in files:
        data = path.read_bytes()
        row = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(path.resolve()),)).fetchone()
        assert row is not None, path
        rebuilt, contiguous = file_bytes(conn, row[0])
        assert contiguous and rebuilt == data, path
        lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
        count = conn.execute("SELECT count(*) FROM entries WHERE source_file_id = ?", (row[0],)).fetchone()[0]
        assert count == lines, path


def test_documents_round_trip_too(ledger):
    conn, _ = ledger
    for path in sorted(CLAUDE.rglob("*.meta.json")):
        row = conn.execute("SELECT id FROM source_files WHERE path = ?", (str(path.resolve()),)).fetchone()
        assert row is not None and file_bytes(conn, row[0])[0] == path.read_bytes(), path


def test_subagent_files_link_to_their_parent(ledger):
    conn, _ = ledger
    expected: dict[str, str] = {}
    for path in jsonl_files():
        for line in path.read_bytes().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            tur = rec.get("toolUseResult") if isinstance(rec, dict) else None
            if not isinstance(tur, dict) or not isinstance(tur.get("agentId"), str):
                continue
            content = (rec.get("message") or {}).get("content")
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    expected[f"{rec.get('sessionId')}:agent-{tur['agentId']}"] = block["tool_use_id"]
    linked = 0
    for sid, tool_use_id in expected.items():
        row = conn.execute(
            "SELECT tool_call_id, parent_session_id FROM agent_sessions WHERE id = ?", (sid,)
        ).fetchone()
        if row is None:
            continue  # the fixture did not include that agent's file
        assert row[0] == tool_use_id, sid
        assert row[1] is not None
        linked += 1
    assert linked >= 10
    # every subagent file's session names its parent session
    orphans = conn.execute(
        "SELECT count(*) FROM agent_sessions WHERE is_subagent = 1 AND parent_session_id IS NULL"
    ).fetchone()[0]
    assert orphans == 0
    real = conn.execute(
        "SELECT tool_call_id, task_description FROM agent_sessions WHERE id = "
        "'ef958aa1-0e93-49f0-bb71-150f63befcd1:agent-a4ca7529859c158c2'"
    ).fetchone()
    assert real == ("toolu_01GmrK6tgdD9D5xD6W5X9UUy", "Research Claude Code plan mode")


def test_token_totals_equal_an_independent_dedup(ledger):
    conn, _ = ledger
    groups: dict[str, list[int]] = {}
    for path in jsonl_files():
        if path.name == "journal.jsonl":
            continue
        offset = 0
        for line in path.read_bytes().split(b"\n"):
            here, offset = offset, offset + len(line) + 1
            try:
                rec = json.loads(line.lstrip(b"\x00").decode("utf-8", "replace"))
            except ValueError:
                continue
            if not isinstance(rec, dict) or not isinstance(rec.get("message"), dict):
                continue
            msg = rec["message"]
            if rec.get("type") != "assistant" and not (
                rec.get("type") is None and msg.get("role") == "assistant"
            ):
                continue
            usage = msg.get("usage")
            if (
                not isinstance(usage, dict)
                or msg.get("model") == "<synthetic>"
                or rec.get("isApiErrorMessage")
            ):
                continue
            key = msg.get("id") or rec.get("uuid") or f"{path}:{here}"
            values = [
                usage.get(k) or 0
                for k in (
                    "input_tokens",
                    "output_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                )
            ]
            old = groups.get(key)
            groups[key] = values if old is None else [max(a, b) for a, b in zip(old, values, strict=True)]
    expected = [sum(v[i] for v in groups.values()) for i in range(4)]
    got = list(
        conn.execute(
            "SELECT sum(input_tokens), sum(output_tokens), sum(cache_creation_tokens), sum(cache_read_tokens) "
            "FROM agent_sessions"
        ).fetchone()
    )
    assert got == expected
    assert expected[1] > 100_000


def test_incremental_rerun_reads_nothing(ledger):
    conn, _ = ledger
    again = run_ingest(conn, [CLAUDE], include_defaults=False)
    assert (again.files_read, again.bytes_read, again.records_added) == (0, 0, 0)


def test_known_sessions_look_right(ledger):
    conn, report = ledger
    summary = conn.execute(
        "SELECT title, title_source, project_path FROM agent_sessions WHERE id = '1af7fc5e-8455-4414-9ccd-011d40f70b2a'"
    ).fetchone()
    assert summary[0] == "Empty Repo Setup: CLAUDE.md Foundation Created" and summary[1] == "summary"
    warmups = conn.execute("SELECT count(*) FROM agent_sessions WHERE is_warmup = 1").fetchone()[0]
    assert warmups >= 20
    print(
        f"\ncorpus: {report.files_read} files, {report.records_added} records, {report.sessions_total} sessions"
    )
