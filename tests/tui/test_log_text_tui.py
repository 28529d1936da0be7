"""Text from the logs (a title, a model, a path) and text typed (a tag) is shown as it is: never
read as Rich or Textual markup, where "[trimmed for fixture]" is a tag to drop and "[red]" a colour."""

from __future__ import annotations

from pathlib import Path

from textual.command import CommandList, CommandPalette
from textual.content import Content
from threadloom.tui.app import ThreadloomApp
from threadloom.tui.memory import MarkScreen
from threadloom.tui.messages import MessageView
from threadloom.tui.panes import SessionTree

from tests.builders.claude import Transcript
from tests.tui_support import ingested_db, make_app, run_test, settle, until

BRACKETED = "cccccccc-0000-4000-8000-00000000b4ac"
TITLE = "[trimmed for fixture] tidy the parser"
MODEL = "claude-[bold]x[/bold]"


def bracketed_archive(tmp_path: Path) -> Path:
    """One session whose first prompt (its title) opens on square brackets, by a model whose name
    holds markup."""
    root = tmp_path / "projects"
    t = Transcript(root / "-srv-lab" / f"{BRACKETED}.jsonl", BRACKETED, cwd="/srv/lab")
    t.user(TITLE)
    t.assistant("Tidied.", model=MODEL)
    t.write()
    return ingested_db(tmp_path, root)


def drawn_border(title: str | None) -> str:
    """A border's title as drawn: Textual gives a border title back as the markup of what it draws."""
    return Content.from_markup(title).plain if title else ""


def palette_rows(app: ThreadloomApp) -> list[str]:
    """The command palette's rows as drawn: each option's first line, plain."""
    listing = app.screen.query_one(CommandList)
    return [str(listing.get_option_at_index(n).prompt).splitlines()[0] for n in range(listing.option_count)]


async def test_a_bracketed_title_is_listed_whole_in_the_jump_list_and_the_palette(tmp_path: Path) -> None:
    """The jump list (p) showed "· lab · cccccccc-0000" for a session titled "[trimmed for
    fixture] …": its title was read as a markup tag and dropped."""
    app = make_app(bracketed_archive(tmp_path))
    async with run_test(app, size=(120, 35)) as pilot:
        await until(pilot, lambda: app.conn is not None and app.query_one(SessionTree).sessions)
        await pilot.press("p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette))
        await until(pilot, lambda: any("cccccccc" in row for row in palette_rows(app)))
        listed = next(row for row in palette_rows(app) if "cccccccc" in row)
        assert listed.startswith(TITLE), listed
        await pilot.press("escape", "ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"tidy parser")
        await settle(pilot)
        await until(pilot, lambda: any("cccccccc" in row for row in palette_rows(app)))
        found = next(row for row in palette_rows(app) if "cccccccc" in row)
        assert found.startswith(TITLE), found


async def test_a_models_name_is_shown_as_written_under_the_sessions(tmp_path: Path) -> None:
    """The session list's subtitle (its facts) and the viewer's read the model's name as markup (a
    terminal wide enough for the list's facts to keep the model)."""
    app = make_app(bracketed_archive(tmp_path))
    async with run_test(app, size=(200, 30)) as pilot:
        tree = app.query_one(SessionTree)
        await until(pilot, lambda: app.conn is not None and tree.sessions)
        tree.focus()
        await until(pilot, lambda: "x" in drawn_border(tree.border_subtitle))
        assert "[bold]x[/bold]" in drawn_border(tree.border_subtitle), tree.border_subtitle
        view = app.query_one(MessageView)
        await until(pilot, lambda: view.session_id == BRACKETED)
        await until(pilot, lambda: "x" in drawn_border(view.border_subtitle))
        assert "[bold]x[/bold]" in drawn_border(view.border_subtitle), view.border_subtitle


async def test_the_tag_box_names_a_bracketed_session_whole(tmp_path: Path) -> None:
    """`t` on the session: the box's title read the session's title as markup and lost its start."""
    app = make_app(bracketed_archive(tmp_path))
    async with run_test(app, size=(120, 35)) as pilot:
        tree = app.query_one(SessionTree)
        await until(pilot, lambda: app.conn is not None and tree.sessions)
        tree.focus()
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, MarkScreen))
        box = app.screen.query_one("#mark-box")
        assert drawn_border(box.border_title).startswith(f"Tag {TITLE}"), box.border_title


