"""The Sessions pane's list tools, pressed as a user would: filter, sort, agent, hide short
sessions, pane widths and copy, with what is remembered read back by a second run of the app."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from threadloom.tui.panes import FilterInput, SessionTree
from threadloom.tui.screens import HelpScreen
from threadloom.tui.settings import load_settings

from tests.tui_support import make_app, run_test

CHECKOUT = "The checkout tests started failing"  # acme-shop: 22 messages, 12 Jun, fix/checkout-tax
HEADER = "The header is misaligned"  # acme-shop: 10 messages, 10 Jun, main


DEMO_LONG_TURNS = 12


@pytest.fixture
def mixed_db(demo_db: Path, tmp_path: Path) -> Path:
    """The demo with acme-shop's header session made a one-message Codex session: two agents in
    one project, and a session the hide key hides."""
    path = tmp_path / "mixed.db"
    shutil.copy(demo_db, path)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "UPDATE agent_sessions SET source = 'codex', message_count = 1 WHERE title LIKE ? AND is_subagent = 0",
            (HEADER + "%",),
        )
    conn.close()
    return path


def titles(tree: SessionTree) -> list[str]:
    """The listed sessions' titles as far as the tests tell them apart."""
    return [(s.title or "")[:24] for s in tree.sessions]


def priced_session(tmp_path: Path, sid: str) -> Path:
    """An archive of one session of 102 priced messages, its facts too long for a narrow pane."""
    from tests.builders.claude import Transcript
    from tests.tui_support import ingested_db

    t = Transcript(tmp_path / "projects" / "-home-dev-app" / f"{sid}.jsonl", sid)
    for n in range(51):
        t.user(f"Why is the cart total off by a cent, take {n}")
        t.assistant("Rounding.", usage={"input_tokens": 20, "output_tokens": 5}, model="claude-sonnet-4-5")
    t.write()
    return ingested_db(tmp_path, tmp_path / "projects")


