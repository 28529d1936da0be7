"""`h` hides a session or a project from the lists (not from the archive), `H` lists the hidden
ones too, marked; what is hidden is remembered in the archive across launches."""

from __future__ import annotations

from pathlib import Path

from threadloom.core.actions.hidden import read_hidden
from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.store import db
from threadloom.tui.messages import MessageView
from threadloom.tui.panes import ProjectList, SessionTree

from tests.builders.claude import Transcript
from tests.tui_support import make_app, run_test, settle, type_ahead, until

OLD = "a1000000-0000-4000-8000-0000000000a1"
NEW = "a2000000-0000-4000-8000-0000000000a2"
WEB = "b1000000-0000-4000-8000-0000000000b1"


def archive(tmp_path: Path) -> Path:
    root = tmp_path / "projects"
    for sid, cwd, prompt, minute in ((OLD, "/srv/api", "Old spike on caching", 1), (NEW, "/srv/api", "Ship the rate limiter", 5), (WEB, "/srv/web", "Try the new bundler", 3)):  # fmt: skip
        t = Transcript(
            root / cwd.replace("/", "-") / f"{sid}.jsonl",
            sid,
            cwd=cwd,
            timestamp=f"2025-06-12T10:0{minute}:00.000Z",
        )
        t.user(prompt)
        t.assistant("Done.")
        t.write()
    path = tmp_path / "t.db"
    conn = db.connect(path)
    run_ingest(conn, [root], include_defaults=False)
    conn.close()
    return path


def hidden_in(path: Path):
    conn = db.connect(path, readonly=True)
    try:
        return read_hidden(conn)
    finally:
        conn.close()


def titles(tree: SessionTree) -> list[str]:
    return [str(n.data.session.title) for n in tree.root.children if n.data and n.data.session]


async def test_h_hides_sessions_and_projects_and_the_archive_remembers(tmp_path: Path) -> None:
    path = archive(tmp_path)
    app = make_app(path)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        projects, tree = app.query_one(ProjectList), app.query_one(SessionTree)
        assert [p.path for p in projects.projects] == ["/srv/api", "/srv/web"]
        tree.focus()
        await pilot.pause()
        assert titles(tree) == ["Ship the rate limiter", "Old spike on caching"]
        await pilot.press(
            "j", "h"
        )  # the old spike: out of the list, the cursor on the row that took its place
        await settle(pilot)
        assert titles(tree) == ["Ship the rate limiter"] and "1 hidden" in tree.title_text()
        await until(pilot, lambda: hidden_in(path).sessions == {OLD})
        await pilot.press("H")  # listed again, marked
        await pilot.pause()
        assert titles(tree) == ["Ship the rate limiter", "Old spike on caching"]
        row = next(n for n in tree.root.children if n.data.session.id == OLD)
        assert (
            tree.render_label(row, tree.rich_style, tree.rich_style).plain.lstrip().startswith("⊘ Old spike")
        )
        await pilot.press("H")
        projects.focus()
        await pilot.press("j", "h")  # the web project
        await settle(pilot)
        assert [p.path for p in projects.projects] == ["/srv/api"]
        await until(pilot, lambda: hidden_in(path).projects == {"/srv/web"})

    # remembered: a new launch lists neither; a hidden session asked for by name is shown all the same
    app = make_app(path)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        projects, tree = app.query_one(ProjectList), app.query_one(SessionTree)
        assert [p.path for p in projects.projects] == ["/srv/api"] and titles(tree) == [
            "Ship the rate limiter"
        ]
        app.browser.jump_to_session(OLD)
        await pilot.pause()
        assert app.query_one(MessageView).session_id == OLD
        assert tree.cursor_node is not None and tree.cursor_node.data.session.id == OLD  # listed, marked
        tree.focus()
        await pilot.press("h")  # h on a hidden one shows it again
        await settle(pilot)
        await until(pilot, lambda: hidden_in(path).sessions == frozenset())