def toasts(app: ThreadloomApp) -> list[str]:
    """The notifications on the screen, as drawn (plain text): Textual's toasts, by their type's
    name (the class itself is private)."""
    return [Content.from_markup(toast.render()).plain for toast in app.screen.query("Toast")]


async def test_a_tag_typed_with_markup_is_confirmed_as_typed(tmp_path: Path) -> None:
    """Tagging a message with "[red]hot[/red], flaky": the confirmation drew "hot" in red, its
    brackets gone."""
    from threadloom.core.insight import memory
    from threadloom.core.store import db

    db_path = bracketed_archive(tmp_path)
    app = make_app(db_path)
    async with run_test(app, size=(120, 35), notifications=True) as pilot:
        view = app.query_one(MessageView)
        await until(pilot, lambda: view.session_id == BRACKETED)
        view.focus()
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, MarkScreen))
        await pilot.press(*"[red]hot[/red], flaky", "enter")
        await until(pilot, lambda: any("flaky" in toast for toast in toasts(app)))
        said = next(toast for toast in toasts(app) if "flaky" in toast)
        assert "[red]hot[/red]" in said, said
    conn = db.connect(db_path, readonly=True)
    try:
        tags = [m.value for m in memory.marks(conn, kind="tag", session_id=BRACKETED)]
        assert "[red]hot[/red]" in tags and "flaky" in tags, tags
    finally:
        conn.close()


async def test_a_project_named_over_lines_or_kilobytes_is_one_short_row_of_the_jump_list(
    tmp_path: Path,
) -> None:
    """A folder named with line breaks took three lines of the jump list (p), and one of 4 KB
    filled the palette with a single row: each is listed on one line, shortened."""
    root = tmp_path / "projects"
    for n, cwd in enumerate(("/srv/new\nline\nproject", "/srv/" + "long" * 1000)):
        sid = f"cccccccc-0000-4000-8000-00000000f0{n:02d}"
        t = Transcript(root / f"-srv-odd{n}" / f"{sid}.jsonl", sid, cwd=cwd)
        t.user(f"odd folder {n}")
        t.assistant("Seen.")
        t.write()
    app = make_app(ingested_db(tmp_path, root))
    async with run_test(app, size=(120, 35)) as pilot:
        await until(pilot, lambda: app.conn is not None and app.query_one(SessionTree).sessions)
        await pilot.press("p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette))
        await until(pilot, lambda: sum("cccccccc" in row for row in palette_rows(app)) == 2)
        listing = app.screen.query_one(CommandList)
        prompts = [str(listing.get_option_at_index(n).prompt) for n in range(listing.option_count)]
        odd = [p.splitlines()[0] for p in prompts if p.startswith("odd folder")]
        assert len(odd) == 2 and all("cccccccc" in row and len(row) < 120 for row in odd), odd
        assert any("new line project" in row for row in odd), odd


def test_the_fork_picker_names_a_hostile_project_as_the_panes_do(tmp_path: Path) -> None:
    """The picker's header dropped a project name's control characters (its last filter keeps them
    off the terminal), where the panes draw them as pictures: "a␛[2Jb␊c" there, "a[2Jbc" here."""
    from threadloom.core.actions.fork_session import ForkSession
    from threadloom.core.store import db
    from threadloom.tui.fork_widgets import about

    sid = "5e57da7e-0000-4000-8000-0000000000f3"
    t = Transcript(tmp_path / "projects" / "-srv-odd" / f"{sid}.jsonl", sid, cwd="/srv/a\x1b[2Jb\nc")
    t.user("fork me")
    t.assistant("sure")
    t.write()
    conn = db.connect(ingested_db(tmp_path, tmp_path / "projects"))
    try:
        first_line = about(ForkSession(conn, sid)).plain.split("\n")[0]
    finally:
        conn.close()
    assert "a\u241b[2Jb\u240ac" in first_line and "\x1b" not in first_line
