"""The first screen says how many Claude Code sessions its cleanup will delete soon that the
archive lacks, and what keeps them (reading them now, and `threadloom service install`)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from threadloom.tui import workers
from threadloom.tui.app import ThreadloomApp

from tests.builders.claude import Transcript
from tests.tui_support import fixed_now, run_test, until

TITLE = "Sessions about to be deleted"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A made-up home with two Claude Code sessions of 40 and 26 days ago, and one of yesterday."""
    home = tmp_path / "home"
    for name, value in {
        "HOME": home,
        "CLAUDE_CONFIG_DIR": home / ".claude",
        "CODEX_HOME": home / ".codex",
        "XDG_DATA_HOME": home / ".local" / "share",
        "XDG_CONFIG_HOME": home / ".config",
    }.items():
        monkeypatch.setenv(name, str(value))
    for n, days in enumerate((40, 26, 1)):
        sid = f"44444444-aaaa-4bbb-8ccc-{n:012d}"
        t = Transcript(home / ".claude" / "projects" / "-home-dev-app" / f"{sid}.jsonl", sid)
        t.user("hello")
        path = t.write()
        when = time.time() - days * 86_400
        os.utime(path, (when, when))
    return home


@pytest.mark.parametrize("reading", [True, False])
async def test_the_first_screen_warns_of_what_cleanup_will_delete(
    home: Path, tmp_path: Path, reading: bool
) -> None:
    app = ThreadloomApp(db_path=tmp_path / "a.db", ingest=reading, now=fixed_now)
    async with run_test(app, size=(140, 40)) as pilot:
        await until(pilot, lambda: any(n.title == TITLE for n in app._notifications))
        [said] = [n.message for n in app._notifications if n.title == TITLE]
        assert "Claude Code deletes sessions 30 days after their last change" in said
        assert "2 not archived yet will be deleted within 7 days, 1 of them already due" in said
        assert ("threadloom is reading them now" in said) == reading
        assert ("`threadloom ingest` archives them now" in said) == (not reading)
        assert "`threadloom service install` keeps archiving with threadloom closed" in said


async def test_no_warning_when_everything_is_archived(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = ThreadloomApp(db_path=tmp_path / "a.db", ingest=True, now=fixed_now)
    async with run_test(app, size=(140, 40)) as pilot:
        await until(pilot, lambda: app.last_report is not None)
    looked: list[object] = []
    check = workers.check_cleanup
    monkeypatch.setattr(workers, "check_cleanup", lambda db: looked.append(check(db)) or looked[-1])
    app = ThreadloomApp(db_path=tmp_path / "a.db", ingest=False, now=fixed_now)
    async with run_test(app, size=(140, 40)) as pilot:
        await until(pilot, lambda: looked)
        await pilot.pause()
        assert looked == [None]
        assert not any(n.title == TITLE for n in app._notifications)
