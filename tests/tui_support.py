"""Helpers shared by the TUI tests and `scripts/screenshots.py`: a demo database and a fixed clock.

They live beside the tests, not in the package: nothing a user installs needs them.

Screenshots and snapshots must not change from run to run, so both use the demo archive's fixed
"now", UTC, and a database built once by ingesting the demo archive.
"""

from __future__ import annotations

import asyncio
import atexit
import inspect
import io
import os
import shutil
import sqlite3
import tempfile
import time
import unicodedata
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from textual.pilot import Pilot
from threadloom.core.adapters.claude_demo import DEMO_NOW, LONG_SESSION_TURNS, write_demo_archive

if TYPE_CHECKING:
    from textual import events
    from textual.message import Message
    from textual.widgets import DataTable, Static
    from threadloom.tui.app import ThreadloomApp

M = TypeVar("M", bound="Message")


async def until_idle(max_wait: float = 1.0) -> None:
    """Until the process is idle: a 4 ms slice with under 5 % of it on the CPU (or `max_wait`).

    Textual's own key presses sample 20 ms slices for this, twice a key: at least 40 ms a key, most
    of a TUI test's wall time spent asleep. The same measure over 4 ms slices notices an idle app as
    surely, five times sooner."""
    start = time.monotonic()
    while True:
        cpu = time.process_time()
        await asyncio.sleep(0.004)
        if time.monotonic() - start >= max_wait or time.process_time() - cpu < 0.0002:
            return


def key_event(key: str) -> events.Key:
    """The Key event a terminal sends for `key`, named and typed as Textual's own key presses make
    it: a single character that is not a letter or digit named by its Unicode name ("/" is
    "slash"), a key name ("enter", "ctrl+f") as it is, with the character the key types (None for
    a key that types none), from textual.keys' public tables."""
    from textual import events
    from textual.keys import KEY_NAME_REPLACEMENTS, KEY_TO_UNICODE_NAME, REPLACED_KEYS

    if len(key) == 1 and not key.isalnum():
        try:
            name = unicodedata.name(key).lower().replace("-", "_").replace(" ", "_")
        except ValueError:
            name = {"\t": "tab"}.get(key, key)
        key = KEY_NAME_REPLACEMENTS.get(name, name)
    original = REPLACED_KEYS.get(key, key)
    try:
        character: str | None = unicodedata.lookup(KEY_TO_UNICODE_NAME.get(original, original))
    except KeyError:
        character = key if len(key) == 1 else None
    return events.Key(key, character)


class QuickPilot(Pilot):  # type: ignore[misc]  # Pilot is generic over the app's return type
    """Pilot whose key presses wait for the app with `until_idle` (see there), through Textual's
    public API only: each key is posted to the app as the terminal driver posts it, then the app
    runs until idle, its animations end and it is idle again, as `Pilot.press` does; after the last
    key every widget of the screen has handled what it was sent (`Pilot.pause(0)`)."""

    async def press(self, *keys: str) -> None:
        for key in keys:
            event = key_event(key)
            event.set_sender(self.app)
            self.app.post_message(event)
            await until_idle()
            await self.wait_for_animation()
            await until_idle()
        if keys:
            await self.pause(0)


def type_ahead(app: ThreadloomApp, *keys: str) -> None:
    """`keys` posted to the app at once, as a terminal sends keys typed faster than the app
    handles them: each reaches it before what the one before set off has run (`QuickPilot.press`
    waits for that between keys)."""
    for key in keys:
        event = key_event(key)
        event.set_sender(app)
        app.post_message(event)


@asynccontextmanager
async def run_test(app: ThreadloomApp, **kw: Any) -> AsyncIterator[QuickPilot]:
    """`app.run_test(**kw)` driven by a QuickPilot, with animations off (as TEXTUAL_ANIMATIONS=none
    does): a scroll lands at once rather than over frames whose gaps a 4 ms slice takes for idleness."""
    app.animation_level = "none"
    async with app.run_test(**kw):
        yield QuickPilot(app)


def fixed_now() -> float:
    return DEMO_NOW.timestamp()


def make_app(db: Path, **kw: Any) -> ThreadloomApp:
    """The app over `db` at the tests' fixed time, with its ingest off unless a test asks for it."""
    from threadloom.tui.app import ThreadloomApp

    app = ThreadloomApp(db_path=db, ingest=kw.pop("ingest", False), now=fixed_now, **kw)
    app.animation_level = "none"  # as `run_test` has it, for a test that drives the app otherwise (snapshots)
    return app


