"""Words the CLI and the TUI print about counts and titles: singular and plural agree, and a title
made from a long prompt ends on a word with an ellipsis."""

from __future__ import annotations

from threadloom.core.base.text import count_of, left_as_is, prompt_title


def test_counts_agree_with_their_nouns_and_verbs() -> None:
    assert [count_of(n, "message") for n in (0, 1, 2, 2310)] == [
        "0 messages",
        "1 message",
        "2 messages",
        "2,310 messages",
    ]
    assert f"{count_of(1, 'file')} edited after this point {left_as_is(1)}" == (
        "1 file edited after this point stays as it is"
    )
    assert f"{count_of(3, 'file')} edited after this point {left_as_is(3)}" == (
        "3 files edited after this point stay as they are"
    )


def test_a_title_from_a_long_prompt_ends_on_a_word_with_an_ellipsis() -> None:
    prompt = "Pretend we have a list of tasks " * 10  # 320 characters
    title = prompt_title(prompt)
    assert len(title) <= 200 and title.endswith("tasks…")
    assert prompt_title("short prompt") == "short prompt"
    assert prompt_title("x" * 300) == "x" * 199 + "…"  # one long word: cut where it must be


def test_folders_as_sessions_are_grouped_by_them() -> None:
    from threadloom.core.base.text import folder_name, project_folder

    assert project_folder("c:\\Users\\dev") == "C:\\Users\\dev" and project_folder("d:/x") == "D:/x"
    assert project_folder("/home/c:\\x") == "/home/c:\\x" and project_folder("c:") == "c:"
    assert project_folder("\\\\server\\share") == "\\\\server\\share"
    assert [folder_name(p) for p in ("C:\\work\\shop\\", "/home/a\\b", "/", "shop", "\\\\srv\\share")] == [
        "shop",
        "a\\b",
        "/",
        "shop",
        "share",
    ]
