"""Images the logs embed: where each sits and how big it is (`show`, `show --json`, the viewer's
pages), read again by entry and index only when wanted, decoded strictly, opened and saved safely."""

from __future__ import annotations

import base64
import json
import sqlite3
import stat
from pathlib import Path

import pytest
from threadloom.core.read import images
from threadloom.core.read.browse import message_page
from threadloom.core.read.query import messages

from tests.builders.claude import Transcript
from tests.support import THREAD, Rollout, ingest, run

SID = "eeeeeeee-1111-4222-8333-000000000001"
# a real 1×1 PNG (red): its bytes are checked, not only its declared type
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)


def block(data: str, media_type: str = "image/png") -> dict:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def claude_archive(root: Path) -> Path:
    """A prompt with an image, a Read whose result is an image, and a prompt whose image is not base64."""
    t = Transcript(root / "projects" / "-srv-app" / f"{SID}.jsonl", SID)
    b64 = base64.b64encode(PNG).decode()
    t.add(
        {
            "type": "user",
            "message": {"role": "user", "content": [block(b64), {"type": "text", "text": "what is this"}]},
        }
    )
    t.assistant(
        "Reading it",
        tools=[{"type": "tool_use", "id": "tu1", "name": "Read", "input": {"file_path": "/a.png"}}],
    )
    t.add(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": [block(b64 * 1)]}],
            },
        }
    )
    t.add(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [block("!!not base64!!"), {"type": "text", "text": "and this"}],
            },
        }
    )
    t.assistant("done")
    # compact, as Claude Code writes its lines (the image marker is looked for in those bytes)
    t.path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in t.lines))
    return root / "projects"


@pytest.fixture
def archived(conn: sqlite3.Connection, tmp_path: Path) -> sqlite3.Connection:
    ingest(conn, claude_archive(tmp_path))
    return conn


def test_show_and_the_viewer_find_each_image_its_place_and_size(archived: sqlite3.Connection) -> None:
    found = [
        (m.seq, i.media_type, i.size, i.place, i.tool_use_id, i.index)
        for m in messages(archived, SID)
        for i in m.images
    ]
    assert found == [
        (0, "image/png", len(PNG), "prompt", None, 0),
        (2, "image/png", len(PNG), "tool result", "tu1", 0),
        (3, "image/png", 10, "prompt", None, 0),
    ]
    page = message_page(archived, SID, 0, 10)
    assert [(m.seq, i.place, i.size) for m in page for i in m.images] == [
        (s, p, n) for s, _, n, p, _, _ in found
    ]
    # a page holds no image bytes: each is read again by its entry and index
    first = next(m for m in page if m.images)
    loaded = images.load(archived, first.entry_id, first.images[0].index)
    assert loaded == images.LoadedImage("image/png", PNG)
    garbage = next(m for m in page if m.seq == 3)
    assert images.load(archived, garbage.entry_id, 0).note == "not valid base64"
    assert images.load(archived, garbage.entry_id, 5).note == "the image is no longer in the archive"


def test_decoding_trusts_the_bytes_not_the_declared_type() -> None:
    assert images.decode("image/jpeg", base64.b64encode(PNG).decode()).media_type == "image/png"
    assert images.decode("image/png", base64.b64encode(b"<svg onload=x>").decode()).note == (
        "not a PNG, JPEG, GIF or WebP image"
    )
    assert images.decode("image/png", "").note == "no image data in the log"
    assert images.decode("image/png", "abc").note == "not valid base64"


