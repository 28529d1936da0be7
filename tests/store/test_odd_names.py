"""A name that is not UTF-8 (a folder or a file under the agents' folders, as a backup from another
system leaves them) never stops the others: the good sessions beside it are stored, and the ones
that cannot be named are said by every ingest's first look, then by `verify` and `sources`."""

from __future__ import annotations

import json
import os
from pathlib import Path

from threadloom.core import db
from threadloom.core.archive import verify
from threadloom.core.ingest import run_ingest

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


def test_names_that_are_not_utf8_never_stop_the_other_files(tmp_path):
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
    conn = db.connect(tmp_path / "t.db")
    try:
        for run in range(
            2
        ):  # the second run finds the folders unchanged: nothing is said twice, nothing fails
            report = run_ingest(conn, [Path(os.fsdecode(projects))], include_defaults=False)
            if run == 0:
                assert len(report.errors) == 2 and all("not valid UTF-8" in e for e in report.errors)
                assert any("-srv-\\xff\\xfeodd" in e for e in report.errors)
        assert [r[0] for r in conn.execute("SELECT id FROM agent_sessions")] == [GOOD]
        said = verify(conn).not_stored
        assert len(said) == 2 and all("\\x" in path for path, _ in said)
    finally:
        conn.close()
