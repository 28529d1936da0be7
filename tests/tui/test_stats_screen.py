"""The stats screen on the demo archive: it opens (key and palette), shows the ledger's sums,
switches grouping, and Enter narrows the browser to a project or session."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, Sparkline, Static
from threadloom.core.insight import stats
from threadloom.tui.app import ThreadloomApp
from threadloom.tui.panes import ProjectList, SessionTree
from threadloom.tui.stats import StatsScreen

from tests.tui_support import make_app, run_test, table_rows

DEMO_LONG_TURNS = 12


def app_over(projects: Path) -> ThreadloomApp:
    """The app over a database of these Claude Code projects alone."""
    from threadloom.core.ingest.pipeline import run_ingest
    from threadloom.core.store import db

    path = projects.parent / "t.db"
    conn = db.connect(path)
    run_ingest(conn, [projects], include_defaults=False)
    conn.close()
    return make_app(path)


async def test_stats_screen_groups_and_narrows_the_browser(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        assert app.conn is not None
        days = stats.report(app.conn, "day")
        await pilot.press("S")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, StatsScreen)
        table = screen.query_one(DataTable)
        rows = table_rows(table)
        assert [r[0] for r in rows] == [d.period for d in reversed(days)] and len(rows) >= 3
        assert rows[0][3] == days[-1].cost_text and rows[0][1] == str(days[-1].sessions)
        assert table.cursor_row == 0  # the latest day
        spark = screen.query_one(Sparkline)
        assert spark.data is not None and max(spark.data) == pytest.approx(max(d.cost_usd or 0 for d in days))
        whole = stats.report(app.conn, "total")[0]
        assert whole.cost_text in str(screen.query_one("#stats-title", Static).render())

        await pilot.press("o")
        models = table_rows(table)
        assert {r[0] for r in models} == {r.period for r in stats.report(app.conn, "model")}
        assert "claude-sonnet-4-5-20250929" in {r[0] for r in models}
        await pilot.press("m")
        assert len(table_rows(table)) == len(stats.report(app.conn, "month"))

        # Enter on a day: that day's sessions
        await pilot.press("d", "down", "enter")
        await pilot.pause()
        day = days[-2].period
        assert screen.by == "session" and day in str(table.border_title)
        assert sum(int(r[1]) for r in table_rows(table)) == days[-2].sessions

        await pilot.press("p")  # that day's projects
        assert [r[0] for r in table_rows(table)] == [
            r.label
            for r in stats.report(
                app.conn, "project", since=stats.parse_day(day), until=stats.parse_day(day, end=True)
            )
        ]
        await pilot.press("escape")  # the whole archive again
        assert isinstance(app.screen, StatsScreen) and "day" not in str(table.border_title)

        # Enter on a project: the browser, that project's sessions listed
        projects = stats.report(app.conn, "project")
        await pilot.press("down", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, StatsScreen)
        chosen = app.browser.query_one(ProjectList).current
        assert chosen is not None and chosen.path == projects[1].key
        assert app.browser.query_one(SessionTree).has_focus

        # Enter on a session: opened in the browser
        await pilot.press("S", "s", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, StatsScreen)
        assert app.browser.open_session_id == stats.report(app.conn, "session")[0].key


async def test_the_palette_opens_it_and_the_project_list_shows_costs(demo_db: Path) -> None:
    app = make_app(demo_db)
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        assert app.conn is not None
        project_list = app.browser.query_one(ProjectList)
        by_path = {r.key: r for r in stats.report(app.conn, "project")}
        for n, project in enumerate(project_list.projects):
            label = str(project_list.get_option_at_index(n).prompt)
            assert project.cost_text and project.cost_text in label.splitlines()[1]
            assert project.cost_usd == pytest.approx(by_path[project.path].cost_usd)
        await pilot.press("ctrl+p", *"stats")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, StatsScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, StatsScreen)


async def test_a_session_without_any_time_is_the_last_row_of_the_days(tmp_path: Path) -> None:
    """Its row is there (the days add up to the header's total), after the dated ones; the chart
    leaves it out, and Enter on it says why it narrows to nothing instead of failing."""
    from tests.builders.claude import Transcript

    for n, stamped in enumerate((True, False)):
        sid = f"{n}e57da7e-0000-4000-8000-00000000000{n}"
        t = Transcript(tmp_path / "projects" / "-srv-app" / f"{sid}.jsonl", sid)
        t.user(f"question {n}")
        t.assistant("answer", usage={"input_tokens": 10 + n, "output_tokens": 5})
        if not stamped:
            for line in t.lines:
                del line["timestamp"]
        t.write()
    app = app_over(tmp_path / "projects")
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("S")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, StatsScreen)
        table = screen.query_one(DataTable)
        assert [(r[0], r[4]) for r in table_rows(table)] == [("2026-03-01", "10"), ("(no date)", "11")]
        assert len(screen.query_one(Sparkline).data or []) == 1  # the one dated day
        await pilot.press("down", "enter")
        await pilot.pause()
        assert screen.by == "day" and app.screen is screen
        assert any("no date" in n.message for n in app._notifications)


async def test_the_chart_ends_on_the_last_day_that_cost_something_and_the_columns_fit(tmp_path: Path) -> None:
    """A session today that spent nothing would end the chart on a flat line (highest $0.00); and a
    long title or model name must not push the last column off a 120-column screen."""
    from tests.builders.claude import Transcript

    def session(n: int, day: str, usage: dict | None, title: str) -> None:
        sid = f"{n}c4a7000-0000-4000-8000-00000000000{n}"
        t = Transcript(tmp_path / "projects" / "-srv-app" / f"{sid}.jsonl", sid)
        t.user(title)
        t.assistant("ok", model="claude-sonnet-4-5-20250929", usage=usage)
        for line in t.lines:
            line["timestamp"] = f"{day}T10:00:00.000Z"
        t.write()

    big = {"input_tokens": 1_000_000, "output_tokens": 50_000}
    session(1, "2026-02-10", big, "a very long title that goes on and on about what this session did " * 2)
    session(2, "2026-03-01", {"input_tokens": 0, "output_tokens": 0}, "nothing spent")
    app = app_over(tmp_path / "projects")
    async with run_test(app, size=(120, 30)) as pilot:
        await pilot.press("S")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, StatsScreen)
        axis = str(screen.query_one("#stats-spark-axis", Static).render())
        assert axis.startswith("2026-02-10") and axis.endswith("2026-02-10") and "highest $0.00" not in axis
        table = screen.query_one(DataTable)
        for by in "so":
            await pilot.press(by)
            await pilot.pause()
            widths = sum(column.get_render_width(table) for column in table.columns.values())
            assert widths <= table.scrollable_content_region.width, by
        await pilot.resize_terminal(80, 24)  # the totals line wraps rather than lose its end
        await pilot.pause()
        title = screen.query_one("#stats-title", Static)
        assert title.size.height == 2 and "failed) · +" in str(title.render()).replace("\n", " ")


async def test_the_chart_of_a_cheap_archive_says_its_highest_day_in_cents_and_less(tmp_path: Path) -> None:
    """Every day under half a cent: the axis said "highest $0.00"."""
    from tests.builders.claude import Transcript

    sid = "5c4a7000-0000-4000-8000-000000000005"
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{sid}.jsonl", sid)
    t.user("a small question")
    t.assistant(
        "a small answer", model="claude-sonnet-4-5-20250929", usage={"input_tokens": 60, "output_tokens": 8}
    )
    t.write()
    app = app_over(tmp_path / "projects")
    async with run_test(app, size=(120, 30)) as pilot:
        await pilot.press("S")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, StatsScreen)
        day = stats.report(app.conn, "day")[0]
        assert day.cost_usd is not None and 0 < day.cost_usd < 0.005
        axis = str(screen.query_one("#stats-spark-axis", Static).render())
        assert f"cost per day, highest {day.cost_text}" in axis and "$0.00 " not in axis, axis


async def first_cells(tmp_path: Path, cwd: str, prompt: str, keys: str, width: int) -> tuple[str, list[str]]:
    """One session in `cwd` opened with `prompt`, then the stats grouped by `keys` ("S", "p"): the
    grouping shown and the first column's cells."""
    from tests.builders.claude import Transcript

    sid = "5e57da7e-0000-4000-8000-0000000000f1"
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{sid}.jsonl", sid, cwd=cwd)
    t.user(prompt)
    t.assistant("answer", usage={"input_tokens": 10, "output_tokens": 5})
    t.write()
    app = app_over(tmp_path / "projects")
    async with run_test(app, size=(width, 40)) as pilot:
        await pilot.pause()
        await pilot.press(*keys)
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, StatsScreen)
        return screen.by, [r[0] for r in table_rows(screen.query_one(DataTable))]


