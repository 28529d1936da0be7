"""Another machine's sessions in the TUI: pulled from a sync hub, each row says its machine."""

from __future__ import annotations

from pathlib import Path

from threadloom.core.browse import project_sessions
from threadloom.tui.panes import session_label

from tests.pg_support import PgServer, hub_db, pg_server  # noqa: F401 - fixtures
from tests.store.test_sync import A, B, Machine, _session
from tests.tui_support import fixed_now


def test_a_pulled_sessions_row_names_its_machine(tmp_path: Path, pg_server: PgServer, hub_db: str) -> None:  # noqa: F811
    from threadloom.core import sync

    url = pg_server.url(hub_db)
    sync.init_hub(url)
    laptop, box = Machine(tmp_path, "laptop"), Machine(tmp_path, "box")
    _session(laptop.root, A, "/srv/app")
    _session(box.root, B, "/srv/app")
    laptop.ingest()
    box.ingest()
    laptop.sync(url)
    box.sync(url)
    rows = {s.id: s for s in project_sessions(box.conn, "/srv/app")}
    assert rows[A].machine == "laptop" and rows[B].machine is None
    assert session_label(rows[A], 90, fixed_now()).plain.startswith("@laptop question 0")
    assert not session_label(rows[B], 90, fixed_now()).plain.startswith("@")
