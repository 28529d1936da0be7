"""The viewer on Claude Code's own shapes: replies that open on an empty thinking block, `!`
commands, slash commands and their output, IDE selections, TodoWrite lists and hooks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from threadloom.tui.app import ThreadloomApp
from threadloom.tui.message_draw import visible
from threadloom.tui.messages import MessageView

from tests.builders.claude import markup_session
from tests.support import CORPUS
from tests.tui_support import ingested_db, make_app, run_test, until


async def open_markup(tmp_path: Path) -> tuple[ThreadloomApp, str]:
    t = markup_session(tmp_path)
    return make_app(ingested_db(tmp_path, tmp_path / "projects")), t.session_id


def drawn(view: MessageView) -> list[str]:
    """Every message's lines as drawn, one string per message position."""
    return ["\n".join(s.text.rstrip() for s in view.ensure(pos).strips) for pos in range(len(view.seqs))]


async def test_a_reply_that_opens_on_empty_thinking_has_its_own_header(tmp_path: Path) -> None:
    """Opus 4.7 writes an empty thinking block first on most API messages: that line draws nothing,
    and its next line (the text) took it for a continuation, merging the reply under the header
    before it (the first reply read as part of the user's prompt)."""
    app, sid = await open_markup(tmp_path)
    async with run_test(app, size=(140, 50)) as pilot:
        await until(pilot, lambda: app.query_one(MessageView).session_id == sid)
        view = app.query_one(MessageView)
        lines = drawn(view)
        ids = [view.row(pos).message_id for pos in range(len(view.seqs))]  # type: ignore[union-attr]
        for message_id in ("msg_tok_1", "msg_tok_2", "msg_tok_3", "msg_tok_4"):
            shown = [pos for pos, mid in enumerate(ids) if mid == message_id and lines[pos].strip()]
            assert shown, message_id
            assert "◆ assistant" in lines[shown[0]], (message_id, lines[shown[0]])
            assert all("◆ assistant" not in lines[pos] for pos in shown[1:])  # one header per message
        looking = next(pos for pos, text in enumerate(lines) if "Looking at the loop" in text)
        assert "◆ assistant" in lines[looking]


MARKUP_TAGS = ("<bash-", "<command-", "<local-command", "<ide_", "<system-reminder")


def position(lines: list[str], needle: str) -> int:
    return next(pos for pos, text in enumerate(lines) if needle in text)


async def test_claude_codes_markup_is_drawn_for_what_it_is(tmp_path: Path) -> None:
    app, sid = await open_markup(tmp_path)
    async with run_test(app, size=(160, 60)) as pilot:
        await until(pilot, lambda: app.query_one(MessageView).session_id == sid)
        view = app.query_one(MessageView)
        lines = drawn(view)
        whole = "\n".join(lines)
        assert not any(tag in whole for tag in MARKUP_TAGS), whole
        # the caveat and a command's output are quiet notes, never the user's turn
        caveat = position(lines, "local commands follow")
        assert "● user" not in lines[caveat]
        model = position(lines, "/model opus")
        assert "● user" in lines[model]
        output = position(lines, "↳ Set model to opus")
        assert output == model + 1 and "● user" not in lines[output]
        # an empty output (what /context left here) draws nothing, not an empty user message
        context = position(lines, "/context")
        assert lines[context + 1] == "" and visible(view.row(context + 1)) is False  # type: ignore[arg-type]
        # the IDE selection is a chip beside the words typed
        prompt = position(lines, "Why does the tokenizer drop the last token?")
        assert "§ split.py:12-14" in lines[prompt] and "This may or may not" not in lines[prompt]
        # the `!` command, then its output closed under it: how much, and its first line
        bang = position(lines, "! uv run pytest -q tests/test_split.py")
        assert "● user" in lines[bang]
        assert "▸ output  5 lines · stderr 1 line  F...." in lines[bang + 1]
        assert "● user" not in lines[bang + 1] and "FAILURES" not in lines[bang + 1]