def use_utc() -> str | None:
    """Times are shown in local time; pin it so output does not depend on the machine.

    Returns the previous TZ so a test can put it back with `restore_tz`.
    """
    previous = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    return previous


def restore_tz(previous: str | None) -> None:
    if previous is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = previous
    time.tzset()


def build_demo_db(folder: Path, *, long_turns: int = LONG_SESSION_TURNS) -> Path:
    """The demo archive in `folder/archive`, ingested into `folder/demo.db`.

    Writing and ingesting it took ~1.7 s, once per test module: each length is built once a
    process and copied (`_copy_demo`), which reads as the same archive moved to `folder`."""
    template = _DEMO_TEMPLATES.get(long_turns)
    if template is None:
        template = Path(tempfile.mkdtemp(prefix="threadloom-demo-"))
        atexit.register(shutil.rmtree, template, True)
        ingest_demo(template, long_turns)
        _DEMO_TEMPLATES[long_turns] = template
    return _copy_demo(template, folder)


_DEMO_TEMPLATES: dict[int, Path] = {}


def ingest_demo(folder: Path, long_turns: int) -> Path:
    from threadloom.core.ingest.pipeline import run_ingest
    from threadloom.core.store import db

    root = write_demo_archive(folder / "archive", long_turns=long_turns)
    path = folder / "demo.db"
    conn = db.connect(path)
    try:
        report = run_ingest(conn, [root], include_defaults=False)
    finally:
        conn.close()
    if report.errors:
        raise RuntimeError(f"demo ingest failed: {report.errors[:3]}")
    return path


def _copy_demo(template: Path, folder: Path) -> Path:
    """The template's archive copied with its files' times, and its database with the archive's
    new place (and the copies' inodes) written in where the archive keeps paths: the next ingest
    finds every file as it left it."""
    shutil.copytree(template / "archive", folder / "archive")
    path = folder / "demo.db"
    with sqlite3.connect(template / "demo.db") as source, sqlite3.connect(path) as copy:
        source.backup(copy)
    old, new = str(template), str(folder)
    conn = sqlite3.connect(path)
    try:
        with conn:
            for file_id, file_path in conn.execute("SELECT id, path FROM source_files").fetchall():
                moved = new + file_path.removeprefix(old)
                st = os.stat(moved)
                conn.execute(
                    "UPDATE source_files SET path = ?, inode = ?, ctime_ns = ? WHERE id = ?",
                    (moved, st.st_ino, st.st_ctime_ns, file_id),
                )
            conn.execute("UPDATE source_roots SET path = replace(path, ?, ?)", (old, new))
            conn.execute(
                "UPDATE ledger_meta SET key = replace(key, ?, ?), value = replace(value, ?, ?)",
                (old, new) * 2,
            )
    finally:
        conn.close()
    return path


# ---------------------------------------------------------------------------- scenes
# Driven by scripts/screenshots.py and by the snapshot tests, so the README's pictures and the
# tests show the same states.

CHECKOUT = "The checkout tests started failing"
NESTED = "Check how Stripe webhooks apply tax"
LONG = "We're moving the repository layer"
HEALTH = "Why does /health return 503"
HEADER = "The header is misaligned on mobile"
PROMPT = "Show the git branch in my prompt"


def session_id(app: ThreadloomApp, title: str) -> str:
    from threadloom.core.read import browse

    assert app.conn is not None
    return next(t.id for t in browse.jump_targets(app.conn) if t.title.startswith(title))


def the_app(pilot: Pilot) -> ThreadloomApp:
    """The app a scene drives, as threadloom's (Pilot knows it only as an App)."""
    from threadloom.tui.app import ThreadloomApp

    assert isinstance(pilot.app, ThreadloomApp)
    return pilot.app


async def cursor_to_tool(pilot: Pilot, name: str) -> None:
    """Move the message cursor down to the next call of tool `name`."""
    from threadloom.tui.messages import MessageView

    view = pilot.app.query_one(MessageView)
    for _ in range(400):
        block = view.current_block()
        if block is not None and block.call is not None and block.call.name == name:
            return
        view.action_cursor_down()
    raise LookupError(f"no {name} call below the cursor")