def drawn_row(tree: SessionTree, session_id: str) -> str:
    """A session's row as the tree draws it now (through its cache of drawn lines)."""
    row = next(n for n in tree.root.children if n.data and n.data.session and n.data.session.id == session_id)
    return tree.render_line(row.line - tree.scroll_offset.y).text


async def test_a_session_shown_again_loses_its_hidden_mark_at_once(tmp_path: Path) -> None:
    """h on a hidden session listed with H said it was in the list again, but its row kept its ⊘
    until the next launch: the rows were the same, so the tree drew them from its cache."""
    path = archive(tmp_path)
    app = make_app(path)
    async with run_test(app, size=(200, 50)) as pilot:
        tree = app.query_one(SessionTree)
        await until(pilot, lambda: titles(tree) == ["Ship the rate limiter", "Old spike on caching"])
        tree.focus()
        await pilot.press("j", "h", "H")
        await until(pilot, lambda: "⊘" in drawn_row(tree, OLD))
        await until(pilot, lambda: hidden_in(path).sessions == {OLD})
        row = next(n for n in tree.root.children if n.data and n.data.session.id == OLD)
        tree.move_cursor(row)
        await pilot.press("h")
        await until(pilot, lambda: hidden_in(path).sessions == frozenset())
        await until(pilot, lambda: "⊘" not in drawn_row(tree, OLD), timeout=3)
        assert "Old spike on caching" in drawn_row(tree, OLD)


async def test_hiding_the_open_project_opens_the_next_ones_session(tmp_path: Path) -> None:
    """After h hid the selected project the message pane went on showing its session."""
    path = archive(tmp_path)
    app = make_app(path)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        projects, view = app.query_one(ProjectList), app.query_one(MessageView)
        projects.focus()
        await pilot.press("j")  # the web project, its session shown after the preview's pause
        await until(pilot, lambda: view.session_id == WEB)
        await pilot.press("h")
        await settle(pilot)
        assert [p.path for p in projects.projects] == ["/srv/api"]
        await until(pilot, lambda: view.session_id == NEW)  # the api project's newest


async def test_h_pressed_twice_at_once_hides_two_sessions_not_one_and_back(tmp_path: Path) -> None:
    """The second h of two typed quickly reached the list before the screen had heard of the
    first: it hid the session still under the cursor again, that is showed it, and nothing was
    hidden. It hides the session that took its place."""
    path = archive(tmp_path)
    app = make_app(path)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        tree = app.query_one(SessionTree)
        tree.focus()
        await pilot.pause()
        type_ahead(app, "h", "h")
        await settle(pilot)
        assert titles(tree) == [] and "2 hidden" in tree.title_text()
        await until(pilot, lambda: hidden_in(path).sessions == {OLD, NEW})
        await pilot.press("H")  # listed with their marks: two h on one row hide it and show it again
        await pilot.pause()
        type_ahead(app, "h", "h")
        await settle(pilot)
        await until(pilot, lambda: not app.browser.hiding)
        assert hidden_in(path).sessions == {OLD, NEW} and "2 hidden" in tree.title_text()


async def test_h_pressed_twice_at_once_in_the_projects_hides_two_projects(tmp_path: Path) -> None:
    """The same in the projects: the second h showed again the project the first had hidden."""
    path = archive(tmp_path)
    app = make_app(path)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        projects = app.query_one(ProjectList)
        projects.focus()
        await pilot.pause()
        type_ahead(app, "h", "h")
        await settle(pilot)
        await until(pilot, lambda: not app.browser.hiding)
        assert projects.projects == [] and hidden_in(path).projects == {"/srv/api", "/srv/web"}
        await pilot.press("H")  # listed with their marks: two h on one hide it and show it again
        await pilot.pause()
        type_ahead(app, "h", "h")
        await settle(pilot)
        await until(pilot, lambda: not app.browser.hiding)
        assert [p.path for p in projects.projects] == ["/srv/api", "/srv/web"]
        assert hidden_in(path).projects == {"/srv/api", "/srv/web"} == projects.hidden