def test_open_writes_a_private_file_and_hands_it_to_the_seam(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[Path] = []
    monkeypatch.setattr(images, "open_with", opened.append)
    path = images.open_image(images.LoadedImage("image/png", PNG))
    try:
        assert opened == [path] and path.suffix == ".png" and path.read_bytes() == PNG
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    finally:
        path.unlink()


def test_an_opener_that_fails_is_said_and_its_file_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    given: list[Path] = []

    def no_viewer(path: Path) -> None:
        given.append(path)
        raise OSError("xdg-open exited with status 3")

    monkeypatch.setattr(images, "open_with", no_viewer)
    with pytest.raises(OSError, match="status 3"):
        images.open_image(images.LoadedImage("image/png", PNG))
    assert len(given) == 1 and not given[0].exists()


def test_save_never_writes_over_a_file(tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(b"mine")
    image = images.LoadedImage("image/png", PNG)
    first, second = images.save_image(image, tmp_path, "shot"), images.save_image(image, tmp_path, "shot")
    assert (first.name, second.name) == ("shot-2.png", "shot-3.png")
    assert (tmp_path / "shot.png").read_bytes() == b"mine" and first.read_bytes() == PNG


def test_codex_data_url_images_in_a_prompt_and_a_tool_output(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    b64 = base64.b64encode(PNG).decode()
    r = Rollout(tmp_path / "codex", THREAD)
    r.meta()
    r.context()
    r.prompt("look")  # the user_message event (the prompt shown) and the model's copy of it
    r.lines[-2]["payload"]["images"] = [f"data:image/png;base64,{b64}", "https://example.com/x.png"]
    r.lines[-1]["payload"]["content"].append(
        {"type": "input_image", "image_url": f"data:image/png;base64,{b64}"}
    )
    r.lines[-1]["payload"]["content"].append(
        {"type": "input_image", "image_url": "/home/dev/shot.png"}
    )  # a path: no data
    r.say("calling")
    r.add(
        "response_item", {"type": "function_call", "name": "view_image", "call_id": "c1", "arguments": "{}"}
    )
    r.add(
        "response_item",
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": [{"type": "input_image", "image_url": f"data:image/png;base64,{b64}"}],
        },
    )
    r.say("a red dot")
    ingest(conn, r.write())
    sid = conn.execute("SELECT id FROM agent_sessions WHERE source = 'codex'").fetchone()[0]
    found = [(i.place, i.size, i.tool_use_id) for m in messages(conn, sid) for i in m.images]
    assert found == [("prompt", len(PNG), None), ("tool result", len(PNG), "c1")]
    page = message_page(conn, sid, 0, 100)
    entry = next(m for m in page if m.images and m.images[0].place == "tool result")
    assert images.load(conn, entry.entry_id, 0) == images.LoadedImage("image/png", PNG)


def test_show_json_marks_every_image_and_show_prints_one_line_each(tmp_path: Path) -> None:
    projects = claude_archive(tmp_path)
    db = str(tmp_path / "cli.db")
    assert run("ingest", "--db", db, "--only", "--source", str(projects)).returncode == 0
    data = json.loads(run("show", SID[:8], "--db", db, "--json").stdout)
    marked = [(m["seq"], i) for m in data["messages"] for i in m["images"]]
    assert marked == [
        (
            0,
            {
                "media_type": "image/png",
                "bytes": len(PNG),
                "place": "prompt",
                "tool_use_id": None,
                "index": 0,
            },
        ),
        (
            2,
            {
                "media_type": "image/png",
                "bytes": len(PNG),
                "place": "tool result",
                "tool_use_id": "tu1",
                "index": 0,
            },
        ),
        (3, {"media_type": "image/png", "bytes": 10, "place": "prompt", "tool_use_id": None, "index": 0}),
    ]
    assert "base64" not in json.dumps(data) and "iVBOR" not in json.dumps(data)
    shown = run("show", SID[:8], "--db", db).stdout
    assert shown.count("▣ image/png") == 3
    assert f"▣ image/png · {len(PNG)} B · in a tool result" in shown


def test_html_export_embeds_images_as_data_urls_and_names_what_it_cannot(
    archived: sqlite3.Connection,
) -> None:
    from threadloom.core.actions.export import export_session
    from threadloom.core.read.query import resolve_session

    session = resolve_session(archived, SID)
    page = export_session(archived, session, "html").data.decode()
    url = f'src="data:image/png;base64,{base64.b64encode(PNG).decode()}"'
    assert page.count(url) == 2
    # the Read's image sits inside that call's details, after its summary, not as a user message
    call = page.index("<b>Read</b>")
    assert call < page.index(url, call) < page.index("</details>", call)
    assert "▣ image/png · 10 B · in the prompt (not valid base64)" in page
    md = export_session(archived, session, "md").data.decode()
    assert (
        md.count("*▣ image/png · 69 B · in the prompt*") == 1 and "*▣ image/png · 10 B · in the prompt*" in md
    )
    read = md.index("<b>Read</b>")  # the Read's image under its call
    assert read < md.index("*▣ image/png · 69 B · in a tool result*") < md.index("</details>", read)
    assert "iVBOR" not in md  # Markdown names images; only the HTML page embeds them
    data = json.loads(export_session(archived, session, "json").data)
    assert [i["place"] for m in data["messages"] for i in m["images"]] == ["prompt", "tool result", "prompt"]


def test_html_export_embeds_only_real_images_of_the_four_types(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    """The bytes decide: an SVG (which can hold script) declared image/png is named, not embedded;
    a PNG declared text/html is embedded as image/png."""
    from threadloom.core.actions.export import export_session
    from threadloom.core.read.query import resolve_session

    sid = "eeeeeeee-1111-4222-8333-000000000002"
    t = Transcript(tmp_path / "p" / "projects" / "-srv-x" / f"{sid}.jsonl", sid)
    svg = base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg' onload='alert(1)'/>").decode()
    content = [
        {"type": "text", "text": "two"},
        block(svg),
        block(base64.b64encode(PNG).decode(), 'text/html"><script>x</script>'),
    ]
    t.add({"type": "user", "message": {"role": "user", "content": content}})
    t.assistant("ok")
    t.path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in t.lines))
    ingest(conn, tmp_path / "p" / "projects")
    page = export_session(conn, resolve_session(conn, sid), "html").data.decode()
    assert "data:image/svg" not in page and "onload" not in page and "<script>x" not in page
    assert "(not a PNG, JPEG, GIF or WebP image)" in page
    assert page.count('src="data:image/png;base64,') == 1


def test_gemini_inline_data_in_a_prompt(
    conn: sqlite3.Connection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "ghome"))
    project = tmp_path / "ghome" / ".gemini" / "tmp" / "shop"
    project.mkdir(parents=True)
    (project / ".project_root").write_text("/home/dev/shop\n")
    sid = "5f0e2a8c-1b2d-4e3f-9a0b-c1d2e3f4a5b7"
    b64 = base64.b64encode(PNG).decode()
    lines = [
        {
            "sessionId": sid,
            "projectHash": hashlib.sha256(b"/home/dev/shop").hexdigest(),
            "kind": "main",
            "startTime": "2026-04-29T21:39:22.319Z",
            "lastUpdated": "2026-04-29T21:39:22.319Z",
        },
        {
            "id": "u1",
            "timestamp": "2026-04-29T21:39:33.155Z",
            "type": "user",
            "content": [{"text": "what is this"}, {"inlineData": {"mimeType": "image/png", "data": b64}}],
        },
        {
            "id": "g1",
            "timestamp": "2026-04-29T21:39:35.125Z",
            "type": "gemini",
            "content": "a red dot",
            "model": "gemini-3-flash-preview",
        },
    ]
    path = project / "chats" / "session-2026-04-29T21-39-5f0e2a8c.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    ingest(conn, path)
    found = [(m.role, i.place, i.size) for m in messages(conn, sid) for i in m.images]
    assert found == [("user", "prompt", len(PNG))]
    entry = next(m for m in message_page(conn, sid, 0, 10) if m.images)
    assert images.load(conn, entry.entry_id, 0) == images.LoadedImage("image/png", PNG)