async def settle(pilot: Pilot) -> None:
    """Until the app's workers are done (the fork picker reads turns and plans in threads)."""
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def wait_for_search(pilot: Pilot, timeout: float = 10.0) -> None:
    """Until the search screen shows the result of what is typed (debounce and worker done)."""
    from threadloom.tui.search import SearchScreen

    screen = pilot.app.screen
    assert isinstance(screen, SearchScreen), screen
    deadline = time.monotonic() + timeout
    while not screen.settled:
        if time.monotonic() > deadline:
            raise TimeoutError("search did not finish")
        await pilot.pause()  # until the app is idle: the debounce timer, then the worker's result
    await pilot.pause()


async def scene_browse(pilot: Pilot) -> None:
    """All three panes: the sessions pane has focus, so the projects pane stays in view."""
    app = the_app(pilot)
    app.browser.jump_to_session(session_id(app, CHECKOUT))
    await pilot.pause()
    await pilot.press("down", "down", "2")


async def scene_tool_diff(pilot: Pilot) -> None:
    app = the_app(pilot)
    app.browser.jump_to_session(session_id(app, CHECKOUT))
    await pilot.pause()
    await cursor_to_tool(pilot, "Bash")
    await pilot.press("enter")
    await cursor_to_tool(pilot, "Edit")
    await pilot.press("enter")


async def scene_nested_subagents(pilot: Pilot) -> None:
    app = the_app(pilot)
    app.browser.jump_to_session(session_id(app, NESTED))
    await pilot.pause()
    await pilot.press("down", "down")


async def scene_help(pilot: Pilot) -> None:
    app = the_app(pilot)
    app.browser.jump_to_session(session_id(app, CHECKOUT))
    await pilot.pause()
    await pilot.press("f1")


async def scene_markdown(pilot: Pilot) -> None:
    """An answer written in Markdown, rendered: a heading, emphasis, a table, a list with code in
    it, a quote with a link. Opened whole (Enter), the cursor then moved off it."""
    app = the_app(pilot)
    app.browser.jump_to_session(session_id(app, HEALTH))
    await pilot.pause()
    await pilot.press("3", "G", "enter", "up")


async def scene_image(pilot: Pilot) -> None:
    """A screenshot pasted in a prompt, drawn inline as half-block cells (its thread done), the
    cursor on it for `o` and `w`."""
    app = the_app(pilot)
    app.browser.jump_to_session(session_id(app, HEADER))
    await pilot.pause()
    await pilot.press("down")
    await settle(pilot)


async def scene_narrow(pilot: Pilot) -> None:
    app = the_app(pilot)
    app.browser.jump_to_session(session_id(app, LONG))
    await pilot.pause()
    await pilot.press("G")


async def scene_search(pilot: Pilot) -> None:
    """A misspelt query over every project: hits with their matches marked, the typo's expansion."""
    from threadloom.tui.search import SearchScreen

    app = the_app(pilot)
    app.browser.jump_to_session(session_id(app, CHECKOUT))
    await pilot.pause()
    await pilot.press("slash", *"chnage")
    await wait_for_search(pilot)
    screen = app.screen
    assert isinstance(screen, SearchScreen)
    screen.freeze_timing(0.004)
    await pilot.press("down")


async def scene_new_session_context(pilot: Pilot) -> None:
    """Two turns picked among the hits of a remembered sentence, and the dialog that starts a new
    session with them as its context."""
    from threadloom.tui.context import ContextScreen
    from threadloom.tui.search import SearchScreen

    app = the_app(pilot)
    await pilot.press("slash", *"the tax rounding went wrong")
    await wait_for_search(pilot)
    screen = app.screen
    assert isinstance(screen, SearchScreen)
    screen.freeze_timing(0.004)
    await pilot.press("ctrl+t", "down", "down", "ctrl+t", "ctrl+n")
    await until(pilot, lambda: isinstance(app.screen, ContextScreen) and app.screen.context is not None)
    await pilot.pause()