async def test_a_project_whose_folder_name_holds_line_breaks_is_named_whole(tmp_path: Path) -> None:
    """By project, a folder named "new\\nline" was the row "new": a cell draws its first line only,
    and another project's name stood for it. The break is drawn as ␊."""
    assert await first_cells(tmp_path, "/srv/new\nline", "question", "Sp", 140) == (
        "project",
        ["new\u240aline"],
    )


async def test_a_session_row_shows_its_title_first_on_a_narrow_screen(tmp_path: Path) -> None:
    """By session at 120 columns the first column is 20 wide: the id came first and left a title
    five characters. The title comes first, the id after it."""
    by, cells = await first_cells(tmp_path, "/srv/app", "Refactor the checkout flow", "Ss", 120)
    assert by == "session" and cells[0].startswith("Refactor the checko"), cells


async def test_a_long_table_fills_a_slice_a_refresh_and_keys_are_answered_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By session over 18,575 sessions, every row after the first page was added at once: the
    screen froze ~3 s after its first paint, a key waiting all that time. The rest come a slice at
    a refresh (here 5 rows, then 10 a slice, over 47 sessions): the table grows in steps."""
    from tests.builders.claude import Transcript

    monkeypatch.setattr("threadloom.tui.stats.FIRST_ROWS", 5)
    monkeypatch.setattr("threadloom.tui.stats.LATER_ROWS", 10)
    for n in range(47):
        sid = f"5e57da7e-0000-4000-8000-{n:012d}"
        t = Transcript(tmp_path / "projects" / "-srv-app" / f"{sid}.jsonl", sid, cwd="/srv/app")
        t.user(f"task {n}")
        t.assistant("done", usage={"input_tokens": 10, "output_tokens": 5})
        t.write()
    slices: list[tuple[int, int]] = []  # (first row, rows) of each slice added
    add_rows = StatsScreen._add_rows

    def adding(self: StatsScreen, shown: int, start: int, count: int) -> None:
        slices.append((start, min(count, len(self.rows) - start)))
        add_rows(self, shown, start, count)

    monkeypatch.setattr(StatsScreen, "_add_rows", adding)
    app = app_over(tmp_path / "projects")
    async with run_test(app, size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("S", "s")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, StatsScreen) and screen.query_one(DataTable).row_count == 47
    assert slices[-6:] == [(0, 5), (5, 10), (15, 10), (25, 10), (35, 10), (45, 2)], slices


async def test_on_a_narrow_terminal_a_day_s_cost_is_on_screen_whole(tmp_path: Path) -> None:
    """The table is wider than a narrow terminal and scrolls sideways: the cost comes with the
    counts, so what is on screen holds it whole (after the four token columns it was cut in the
    middle at 80 columns: "$11.4" for $11.49)."""
    from tests.builders.claude import Transcript

    sid = "0e57da7e-0000-4000-8000-000000000009"
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{sid}.jsonl", sid)
    t.user("a long job")
    usage = {
        "input_tokens": 1_234_567,
        "output_tokens": 345_678,
        "cache_creation_input_tokens": 2_345_678,
        "cache_read_input_tokens": 12_345_678,
    }
    t.assistant("done", usage=usage)
    t.write()
    app = app_over(tmp_path / "projects")
    async with run_test(app, size=(64, 24)) as pilot:
        await pilot.pause()
        assert app.conn is not None
        day = stats.report(app.conn, "day")[-1]
        await pilot.press("S")
        await pilot.pause()
        table = app.screen.query_one(DataTable)
        drawn = "\n".join(strip.text for strip in table.render_lines(table.region.reset_offset))
        assert day.cost_text and day.cost_text in drawn and "cost" in drawn, (day.cost_text, drawn)
