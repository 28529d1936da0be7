"""Claude Code's sessions its own cleanup will delete soon and the archive lacks: counted by their
last change against `cleanupPeriodDays`, archived when the archive holds them as they are."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest
from threadloom.core.actions.cleanup import claude_risk

from tests.conftest import Transcript, ingest

DAY = 86_400
NOW = time.time()


def session(projects: Path, n: int, days_old: float) -> Path:
    sid = f"66666666-aaaa-4bbb-8ccc-{n:012d}"
    t = Transcript(projects / "-home-dev-app" / f"{sid}.jsonl", sid)
    t.user(f"question {n}")
    path = t.write()
    when = NOW - days_old * DAY
    os.utime(path, (when, when))
    return path


@pytest.fixture
def claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / ".claude"
    (config / "projects").mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    return config


def test_sessions_near_the_cleanup_and_not_archived_are_counted(
    conn: sqlite3.Connection, claude: Path
) -> None:
    projects = claude / "projects"
    archived_old = session(projects, 1, 40)
    ingest(conn, archived_old)  # archived as it is: safe whatever its age
    session(projects, 2, 45)  # due: deleted at Claude Code's next start
    session(projects, 3, 31)
    session(projects, 4, 25)  # within the week before
    session(projects, 5, 10)  # not yet near it
    grown = session(projects, 6, 50)
    ingest(conn, grown)
    with grown.open("a") as f:  # changed since it was archived: its last change is now
        f.write("{}\n")
    (projects / "-home-dev-app" / "notes.txt").write_text("not a session")

    risk = claude_risk(conn, now_ms=int(NOW * 1000))
    assert risk is not None
    assert (risk.period_days, risk.setting, risk.margin_days) == (30, "default", 7)
    assert (risk.sessions, risk.unarchived, risk.at_risk, risk.overdue) == (6, 5, 3, 2)
    assert risk.oldest_ms is not None and abs(risk.oldest_ms / 1000 - (NOW - 45 * DAY)) < 2
    message = risk.message()
    assert (
        "Claude Code deletes sessions 30 days after their last change (cleanupPeriodDays, default)" in message
    )
    assert "3 not archived yet will be deleted within 7 days, 2 of them already due" in message
    assert "`threadloom service install`" in message

    nothing = claude_risk(None, now_ms=int(NOW * 1000))  # no archive yet: every session counts
    assert nothing is not None and (nothing.unarchived, nothing.at_risk) == (6, 4)


def test_the_period_comes_from_claude_codes_settings(claude: Path) -> None:
    session(claude / "projects", 1, 50)
    settings = claude / "settings.json"
    settings.write_text(json.dumps({"cleanupPeriodDays": 90, "model": "opus"}))
    risk = claude_risk(None)
    assert risk is not None and (risk.period_days, risk.margin_days, risk.at_risk) == (90, 7, 0)
    assert risk.setting == f"set in {settings}" and risk.message() == ""
    settings.write_text(json.dumps({"cleanupPeriodDays": 8}))
    risk = claude_risk(None)
    assert risk is not None and (risk.margin_days, risk.at_risk, risk.overdue) == (2, 1, 1)
    settings.write_text("{not json")
    risk = claude_risk(None)
    assert risk is not None and risk.setting == "default" and risk.period_days == 30
    settings.write_text(json.dumps({"cleanupPeriodDays": 0}))
    assert claude_risk(None) is None  # no age-based cleanup to warn of


def test_no_claude_projects_no_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "absent"))
    assert claude_risk(None) is None