async def scene_fork_picker(pilot: Pilot) -> None:
    """`f` on the failed Bash call in the viewer: the picker opens on it, bracketed with the thinking of
    its API message. "New prompt" makes the command, and asks to put the transcript back where Claude
    Code looks first (the demo's are not there); "no" leaves the command shown, said not to work yet
    (the question itself names the demo's temporary folder)."""
    app = the_app(pilot)
    app.browser.jump_to_session(session_id(app, CHECKOUT))
    await pilot.pause()
    await cursor_to_tool(pilot, "Bash")
    await pilot.press("f")
    await settle(pilot)
    await pilot.press("n", *"Round the PDF invoice too", "enter")
    await settle(pilot)
    await pilot.press("escape")
    await pilot.pause()


async def scene_stats(pilot: Pilot) -> None:
    """`S`: cost per day as a sparkline over the table of days, the last day under the cursor."""
    await pilot.pause()
    await pilot.press("S")
    await pilot.pause()


async def scene_signals(pilot: Pilot) -> None:
    """`W` on the demo session where the user refused a call: the signal and its evidence."""
    app = the_app(pilot)
    app.browser.jump_to_session(session_id(app, HEADER))
    await pilot.pause()
    await pilot.press("W")
    await pilot.pause()


async def wait_for_find(pilot: Pilot, timeout: float = 10.0) -> None:
    """Until the find bar's matches are those of what is typed in it (its short pause is over)."""
    from threadloom.tui.messages import MessageView

    navigator = pilot.app.query_one(MessageView).navigator
    deadline = time.monotonic() + timeout
    while not navigator.settled:
        if time.monotonic() > deadline:
            raise TimeoutError("find did not finish")
        await pilot.pause()
    await pilot.pause()


async def scene_find(pilot: Pilot) -> None:
    """Find in the open session: every "tax" marked, the third of five (an edit, opened) brighter."""
    app = the_app(pilot)
    app.browser.jump_to_session(session_id(app, CHECKOUT))
    await pilot.pause()
    await pilot.press("ctrl+f", *"tax")
    await wait_for_find(pilot)
    await pilot.press("enter", "n")
    await pilot.pause()


async def until_shown(pilot: Pilot, timeout: float = 10.0) -> None:
    """Until the message pane shows the session under the Sessions pane's cursor."""
    from threadloom.tui.messages import MessageView
    from threadloom.tui.panes import SessionTree

    tree, view = pilot.app.query_one(SessionTree), pilot.app.query_one(MessageView)
    deadline = time.monotonic() + timeout
    while (
        tree.cursor_node is None
        or tree.cursor_node.data.session is None
        or (view.session_id != tree.cursor_node.data.session.id)
    ):
        if time.monotonic() > deadline:
            raise TimeoutError("the message pane did not follow the sessions' cursor")
        await pilot.pause()
    await pilot.pause()


async def scene_filtered_list(pilot: Pilot) -> None:
    """The sessions pane sorted by tokens and filtered by a word of a git branch (Ctrl+F, typed,
    Enter back to the list): the title counts what is left of the project's sessions."""
    app = the_app(pilot)
    app.browser.jump_to_session(session_id(app, CHECKOUT))
    await pilot.pause()
    await pilot.press("2", "s", "s", "s", "ctrl+f", *"tax", "enter")
    await until_shown(pilot)  # the list's cursor is read after the preview's pause: wait for it
    app.clear_notifications()  # "Sorted by …" toasts: gone or not by the time the picture is taken
    await pilot.pause()


async def scene_files_changed(pilot: Pilot) -> None:
    """`c` in the message viewer: the files the checkout session changed, most changed first."""
    app = the_app(pilot)
    app.browser.jump_to_session(session_id(app, CHECKOUT))
    await pilot.pause()
    await pilot.press("c")
    await pilot.pause()


async def scene_cards(pilot: Pilot) -> None:
    """Claude Code 2.1's own shapes: hooks, an IDE selection as a chip, a TodoWrite list and what
    its next write changed, a `!` command with its output opened, a slash command and its
    output; the replies open on Claude Opus 4.7's empty thinking blocks, each under its header."""
    from threadloom.tui.messages import MessageView

    app = the_app(pilot)
    app.browser.jump_to_session(session_id(app, PROMPT))
    await pilot.pause()
    view = app.query_one(MessageView)
    view.focus()
    for _ in range(80):  # down to the `!` command's output, and open it
        block = view.current_block()
        if block is not None and block.kind == "output":
            break
        view.action_cursor_down()
    await pilot.press("enter")
    await pilot.pause()


