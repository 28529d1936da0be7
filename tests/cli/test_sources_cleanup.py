"""`threadloom sources` warns of the sessions Claude Code's cleanup will delete that the archive lacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.builders.claude import Transcript
from tests.support import home_env

ROOT = Path(__file__).resolve().parents[2]


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "threadloom.core.cli", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_sources_says_what_cleanup_will_delete_and_what_keeps_it(tmp_path: Path) -> None:
    env = home_env(tmp_path)
    projects = Path(env["CLAUDE_CONFIG_DIR"]) / "projects"
    db = tmp_path / "a.db"
    old = []
    for n, days in enumerate((40, 26, 3)):
        sid = f"55555555-aaaa-4bbb-8ccc-{n:012d}"
        t = Transcript(projects / "-home-dev-app" / f"{sid}.jsonl", sid)
        t.user("hello")
        path = t.write()
        when = time.time() - days * 86_400
        os.utime(path, (when, when))
        old.append(when)
    assert (
        cli(env, "ingest", "--db", str(db), "--only", "--source", str(tmp_path / "nothing-here")).returncode
        == 0
    )

    text = cli(env, "sources", "--db", str(db))
    assert text.returncode == 0, text.stderr
    day = time.strftime("%Y-%m-%d", time.localtime(old[0]))
    assert (
        "warning: Claude Code deletes sessions 30 days after their last change (cleanupPeriodDays, default): "
        "2 not archived yet will be deleted within 7 days, 1 of them already due (deleted at its next start); "
        f"the oldest was last changed on {day}." in text.stdout
    )
    assert "`threadloom service install` keeps archiving with threadloom closed" in text.stdout

    [entry] = json.loads(cli(env, "sources", "--db", str(db), "--json").stdout)["cleanup"]
    assert {
        k: entry[k] for k in ("agent", "period_days", "sessions", "unarchived", "at_risk", "overdue")
    } == {
        "agent": "claude-code",
        "period_days": 30,
        "sessions": 3,
        "unarchived": 3,
        "at_risk": 2,
        "overdue": 1,
    }

    assert cli(env, "ingest", "--db", str(db)).returncode == 0  # archived now: nothing left to warn of
    calm = cli(env, "sources", "--db", str(db))
    assert "warning:" not in calm.stdout
    assert "of its 3 sessions here, 0 are not archived yet" in calm.stdout
    assert json.loads(cli(env, "sources", "--db", str(db), "--json").stdout)["cleanup"][0]["at_risk"] == 0


def test_sources_works_before_the_first_ingest_without_making_the_database(tmp_path: Path) -> None:
    """Where threadloom looks and what cleanup will delete soon matter most before anything is
    archived: said with no database, and none is made for it."""
    env = home_env(tmp_path)
    projects = Path(env["CLAUDE_CONFIG_DIR"]) / "projects"
    sid = "55555555-aaaa-4bbb-8ccc-000000000009"
    t = Transcript(projects / "-home-dev-app" / f"{sid}.jsonl", sid)
    t.user("hello")
    when = time.time() - 26 * 86_400
    os.utime(t.write(), (when, when))
    db = tmp_path / "fresh" / "a.db"

    text = cli(env, "sources", "--db", str(db))
    assert text.returncode == 0, text.stderr
    assert f"not created yet: nothing is archived; `threadloom ingest --db {db}`" in text.stdout
    assert f"claude-code  {projects}  (1 file)" in text.stdout
    assert "warning: Claude Code deletes sessions 30 days after their last change" in text.stdout
    data = json.loads(cli(env, "sources", "--db", str(db), "--json").stdout)
    assert data["database_exists"] is False and data["remembered_sources"] == [] and data["sync"] is None
    assert data["cleanup"][0]["unarchived"] == 1
    assert not db.parent.exists()