async def test_a_bang_commands_output_opens_as_the_terminal_showed_it(tmp_path: Path) -> None:
    """Enter on the output: stdout as written (`=== FAILURES ===` is no Markdown heading, `_ x _`
    no emphasis), stderr in red; Enter again closes it."""
    app, sid = await open_markup(tmp_path)
    async with run_test(app, size=(160, 60)) as pilot:
        await until(pilot, lambda: app.query_one(MessageView).session_id == sid)
        view = app.query_one(MessageView)
        view.focus()
        for _ in range(60):
            block = view.current_block()
            if block is not None and block.kind == "output":
                break
            await pilot.press("down")
        await pilot.press("enter")
        rendered = view.ensure(view.cursor[0])
        text = "\n".join(s.text.rstrip() for s in rendered.strips)
        assert "▾ output" in text
        assert "=== FAILURES ===" in text and "_ test_last_token _" in text and "1 failed, 4 passed" in text
        red = [seg for strip in rendered.strips for seg in strip if "no coverage data" in seg.text]
        assert red and red[0].style is not None and red[0].style.color is not None
        assert red[0].style.color.triplet is not None and red[0].style.color.triplet.red > 200
        await pilot.press("enter")
        assert "FAILURES" not in "\n".join(s.text for s in view.ensure(view.cursor[0]).strips)


async def test_todo_lists_are_checklists_and_say_what_changed(tmp_path: Path) -> None:
    app, sid = await open_markup(tmp_path)
    async with run_test(app, size=(160, 60)) as pilot:
        await until(pilot, lambda: app.query_one(MessageView).session_id == sid)
        view = app.query_one(MessageView)
        lines = drawn(view)
        first = position(lines, "0 of 3 done")
        assert "◐ Reproducing the dropped token\n" in lines[first] + "\n"  # a new list: all of it
        assert "☐ Fix the loop bound" in lines[first] and "☐ Add a regression test" in lines[first]
        assert '{"todos"' not in "\n".join(lines)
        second = position(lines, "1 of 4 done · ◐ Fixing the loop bound")
        changed = lines[second].split("\n")[1:]
        assert [line.strip() for line in changed] == [
            "☑ Reproduce the dropped token",
            "◐ Fixing the loop bound",
            "+ ☐ Run the whole suite",
        ]  # the item left as it was is not repeated
        view.action_toggle_all()  # opened: the whole list
        await pilot.pause()
        whole = drawn(view)[second].split("\n")[1:]
        assert [line.strip() for line in whole] == [
            "☑ Reproduce the dropped token",
            "◐ Fixing the loop bound",
            "☐ Add a regression test",
            "☐ Run the whole suite",
        ]


async def test_hooks_show_their_event_command_exit_code_and_duration(tmp_path: Path) -> None:
    app, sid = await open_markup(tmp_path)
    async with run_test(app, size=(200, 60)) as pilot:
        await until(pilot, lambda: app.query_one(MessageView).session_id == sid)
        view = app.query_one(MessageView)
        lines = drawn(view)
        whole = "\n".join(lines)
        assert "SessionStart:startup hook  ./scripts/notify.sh started  exit 0 · 1.2 s" in lines[0]
        assert "UserPromptSubmit hook  ./scripts/notify.sh busy  exit 0 · 106 ms" in whole
        failed = position(lines, "PostToolUse:TodoWrite hook")  # after the list's result, under its call
        assert "./scripts/notify.sh todo  exit 1 · 75 ms" in lines[failed]
        assert "PreToolUse:Bash hook  ./scripts/guard.sh  blocked  rm -rf is not allowed here" in whole
        assert "⚙ Stop hook: ./scripts/notify.sh idle · 102 ms" in whole
        view.focus()  # Enter on a hook shows what it printed
        for _ in range(60):
            block = view.current_block()
            if (
                block is not None
                and block.kind == "hook"
                and block.key
                and "PostToolUse"
                in "\n".join(s.text for s in view.ensure(view.cursor[0]).strips[block.start : block.end])
            ):
                break
            await pilot.press("down")
        await pilot.press("enter")
        assert "notify: no display" in "\n".join(s.text for s in view.ensure(view.cursor[0]).strips)