SCENES: dict[str, tuple[Callable[[Pilot], Awaitable[None]], tuple[int, int]]] = {
    "browse": (scene_browse, (140, 40)),
    "tool-call-diff": (scene_tool_diff, (140, 40)),
    "nested-subagents": (scene_nested_subagents, (140, 40)),
    "help": (scene_help, (140, 40)),
    "narrow-80x24": (scene_narrow, (80, 24)),
    "markdown": (scene_markdown, (140, 40)),
    "image": (scene_image, (140, 40)),
    "search": (scene_search, (140, 40)),
    "new-session-context": (scene_new_session_context, (140, 40)),
    "fork-picker": (scene_fork_picker, (140, 40)),
    "stats": (scene_stats, (140, 40)),
    "find": (scene_find, (140, 40)),
    "filtered-list": (scene_filtered_list, (140, 40)),
    "signals": (scene_signals, (140, 40)),
    "files-changed": (scene_files_changed, (140, 40)),
    "claude-code-cards": (scene_cards, (140, 50)),
}


async def until(pilot: Pilot, holds: Callable[[], object], timeout: float = 10.0) -> None:
    """Let the app run until `holds()` is true: a test waits for what it needs (a timer fired, a
    worker's result shown), not for a guessed time, which is slow when generous and flaky when not."""
    deadline = time.monotonic() + timeout
    while not holds():
        if time.monotonic() > deadline:
            try:
                what = inspect.getsource(holds).strip()
            except (OSError, TypeError):
                what = repr(holds)
            raise AssertionError(f"still not true after {timeout:g} s: {what}")
        await pilot.pause()


def table_rows(table: DataTable) -> list[list[str]]:
    """A DataTable's cells as text, row by row."""
    return [[str(cell) for cell in table.get_row_at(n)] for n in range(table.row_count)]


class Seen:
    """A `message_hook` that keeps the messages of the given kinds, once each (a message that
    bubbles from a screen to the app is dispatched by both)."""

    def __init__(self, *kinds: type[Message]) -> None:
        self.kinds = kinds
        self.messages: list[Message] = []

    def __call__(self, message: Message) -> None:
        if isinstance(message, self.kinds) and not any(m is message for m in self.messages):
            self.messages.append(message)

    def of(self, kind: type[M]) -> list[M]:
        return [m for m in self.messages if isinstance(m, kind)]


def ingested_db(tmp_path: Path, source: Path) -> Path:
    """A database holding what `source` has, written before the app opens it."""
    from threadloom.core.store import db

    from tests.support import ingest

    path = tmp_path / "t.db"
    conn = db.connect(path)
    ingest(conn, source)
    conn.close()
    return path


async def open_checkout(pilot: Pilot, app: ThreadloomApp) -> str:
    """The demo's checkout session, opened in the viewer (the one the follow tests grow), once the
    archive's projects are listed (on a busy machine the first load can take more than a pause)."""
    from threadloom.tui.panes import ProjectList

    await until(pilot, lambda: app.conn is not None and any(p.projects for p in app.query(ProjectList)))
    sid = session_id(app, CHECKOUT)
    app.browser.jump_to_session(sid)
    await pilot.pause()
    return sid


def shown(widget: Static) -> str:
    """The plain text a Static shows, whatever renderable it holds."""
    from rich.console import Console

    console = Console(width=400, file=io.StringIO(), color_system=None)
    with console.capture() as capture:
        console.print(widget.content)
    return capture.get()


def viewer_lines(conn: sqlite3.Connection, session_id: str, width: int = 100) -> list[str]:
    """Every message of a session as the message viewer draws it (no App: its state and its drawer
    over the archive), each line's right margin trimmed."""
    from rich.console import Console
    from threadloom.core.read.browse import MessageRow
    from threadloom.core.read.query import get_session
    from threadloom.tui.message_draw import Canvas, MessageDrawer
    from threadloom.tui.message_state import PAGE, MessageState

    session = get_session(conn, session_id)
    assert session is not None
    state = MessageState()
    state.open(session_id, range(session.message_count))

    def row(pos: int) -> MessageRow | None:
        if state.needs_page(pos):
            state.read_page(conn, pos // PAGE)
        return state.rows.get(pos)

    drawer = MessageDrawer(state, row)
    drawer.conn = conn
    canvas = Canvas(Console(width=width, color_system=None), width)
    return [strip.text.rstrip() for pos in range(state.count) for strip in drawer.draw(pos, canvas).strips]
