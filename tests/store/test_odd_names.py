"""A name that is not UTF-8 (a folder or a file under the agents' folders, as a backup from another
system leaves them) never stops the others: the good sessions beside it are stored, and the ones
that cannot be named are said by every ingest's first look, then by `verify` and `sources`."""

from __future__ import annotations

import json
import os
from pathlib import Path

from threadloom.core.actions.restore import restore_session
from threadloom.core.cli import main
from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.read.archive import verify
from threadloom.core.store import db

GOOD = "11111111-1111-4111-8111-111111111111"


def record(sid: str, text: str) -> bytes:
    line = {
        "type": "user",
        "uuid": f"u-{sid[:8]}",
        "parentUuid": None,
        "sessionId": sid,
        "cwd": "/srv/app",
        "timestamp": "2026-03-01T10:00:00Z",
        "message": {"role": "user", "content": text},
    }
    return json.dumps(line).encode() + b"\n"


def test_names_that_are_not_utf8_are_stored_shown_escaped_and_restored_to_the_same_bytes(tmp_path, capsys):
    projects = os.fsencode(tmp_path / "projects")
    os.makedirs(projects + b"/-srv-good")
    os.makedirs(projects + b"/-srv-\xff\xfeodd")
    Path(os.fsdecode(projects + f"/-srv-good/{GOOD}.jsonl".encode())).write_bytes(record(GOOD, "a good one"))
    odd_folder = projects + b"/-srv-\xff\xfeodd/22222222-2222-4222-8222-222222222222.jsonl"
    Path(os.fsdecode(odd_folder)).write_bytes(
        record("22222222-2222-4222-8222-222222222222", "in an odd folder")
    )
    odd_file = projects + b"/-srv-good/33333333-3333-4333-8333-\xe9.jsonl"
    Path(os.fsdecode(odd_file)).write_bytes(record("33333333-3333-4333-8333-333333333333", "an odd name"))
    database = tmp_path / "t.db"
    conn = db.connect(database)
    try:
        first = run_ingest(conn, [Path(os.fsdecode(projects))], include_defaults=False)
        assert first.errors == [] and first.files_read == 3
        again = run_ingest(conn, [Path(os.fsdecode(projects))], include_defaults=False)
        assert again.files_read == 0 and again.files_skipped == 3  # known by their own names
        ids = sorted(r[0] for r in conn.execute("SELECT id FROM agent_sessions"))
        assert ids == [GOOD, "22222222-2222-4222-8222-222222222222", "33333333-3333-4333-8333-333333333333"]
        assert verify(conn).ok and verify(conn).files_checked == 3
        # the odd file's records gone from disk and back: restored under its own bytes
        restored = restore_session(conn, "33333333-3333-4333-8333-333333333333", tmp_path / "back")
        assert [os.fsencode(r.written_to) for r in restored] == [
            os.fsencode(tmp_path / "back") + b"/-srv-good/33333333-3333-4333-8333-\xe9.jsonl"
        ]
        [odd] = restore_session(conn, "22222222-2222-4222-8222-222222222222", tmp_path / "back")
        assert os.fsencode(odd.written_to).endswith(
            b"/-srv-\xff\xfeodd/22222222-2222-4222-8222-222222222222.jsonl"
        )
        assert Path(odd.written_to).read_bytes() == Path(os.fsdecode(odd_folder)).read_bytes()
    finally:
        conn.close()
    # shown escaped wherever a path is printed: an edit verify finds names the file so
    odd = Path(os.fsdecode(odd_file))
    odd.write_bytes(odd.read_bytes().replace(b"an odd name", b"AN ODD NAME"))
    capsys.readouterr()
    assert main(["verify", "--db", str(database)]) == 1
    assert "-srv-good/33333333-3333-4333-8333-\\xe9.jsonl: 1 record differs" in capsys.readouterr().out