async def test_prompt_jumps_stop_at_what_the_user_typed(tmp_path: Path) -> None:
    app, sid = await open_markup(tmp_path)
    async with run_test(app, size=(160, 60)) as pilot:
        await until(pilot, lambda: app.query_one(MessageView).session_id == sid)
        view = app.query_one(MessageView)
        view.focus()
        await pilot.press("g")
        landed = []
        for _ in range(6):
            await pilot.press("right_curly_bracket")
            row = view.row(view.cursor[0])
            assert row is not None
            landed.append(row.content or "")
        firsts = [text.split(">", 1)[0] if text.startswith("<") else text for text in landed]
        # /model opus (given with its argument), the prompt under its IDE selection, the `!` command,
        # the last prompt; not /context, the outputs nor the caveat; then no later prompt
        assert (
            firsts
            == ["<command-name", "<ide_selection", "<bash-input"] + ["Fix it and run the tests again."] * 3
        )


REAL_2_1_114 = (
    CORPUS
    / "claude-code"
    / "handgemacht-ai__claude-code-log"
    / "test"
    / "test_data"
    / "real_projects"
    / "-experiments-worktrees"
)


@pytest.mark.corpus
@pytest.mark.skipif(not REAL_2_1_114.is_dir(), reason="corpus absent")
async def test_a_real_opus_4_7_session_has_a_header_over_every_reply(tmp_path: Path) -> None:
    """A real 2.1.114 session by claude-opus-4-7, every thinking block of which is empty: each API
    message that shows anything shows its header once; its hooks and /exit read as they are."""
    shutil.copytree(REAL_2_1_114, tmp_path / "projects" / REAL_2_1_114.name)
    app = make_app(ingested_db(tmp_path, tmp_path / "projects"))
    sid = "ef958aa1-0e93-49f0-bb71-150f63befcd1"
    async with run_test(app, size=(160, 50)) as pilot:
        app.browser.jump_to_session(sid)
        await until(pilot, lambda: app.query_one(MessageView).session_id == sid)
        view = app.query_one(MessageView)
        lines = drawn(view)
        ids = [view.row(pos).message_id for pos in range(len(view.seqs))]  # type: ignore[union-attr]
        replies = {mid for pos, mid in enumerate(ids) if mid and lines[pos].strip()}
        assert len(replies) > 10
        for message_id in replies:
            shown = [pos for pos, mid in enumerate(ids) if mid == message_id and lines[pos].strip()]
            assert ["◆ assistant" in lines[pos] for pos in shown] == [True] + [False] * (len(shown) - 1)
        whole = "\n".join(lines)
        assert "SessionStart:startup hook" in whole and "exit 0 · 1.2 s" in whole
        assert "/exit" in whole and "↳ See ya!" in whole
        assert not any(tag in whole for tag in MARKUP_TAGS)


async def test_find_lands_on_a_match_inside_a_bang_commands_output_and_opens_it(tmp_path: Path) -> None:
    from tests.tui_support import wait_for_find

    app, sid = await open_markup(tmp_path)
    async with run_test(app, size=(160, 60)) as pilot:
        await until(pilot, lambda: app.query_one(MessageView).session_id == sid)
        view = app.query_one(MessageView)
        view.focus()
        await pilot.press("ctrl+f", *"failures")
        await wait_for_find(pilot)
        await pilot.press("enter")
        await pilot.pause()
        block = view.current_block()
        assert block is not None and block.kind == "output"
        text = "\n".join(s.text for s in view.ensure(view.cursor[0]).strips[block.start : block.end])
        assert "▾ output" in text and "=== FAILURES ===" in text