async def test_ctrl_f_filters_as_you_type_counts_and_esc_clears(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        tree = app.query_one(SessionTree)
        box, bar = app.query_one(FilterInput), app.query_one("#filter-bar")
        await pilot.press("2")
        assert tree.border_title == "Sessions (2)" and not bar.display
        await pilot.press("ctrl+f", *"HEADER")  # case-insensitive, in the title
        assert app.focused is box and box.region.width > 0
        assert tree.border_title == "Sessions (1 of 2)" and titles(tree) == [HEADER[:24]]
        await pilot.press("z")
        assert tree.border_title == "Sessions (0 of 2)" and tree.sessions == []
        assert str(tree.root.children[0].label) == "No match: Esc clears"
        await pilot.press("escape")  # in the box: cleared and closed, the list has the keys
        assert app.focused is tree and not bar.display and tree.border_title == "Sessions (2)"
        # the git branch, then an id: each a field the filter reads
        await pilot.press("ctrl+f", *"checkout-tax")
        assert titles(tree) == [CHECKOUT[:24]]
        await pilot.press(*["backspace"] * 12)
        header_id = next(s.id for s in tree.all_sessions if s.title and s.title.startswith(HEADER))
        await pilot.press(*header_id[9:18], "enter")  # the middle of the id; Enter goes to the list
        assert titles(tree) == [HEADER[:24]] and app.focused is tree and bar.display
        assert tree.cursor_node is not None and tree.cursor_node.data.session.id == header_id
        await pilot.press("escape")  # in the list: the filter goes, and its box
        assert tree.border_title == "Sessions (2)" and not bar.display and box.value == ""
        assert app.focused is tree  # Esc did not leave for anything else


async def test_s_cycles_the_order_and_the_title_names_it(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        tree = app.query_one(SessionTree)
        await pilot.press("2")
        assert titles(tree) == [CHECKOUT[:24], HEADER[:24]]  # recent activity first
        seen = []
        for _ in range(5):
            await pilot.press("s")
            seen.append((tree.border_title, titles(tree)[0]))
        assert (
            seen
            == [
                ("Sessions (2) · oldest first", HEADER[:24]),  # started 10 Jun
                ("Sessions (2) · most messages", CHECKOUT[:24]),  # 22 against 10
                ("Sessions (2) · most tokens", CHECKOUT[:24]),
                ("Sessions (2) · longest", CHECKOUT[:24]),
                ("Sessions (2)", CHECKOUT[:24]),  # back to recent activity
            ]
        )
        assert any(n.message == "Sorted by oldest first" for n in app._notifications)


async def test_a_cycles_the_projects_agents_then_all(mixed_db: Path) -> None:
    app = make_app(mixed_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        tree = app.query_one(SessionTree)
        await pilot.press("2", "a")
        assert tree.border_title == "Sessions (1 of 2) · claude-code" and titles(tree) == [CHECKOUT[:24]]
        await pilot.press("a")
        assert tree.border_title == "Sessions (1 of 2) · codex" and titles(tree) == [HEADER[:24]]
        await pilot.press("a")
        assert tree.border_title == "Sessions (2)" and len(tree.sessions) == 2


async def test_hiding_short_sessions_is_remembered_by_the_next_run(mixed_db: Path, isolated: Path) -> None:
    app = make_app(mixed_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        tree = app.query_one(SessionTree)
        await pilot.press("2", "full_stop")
        assert tree.border_title == "Sessions (1 of 2)" and titles(tree) == [CHECKOUT[:24]]
    assert load_settings(isolated)[0].hide_short_sessions is True
    assert "hide_short_sessions = true" in isolated.read_text()
    again = make_app(mixed_db)
    async with run_test(again, size=(140, 40)) as pilot:
        await pilot.pause()
        tree = again.query_one(SessionTree)
        assert tree.border_title == "Sessions (1 of 2)" and titles(tree) == [CHECKOUT[:24]]
        await pilot.press("2", "full_stop")  # shown again, and remembered so
        assert tree.border_title == "Sessions (2)"
    assert load_settings(isolated)[0].hide_short_sessions is False


async def test_brackets_resize_the_focused_pane_and_the_next_run_keeps_it(
    demo_db: Path, isolated: Path
) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        box, projects = app.query_one("#sessions-box"), app.query_one("#projects")
        messages = app.query_one("#messages")
        sessions_before, projects_before = box.outer_size.width, projects.outer_size.width
        await pilot.press("2", "right_square_bracket", "right_square_bracket")
        await pilot.pause()
        assert box.outer_size.width == sessions_before + 8
        await pilot.press("1", "left_square_bracket")
        await pilot.pause()
        assert projects.outer_size.width == projects_before - 4
        await pilot.press("3")
        await pilot.pause()
        wide_messages = messages.outer_size.width
        await pilot.press("right_square_bracket")  # the message pane takes the sessions pane's room
        await pilot.pause()
        assert messages.outer_size.width == wide_messages + 4
        chosen = (projects.outer_size.width, box.outer_size.width)
    settings = load_settings(isolated)[0]
    assert (
        (settings.projects_width, settings.sessions_width)
        == chosen
        == (
            projects_before - 4,
            sessions_before + 4,
        )
    )
    again = make_app(demo_db)
    async with run_test(again, size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("2")
        await pilot.pause()
        assert (
            again.query_one("#projects").outer_size.width,
            again.query_one("#sessions-box").outer_size.width,
        ) == chosen


async def test_y_and_shift_y_copy_the_full_id_and_the_file_path(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copied: list[str] = []
    monkeypatch.setattr("threadloom.core.base.clipboard.copy_with", copied.append)
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        tree = app.query_one(SessionTree)
        await pilot.press("2", "down")
        await pilot.pause()
        session = tree.cursor_node.data.session
        assert session.title.startswith(HEADER)
        await pilot.press("y", "Y")
        assert copied == [session.id, session.file_path]
        assert len(session.id) == 36 and session.file_path.endswith(f"{session.id}.jsonl")
        said = [n.message for n in app._notifications if n.title == "Copied"]
        assert said == [
            f"Copied the session id to the system clipboard: {session.id}",
            f"Copied the session's file path to the system clipboard: {session.file_path}",
        ]


async def test_a_damaged_settings_file_warns_and_gives_the_defaults(demo_db: Path, isolated: Path) -> None:
    isolated.parent.mkdir(parents=True)
    isolated.write_text("hide_short_sessions = [oops\n")
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        assert app.query_one(SessionTree).border_title == "Sessions (2)"
        warned = [n for n in app._notifications if n.title == "Settings not read"]
        assert len(warned) == 1 and str(isolated) in warned[0].message and warned[0].severity == "warning"
    isolated.write_text('hide_short_sessions = "yes"\nsessions_width = 3\n')
    settings, problems = load_settings(isolated)
    assert settings.hide_short_sessions is False and settings.sessions_width is None and len(problems) == 2


async def test_the_new_keys_are_in_f1_help_with_their_ids(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("2", "f1")
        screen = app.screen
        assert isinstance(screen, HelpScreen)
        ids = {row[2] for row in screen.pane_keys} | {row[2] for row in screen.global_keys}
        assert {
            "sessions.filter",
            "sessions.sort",
            "sessions.agent",
            "sessions.hide-short",
            "sessions.copy-id",
            "sessions.copy-path",
            "app.pane-narrower",
            "app.pane-wider",
        } <= ids
        # the lists fit their rows to the pane: keys that scroll sideways do nothing there, and
        # are not offered (Textual's own, declared for their ids)
        for pane in ("1", "2"):
            await pilot.press("escape", pane, "f1")
            offered = {row[2] for row in app.screen.pane_keys}
            assert offered and not offered & {
                "projects.scroll-left",
                "projects.page-left",
                "projects.page-right",
                "sessions.page-left",
                "sessions.page-right",
            }, offered


async def test_jumping_to_a_session_the_filter_hides_clears_the_filter(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        tree = app.query_one(SessionTree)
        await pilot.press("2", "ctrl+f", *"checkout", "enter")
        assert titles(tree) == [CHECKOUT[:24]]
        header_id = next(s.id for s in tree.all_sessions if s.title and s.title.startswith(HEADER))
        app.browser.jump_to_session(header_id)  # as the jump palette and a search hit do
        await pilot.pause()
        assert tree.border_title == "Sessions (2)" and not app.query_one("#filter-bar").display
        assert tree.cursor_node is not None and tree.cursor_node.data.session.id == header_id


async def test_the_footer_at_80x24_keeps_filter_beside_search_and_quit(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("2")
        await pilot.pause()
        shown = [
            k.description for k in app.screen.query("FooterKey") if k.region.width and k.region.right <= 80
        ]
        assert {"Filter", "Search", "Fork", "Help", "Quit"} <= set(shown)
        assert not {"Sort", "Agent", "Copy id", "Narrower"} & set(shown)  # in F1, not the footer
        await pilot.press("ctrl+f")
        await pilot.pause()
        shown = [
            k.description for k in app.screen.query("FooterKey") if k.region.width and k.region.right <= 80
        ]
        assert "Clear filter" in shown and "Quit" not in shown  # letters are typed into the box now


async def test_the_palette_offers_the_list_tools_when_the_sessions_pane_has_focus(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        titles_now = [c.title for c in app.get_system_commands(app.screen)]
        assert not any(t.startswith("Sessions: next sort") for t in titles_now)  # projects focused
        await pilot.press("2")
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        assert "Sessions: hide sessions of fewer than two messages" in commands
        assert "Sessions: copy the session id" in commands
        commands["Sessions: next sort order"].callback()
        await pilot.pause()
        assert app.query_one(SessionTree).border_title == "Sessions (2) · oldest first"


async def test_the_palette_s_pane_commands_read_alike(demo_db: Path) -> None:
    """After its pane's name each command went on in lower case ("Sessions: copy the session id")
    but four: "Sessions: Show Warmup agents", "Sessions: Hide sessions of …", "Projects: List the
    hidden …". They all read alike."""
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        seen = []
        for pane in ("1", "2", "3"):
            await pilot.press(pane)
            seen += [c.title for c in app.get_system_commands(app.screen) if ": " in c.title]
        assert (
            "Sessions: show Warmup agents" in seen
            and "Projects: list the hidden sessions and projects" in seen
        )
        assert len(seen) > 20 and all(t.split(": ", 1)[1][0].islower() for t in seen), seen


def test_settings_round_trip_and_an_unwritable_place_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    from threadloom.tui.settings import Settings, save_settings

    path = tmp_path / "deep" / "settings.toml"
    wanted = Settings(hide_short_sessions=True, projects_width=30, sessions_width=None)
    assert save_settings(path, wanted) is None
    assert load_settings(path) == (wanted, [])
    assert "sessions_width" not in path.read_text()  # the stylesheet's: nothing written
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    problem = save_settings(blocker / "settings.toml", wanted)  # its folder is a file
    assert problem is not None and str(blocker) in problem


async def test_the_message_pane_follows_a_filter_that_leaves_its_session_out(demo_db: Path) -> None:
    from threadloom.tui.messages import MessageView

    from tests.tui_support import CHECKOUT, HEADER, session_id, until_shown

    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        app.browser.jump_to_session(session_id(app, HEADER))
        await pilot.pause()
        view = app.query_one(MessageView)
        assert view.session_id == session_id(app, HEADER)
        await pilot.press("2", "ctrl+f", *"tax")  # only the checkout session has "tax" in its branch
        await until_shown(pilot)
        assert view.session_id == session_id(app, CHECKOUT)
        await pilot.press("enter")  # back to the list: the pane stays on what is listed
        await until_shown(pilot)
        assert app.query_one(SessionTree).border_title == "Sessions (1 of 2)"


def test_a_narrow_project_row_keeps_its_cost_and_drops_the_agents_first() -> None:
    """The cost is what a project row is read for: in a narrow pane it is shortened (whole
    dollars, "+?") before it is left out, and the agents' names give way first."""
    from threadloom.core.read.browse import ProjectRow
    from threadloom.tui.panes import ProjectList

    busy = ProjectRow("/w/fixtures", "fixtures", ["aider"], 984, 0, None, 7_700_000, 24.75, 3)
    pane = ProjectList(now=lambda: 0.0)
    second = {}
    for width in (40, 24, 18):
        pane._width = width
        second[width] = str(pane._prompt(busy)).splitlines()[1]
    assert second[40] == "984 sessions · $24.75 + ? · 7.7M tok"
    assert second[24] == "984 sessions · $25+?"
    assert second[18] == "984 sessions"


def test_a_narrow_subagent_row_cuts_its_type_with_an_ellipsis_not_to_six_letters() -> None:
    """On a narrow pane a row keeps one fact: a date is cut to its day ("12 Jun"), but a subagent's
    type was cut the same way, to "genera"; it is cut where it must be, and says so."""
    from rich.text import Text
    from threadloom.tui.panes import fit

    facts = [("general-purpose ✓", ""), ("12 Jun 14:05", "")]
    row = fit(Text("⚙ Explore the project structure"), facts, 40).plain
    assert row.endswith("  general-purpo…") and "genera " not in row
    assert fit(Text("⚙ Explore"), facts, 44).plain.endswith("general-purpose ✓")
    assert fit(Text("How can I make this work"), [("12 Jun 14:05", ""), ("3 msgs", "")], 30).plain.endswith(
        "12 Jun"
    )


async def test_tokens_an_agent_never_recorded_read_unknown_in_the_row_and_header(tmp_path: Path) -> None:
    """An Amazon Q save holds no token counts: its row and the viewer's header say "? tok",
    "? tokens", as its cost is left unsaid, rather than "0"."""
    from threadloom.tui.messages import MessageView

    from tests.builders.amazon_q import CONV, pairs, save, state
    from tests.tui_support import ingested_db, until

    save(tmp_path / "saves" / "convo.md", state(pairs()))
    app = make_app(ingested_db(tmp_path, tmp_path / "saves"))
    async with run_test(app, size=(140, 40)) as pilot:
        await until(pilot, lambda: app.query_one(SessionTree).sessions)
        app.browser.jump_to_session(CONV)
        view = app.query_one(MessageView)
        await until(pilot, lambda: view.session_id == CONV)
        tree = app.query_one(SessionTree)
        await pilot.pause()
        rows = [tree.render_line(y).text for y in range(tree.size.height)]
        row = next(line for line in rows if "deploy the stack" in line)
        assert "? tok" in row and " 0 tok" not in row
        assert "· ? tokens" in str(view.border_subtitle) and "0 tokens" not in str(view.border_subtitle)


async def test_the_facts_under_the_list_are_whole_at_any_width(tmp_path: Path) -> None:
    """The facts under the sessions pane were cut where the pane ended: a cost of $0.0069 read
    "$0.006…". Whole facts are left out instead (the model, then the date the row
    shows), and a wider pane shows them again."""
    from textual.geometry import Region

    from tests.tui_support import until

    sid = "abcdef00-0000-4000-8000-0000000fac75"
    app = make_app(priced_session(tmp_path, sid))

    def under_the_list() -> str:
        tree = app.query_one(SessionTree)
        return tree.render_lines(Region(0, 0, *tree.outer_size))[-1].text

    async with run_test(app, size=(140, 40)) as pilot:
        tree = app.query_one(SessionTree)
        await until(pilot, lambda: app.conn is not None and bool(tree.sessions))
        await pilot.press("2")
        cost = tree.sessions[0].cost_text
        assert cost == "$0.0069", cost
        await until(pilot, lambda: "msgs" in under_the_list())
        line = under_the_list()
        assert f"102 msgs · 1.3k tok · {cost} ─" in line and "…" not in line, line
        await pilot.press(*"]]]]]]")  # the pane widened: the date and the model come back
        await until(pilot, lambda: "sonnet-4-5" in under_the_list())
        assert f"01 Mar 2026 · 102 msgs · 1.3k tok · {cost} · sonnet-4-5" in under_the_list()


async def test_a_session_without_dates_keeps_the_columns_of_the_rows_around_it(tmp_path: Path) -> None:
    """A session whose records carry no time left its blank date out whenever the row was short of
    room: its message count moved into the date's column and its tokens into the counts', out of
    line with the rows above and below. Its date column stays, blank."""
    from tests.builders.claude import Transcript
    from tests.tui_support import ingested_db, until

    root = tmp_path / "projects"
    for n, (sid, dated) in enumerate(
        [("da7ed000-0000-4000-8000-0000000da7e1", True), ("0da7ed00-0000-4000-8000-0000000da7e2", False)]
    ):
        t = Transcript(root / "-home-dev-app" / f"{sid}.jsonl", sid)
        for turn in range(3 + n):
            t.user(f"Question {turn} of session {n}")
            t.assistant("Answer.", usage={"input_tokens": 700, "output_tokens": 100})
        if not dated:
            for line in t.lines:
                del line["timestamp"]
        t.write()
    app = make_app(ingested_db(tmp_path, root))
    async with run_test(app, size=(200, 50)) as pilot:  # room for the date, the count and the tokens
        tree = app.query_one(SessionTree)
        await until(pilot, lambda: app.conn is not None and len(tree.sessions) == 2)
        await pilot.press("2")
        rows = [tree.render_line(y).text.rstrip() for y in range(2)]
        assert "6 msgs" in rows[0] and "8 msgs" in rows[1], rows
        dated, undated = sorted(rows, key=lambda row: "8 msgs" in row)
        assert dated.index("6 msgs") == undated.index("8 msgs"), rows
        assert ("tok" in dated) == ("tok" in undated), rows


async def test_the_facts_under_the_messages_are_whole_too(tmp_path: Path) -> None:
    """The message pane's facts were cut where its border ended as well ("$0.0…"): whole facts
    only, the last giving way, and back when the terminal widens."""
    from textual.geometry import Region
    from threadloom.tui.messages import MessageView

    from tests.tui_support import until

    sid = "abcdef00-0000-4000-8000-0000000fac76"
    app = make_app(priced_session(tmp_path, sid))

    def under_the_messages() -> str:
        view = app.query_one(MessageView)
        return view.render_lines(Region(0, 0, *view.outer_size))[-1].text

    async with run_test(app, size=(40, 20)) as pilot:
        view = app.query_one(MessageView)
        await until(pilot, lambda: view.session_id == sid)
        await pilot.press("3")
        await until(pilot, lambda: "messages" in under_the_messages())
        line = under_the_messages()
        assert "102 messages · 1.3k tokens ─" in line and "…" not in line, line
        await pilot.resize_terminal(120, 30)
        await until(pilot, lambda: "sonnet-4-5" in under_the_messages())
        assert "102 messages · 1.3k tokens · $0.0069 · sonnet-4-5" in under_the_messages()


async def test_a_session_of_another_project_jumped_to_reads_its_project_s_sessions_once(
    demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Enter on a search hit (or a jump) in another project listed its sessions, and the project
    highlighted for it read them again to see that nothing had changed: 0.14-0.5 s more in a
    project of a thousand sessions. They are read once."""
    from threadloom.core.read import browse

    from tests.tui_support import session_id, settle

    read: list[str | None] = []
    project_sessions = browse.project_sessions

    def counted(conn: sqlite3.Connection, project: str | None, **kw: bool) -> list[browse.SessionSummary]:
        read.append(project)
        return project_sessions(conn, project, **kw)

    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        target = session_id(app, "Add a tmux config with vim keys")
        await settle(pilot)
        monkeypatch.setattr(browse, "project_sessions", counted)
        app.browser.show_session(target)
        await settle(pilot)
        assert app.query_one(SessionTree).project == "/home/dev/dotfiles"
        assert app.browser.open_session_id == target
        assert read == ["/home/dev/dotfiles"]


@pytest.mark.parametrize("size", [(140, 40), (220, 40)])
async def test_subagent_and_branch_rows_keep_their_columns_in_line_with_the_sessions(
    demo_db: Path, size: tuple[int, int]
) -> None:
    """A subagent's or a branch's row, narrower by its indent and with its type or "latest" to
    say, kept fewer columns than the sessions' rows, each moved right by the one it dropped: its
    date stood where theirs says the messages, and a nested subagent's said its type alone. Every
    row's date, messages, tokens and model are in the same columns."""
    import re

    from tests.tui_support import scene_nested_subagents, settle

    app = make_app(demo_db)
    async with run_test(app, size=size) as pilot:
        await pilot.pause()
        await scene_nested_subagents(pilot)
        await settle(pilot)
        tree = app.query_one(SessionTree)
        lines = [tree.render_line(y).text for y in range(tree.size.height)]
        rows = [line for line in lines if re.search(r"\d\d [A-Z][a-z]{2} \d\d:\d\d", line)]
        assert len(rows) == 6, lines  # two sessions, two branches, two subagents (one nested)
        dates = {re.search(r"\d\d [A-Z][a-z]{2} \d\d:\d\d", row).start() for row in rows}
        assert len(dates) == 1, rows
        sessions = [row for row in rows if "↳ branch" not in row]
        counts = [re.search(r"\d+ msgs?", row) for row in sessions]
        assert all(counts) and len({c.end() for c in counts if c}) == 1, sessions
        if size[0] == 220:  # room for every column: the model's too
            models = [re.search(r"(opus|sonnet|haiku)-[\d-]+", row) for row in sessions]
            assert all(models) and len({m.start() for m in models if m}) == 1, sessions


async def test_with_room_for_one_fact_every_row_keeps_its_date(demo_db: Path) -> None:
    """At 80 columns a row keeps one fact: a session's its date, but a subagent's kept its type
    ("Explore…") and a branch's "latest", in the place where the others say when."""
    import re

    from tests.tui_support import scene_nested_subagents, settle

    app = make_app(demo_db)
    async with run_test(app, size=(100, 30)) as pilot:
        await pilot.pause()
        await scene_nested_subagents(pilot)
        await pilot.press("2")  # the sessions pane, which a narrow screen shows alone
        await settle(pilot)
        tree = app.query_one(SessionTree)
        lines = [tree.render_line(y).text.rstrip() for y in range(tree.size.height)]
        rows = [line for line in lines if line.strip()]
        assert len(rows) == 6, lines  # two sessions, two branches, two subagents (one nested)
        assert all(re.search(r"\d\d [A-Z][a-z]{2}$", row) for row in rows), rows


def test_with_room_for_one_fact_and_no_dates_listed_a_row_says_what_it_is() -> None:
    """With no date in the list, the first column is the message count: a narrow subagent row kept
    that before its type."""
    import dataclasses

    from threadloom.core.read.browse import SessionSummary
    from threadloom.tui.panes import session_label

    blank = {f.name: None for f in dataclasses.fields(SessionSummary)}
    blank.update(
        id="s1", agent="claude-code", title="Investigate the flaky checkout test suite", message_count=12,
        is_subagent=True, kind="subagent", agent_type="Explore", is_warmup=False, turn_count=1,
        tool_call_count=0, branch_count=0, compaction_count=0, unpriced_messages=0, child_count=0,
        signal_count=0, has_usage=False, input_tokens=0, output_tokens=0, cache_creation_tokens=0,
        cache_read_tokens=0, started_at=None, ended_at=None,
    )  # fmt: skip
    row = SessionSummary(**blank)
    for width in (26, 30, 34):
        shown = session_label(row, width, 1.7e9, dates=False).plain
        assert "Explore" in shown and "msgs" not in shown, (width, shown)
