"""The first sync from the TUI (tui.sync, against a real PostgreSQL hub: tests/pg_support.py): `U`
asks what leaves this machine, none of its projects checked; only the one checked is pushed, the
choice is remembered, and the next `U` syncs without asking."""

from __future__ import annotations

from pathlib import Path

import psycopg
from textual.widgets import Input, SelectionList
from threadloom.core.ingest import sync
from threadloom.core.store import db
from threadloom.tui.app import ThreadloomApp
from threadloom.tui.sync import SyncScreen

from tests.builders.memory import API, WEB, write_archive
from tests.pg_support import PgServer
from tests.tui_support import fixed_now, run_test, settle, until


def pushed_paths(url: str) -> list[str]:
    with psycopg.connect(url) as c:
        return sorted(bytes(r[0]).decode() for r in c.execute("SELECT path FROM threadloom.sources"))


async def test_the_first_sync_asks_what_is_shared(tmp_path: Path, pg_server: PgServer, hub_db: str) -> None:
    url = pg_server.url(hub_db)
    sync.init_hub(url)
    path, _ = write_archive(tmp_path)
    app = ThreadloomApp(db_path=path, ingest=False, now=fixed_now)
    async with run_test(app, size=(150, 44)) as pilot:
        await pilot.pause()
        await pilot.press("U")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SyncScreen)
        assert {p.path for p in screen.projects} == {"/srv/api", "/srv/web"}
        projects = screen.query_one(SelectionList)
        assert projects.selected == []  # nothing leaves the machine unless chosen
        screen.query_one("#sync-url", Input).value = url
        projects.select("project:/srv/api")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: len(pushed_paths(url)) == 1, timeout=20)
        await settle(pilot)
        assert API in pushed_paths(url)[0] and not isinstance(app.screen, SyncScreen)
        await pilot.press("U")  # remembered: no question the second time
        await settle(pilot)
        assert not isinstance(app.screen, SyncScreen)
    conn = db.connect(path)
    try:
        hub, sharing = sync.configured(conn)
        assert hub == url and sharing is not None and sharing.share == ["project:/srv/api"]
    finally:
        conn.close()
    assert WEB not in " ".join(pushed_paths(url))
