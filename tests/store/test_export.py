"""`threadloom export`: Markdown, one self-contained HTML page and JSON, built from a real archive,
with hostile log values kept inert and secrets masked on request."""

from __future__ import annotations

import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from threadloom.core.actions.export import ExportError, export_session
from threadloom.core.base.redact import Redactor
from threadloom.core.read.query import resolve_session

from tests.builders.claude import Transcript, tool_use
from tests.support import ingest

SID = "e4e4e4e4-1111-4222-8333-000000000e01"
ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-ant-api03-" + "A" * 40


def session_with_everything(root: Path) -> Transcript:
    """A prompt, a rewind, a Bash call with coloured output, an Edit with its patch, a Task whose
    subagent answers, and hostile text: tags, a javascript: link, escape sequences, a secret."""
    t = Transcript(root / "projects" / "-home-dev-app" / f"{SID}.jsonl", SID)
    t.user("Fix the **tax** rounding")
    answer = t.assistant("Looking at it.")
    t.user("Rewrite the whole module")
    t.assistant("Abandoned idea")
    t.user("No: fix the rounding, test first", parent=answer)  # the rewind: a second branch
    t.assistant(
        "## Plan\n\n1. run the tests\n2. fix `round()`\n\n```python\nprint(round(2.675, 2))\n```\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n<script>alert(1)</script> [x](javascript:alert(1))",
        thinking="Floats again.",
        tools=[tool_use("toolu_bash", "Bash", command="npm test", description="run tests")],
    )
    t.tool_result("toolu_bash", "\x1b[31mFAIL\x1b[0m total.test.ts\x1b]0;pwned\x07", is_error=True)
    t.assistant(
        None,
        tools=[
            tool_use(
                "toolu_edit", "Edit", file_path="/home/dev/app/tax.py", old_string="x = 1", new_string="x = 2"
            )
        ],
    )
    t.tool_result("toolu_edit", "The file /home/dev/app/tax.py has been updated.")
    t.assistant(
        None, tools=[tool_use("toolu_task", "Task", description="Check docs", prompt="Read the docs")]
    )
    t.tool_result(
        "toolu_task",
        "Docs say round half even.",
        tool_use_result={"status": "completed", "agentId": "ad0c5de1"},
    )
    t.user(f"here is my key {SECRET} and\nOPENAI_API_KEY=sk-proj-{'b' * 30}")
    t.assistant("Thanks, never paste keys.")
    t.write()
    sub = Transcript(
        root / "projects" / "-home-dev-app" / "agent-ad0c5de1.jsonl",
        SID,
        isSidechain=True,
        agentId="ad0c5de1",
    )
    sub.user("Read the docs", parent=False)
    sub.assistant("Docs say round half even.")
    sub.write()
    return t


@pytest.fixture
def archive(conn, tmp_path):
    session_with_everything(tmp_path)
    ingest(conn, tmp_path / "projects")
    return conn


def test_markdown_has_the_branch_the_agent_continued_with_calls_in_details(archive):
    done = export_session(archive, resolve_session(archive, SID), "md")
    text = done.data.decode()
    assert text.startswith("# Fix the \\*\\*tax\\*\\* rounding\n")  # the title as text, not Markdown
    assert "Abandoned idea" not in text  # the rewound branch is left out
    assert done.branch is not None and done.branches == 2 and done.branch.active
    assert "## User" in text and "## Assistant" in text
    assert "<details><summary>✗ <b>Bash</b> npm test</summary>" in text
    assert "```diff\n/home/dev/app/tax.py\n-x = 1\n+x = 2\n```" in text
    assert "Subagent: " in text and "Docs say round half even." in text
    assert "\x1b" not in text and "\x07" not in text  # no escape sequence reaches a terminal that cats it
    assert SECRET in text  # not redacted unless asked


def test_the_other_branch_on_request_and_an_unknown_one_named(archive):
    session = resolve_session(archive, SID)
    text = export_session(archive, session, "md", branch=1).data.decode()
    assert "Abandoned idea" in text and "npm test" not in text
    with pytest.raises(ExportError, match="no branch 7; its branches: 1 .*, 2 "):
        export_session(archive, session, "md", branch=7)


class _Page(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += attrs

    def handle_data(self, data):
        self.text.append(data)


def test_html_is_one_inert_self_contained_page(archive):
    done = export_session(archive, resolve_session(archive, SID), "html", redact=True)
    page = done.data.decode()
    parsed = _Page()
    parsed.feed(page)
    assert "script" not in parsed.tags  # the log's <script> is text, not a tag
    assert "<script>alert(1)</script>" in "".join(parsed.text)
    assert not any(v and "javascript:" in v for _, v in parsed.attrs)  # the unsafe link is not a link
    assert not any(
        k in ("src", "href") and v and v.startswith(("http:", "https:", "//")) for k, v in parsed.attrs
    )
    assert "default-src 'none'" in page  # and the browser is told to fetch nothing, run nothing
    assert parsed.tags.count("details") >= 4  # thinking, three calls, the subagent
    assert "<table>" in page and "<h2>Plan</h2>" in page and "<ol>" in page  # Markdown rendered
    assert 'style="color' in page  # the python fence highlighted with inline styles
    assert '<span class="removed">-x = 1</span><span class="added">+x = 2</span>' in page
    assert SECRET not in page and "[REDACTED:anthropic-key]" in page
    assert done.redactor.counts == {"anthropic-key": 1, "openai-key": 1}


def test_json_has_messages_tool_io_and_the_raw_records(archive):
    done = export_session(archive, resolve_session(archive, SID), "json")
    data = json.loads(done.data)
    assert data["session"]["id"] == SID and data["branch"]["number"] == 2
    calls = {c["name"]: c for m in data["messages"] for c in m["tool_calls"]}
    assert json.loads(calls["Bash"]["input"])["command"] == "npm test" and calls["Bash"]["status"] == "failed"
    assert "FAIL" in calls["Bash"]["output"]
    (sub,) = data["subagents"].values()
    assert [m["content"] for m in sub["messages"]] == ["Read the docs", "Docs say round half even."]
    lines = Path(data["records"][0]["file"]).read_bytes().splitlines()
    kept = {r["line"]: r["raw"] for r in data["records"]}
    assert all(kept[n].encode() == lines[n - 1] for n in kept)  # byte for byte, as the agent wrote them
    assert not any("Abandoned idea" in raw for raw in kept.values())  # the chosen branch only


def test_redactor_masks_each_kind_once_and_keeps_the_rest():
    redact = Redactor()
    text = (
        "Authorization: Bearer abcdefghijklmnopqrstuvwx\n"
        "export DB_PASSWORD='hunter2hunter2'\n"
        "ghp_" + "x" * 36 + " AKIAABCDEFGHIJKLMNOP\n"
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\n"
        "postgres://app:s3cret@db:5432/x sha256 3f2a9c0d1e sk-not-a-key"
    )
    out = redact(text)
    for secret in (
        "abcdefghijklmnopqrstuvwx",
        "hunter2hunter2",
        "ghp_",
        "AKIAABCDEFGHIJKLMNOP",
        "b3BlbnNzaC1rZXk",
        "s3cret",
    ):
        assert secret not in out
    assert (
        "Authorization: Bearer [REDACTED:bearer]" in out and "export DB_PASSWORD=[REDACTED:env-secret]" in out
    )
    assert "postgres://app:[REDACTED:url-password]@db" in out
    assert "3f2a9c0d1e sk-not-a-key" in out  # hashes and short look-alikes stay
    assert redact.total == 6 and redact(out) == out and redact.total == 6  # masking twice masks nothing more


def _cli(*args: str, db: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "threadloom.core.cli", "export", *args, "--db", str(db)],
        capture_output=True,
        text=True,
        cwd=cwd,
    )


def test_cli_writes_a_file_never_over_one_and_says_what_it_masked(archive, tmp_path):
    db = Path(archive.execute("PRAGMA database_list").fetchone()[2])
    archive.close()
    out = tmp_path / "s.html"
    done = _cli(SID[:8], "-f", "html", "-o", str(out), "--redact", db=db, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "wrote" in done.stderr and "2 secrets masked (1 anthropic-key, 1 openai-key)" in done.stderr
    assert out.read_text().startswith("<!doctype html>")
    again = _cli(SID[:8], "-f", "md", "-o", str(out), db=db, cwd=tmp_path)
    assert (
        again.returncode == 1 and "--force" in again.stderr and out.read_text().startswith("<!doctype html>")
    )
    printed = _cli(SID[:8], db=db, cwd=tmp_path)
    assert printed.returncode == 0 and printed.stdout.startswith("# Fix the \\*\\*tax")
    wrong = _cli(SID[:8], "--branch", "9", db=db, cwd=tmp_path)
    assert wrong.returncode == 2 and "its branches: 1" in wrong.stderr


CHROMIUM = (
    shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("chromium-headless-shell")
)


def in_browser(page: Path, tmp_path: Path, *how: str) -> subprocess.CompletedProcess[str]:
    """Chromium, headless and offline, opening `page` (`how`: --dump-dom, --screenshot=…)."""
    assert CHROMIUM is not None
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            *how,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(tmp_path)},
    )


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine")
def test_the_html_page_renders_in_a_real_browser_with_nothing_fetched(archive, tmp_path):
    page = tmp_path / "s.html"
    page.write_bytes(export_session(archive, resolve_session(archive, SID), "html").data)
    dom = in_browser(page, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "<h1>Fix the **tax** rounding</h1>" in dom.stdout
    assert "<details" in dom.stdout and "<script>" not in dom.stdout.replace("&lt;script&gt;", "")


# ---------------------------------------------------------------------- Claude Code's markup


@pytest.fixture
def markup_archive(conn, tmp_path):
    from tests.builders.claude import markup_session

    t = markup_session(tmp_path)
    ingest(conn, tmp_path / "projects")
    return conn, t.session_id


TAGS = (
    "<bash-",
    "<command-",
    "<local-command",
    "<ide_",
    "&lt;bash-",
    "&lt;command-",
    "&lt;local-command",
    "&lt;ide_",
)


def test_markdown_draws_claude_codes_markup_for_what_it_is(markup_archive):
    conn, sid = markup_archive
    md = export_session(conn, resolve_session(conn, sid), "md").data.decode()
    assert not any(tag in md for tag in TAGS) and "\x1b" not in md and "\x07" not in md
    assert "**/model opus**\n\n*↳ Set model to opus (claude-opus-4-7)*" in md
    assert "*◇ local commands follow (Claude Code's caveat to the model)*" in md
    assert md.count("## User") == 5  # not the caveat, the outputs, nor the empty output of /context
    assert "<details><summary>§ split.py:12-14</summary>\n\n```python\nfor i in range(len(out) - 1):" in md
    # the `!` command as shell, its output fenced (never read as Markdown) in a closed block
    assert "```bash\nuv run pytest -q tests/test_split.py\n```" in md
    assert (
        "<details><summary>Output · 5 lines · stderr 1 line</summary>\n\n```text\nF....\n=== FAILURES ==="
        in md
    )
    assert "stderr:\n\n```text\nwarning: no coverage data collected\n```" in md
    # TodoWrite as a checklist saying what each write changed
    assert (
        "**☰ Todo list** · 1 of 4 done\n\n- [x] ~~Reproduce the dropped token~~ *(done)*\n"
        "- [ ] ◐ **Fixing the loop bound** *(started)*\n- [ ] Add a regression test\n"
        "- [ ] Run the whole suite *(added)*"
    ) in md
    assert '{"todos"' not in md
    assert "*⚙ UserPromptSubmit hook · ./scripts/notify.sh busy · exit 0 · 106 ms*" in md
    assert (
        "*⚙ PostToolUse:TodoWrite hook · ./scripts/notify.sh todo · exit 1 · 75 ms* — notify: no display"
        in md
    )
    assert "*⚙ PreToolUse:Bash hook · ./scripts/guard.sh · blocked* — rm -rf is not allowed here" in md
    assert "*⚙ Stop hook · ./scripts/notify.sh idle · ran · 102 ms*" in md


def test_html_draws_claude_codes_markup_and_stays_inert(markup_archive):
    conn, sid = markup_archive
    page = export_session(conn, resolve_session(conn, sid), "html").data.decode()
    parsed = _Page()
    parsed.feed(page)
    assert not any(tag in page for tag in TAGS) and "\x1b" not in page and "script" not in parsed.tags
    assert '<div class="command">/model opus</div>' in page
    assert '<div class="note">↳ <span class="out">Set model to opus (claude-opus-4-7)</span></div>' in page
    assert '<details class="chip" title="/srv/tok/tok/split.py"><summary>§ split.py:12-14</summary>' in page
    # the card: the command coloured as shell, its output closed beneath, stdout and stderr as
    # preformatted text (no Markdown: "F...." over "===" is no heading)
    assert '<div class="shell"><span class="bang">!</span><pre><code>' in page
    assert (
        '<details class="shell-output"><summary>output · 5 lines · stderr 1 line</summary><pre>F....\n=== FAILURES ==='
        in page
    )
    assert '<pre class="stderr">warning: no coverage data collected</pre>' in page
    assert "<h1>F....</h1>" not in page
    assert '<li class="completed">☑ Reproduce the dropped token <span class="change">done</span></li>' in page
    assert '<li class="in_progress">◐ Fixing the loop bound <span class="change">started</span></li>' in page
    assert '<li class="pending">☐ Run the whole suite <span class="change">added</span></li>' in page
    assert (
        # a window-title sequence in what the hook said is drawn as text (␛…␇), never acted on
        '<div class="hook failed">⚙ <b>PostToolUse:TodoWrite</b> hook <code>./scripts/notify.sh todo</code> <span class="end">exit 1 · 75 ms</span><pre class="said">notify: no display␛]0;pwned␇</pre>'
        in page
    )
    assert '<div class="hook ok">⚙ <b>SessionStart:startup</b> hook' in page
    assert (
        page.count('<article class="msg user">') == 5 and page.count('<article class="msg assistant">') == 2
    )


def test_json_gives_the_markup_read_beside_the_text_as_written(markup_archive):
    conn, sid = markup_archive
    data = json.loads(export_session(conn, resolve_session(conn, sid), "json").data)
    bang = next(m for m in data["messages"] if m["content"] and m["content"].startswith("<bash-input>"))
    assert bang["markup"] == [{"kind": "shell", "command": "uv run pytest -q tests/test_split.py"}]
    out = next(m for m in data["messages"] if m["content"] and m["content"].startswith("<bash-stdout>"))
    assert (
        out["markup"][0]["kind"] == "shell_output"
        and out["markup"][0]["stderr"] == "warning: no coverage data collected"
    )
    command = next(
        m for m in data["messages"] if m["content"] and m["content"].startswith("<command-name>/model")
    )
    assert command["markup"] == [{"kind": "command", "name": "/model", "args": "opus", "line": "/model opus"}]
    hooks = [h for m in data["messages"] for h in m["hooks"] or []]
    assert [(h["event"], h.get("exit_code"), h.get("duration_ms")) for h in hooks][:2] == [
        ("SessionStart", 0, 1203),
        ("UserPromptSubmit", 0, 106),
    ]
    plain = next(m for m in data["messages"] if m["content"] == "Fix it and run the tests again.")
    assert plain["markup"] is None


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine")
def test_the_cards_render_in_a_real_browser(markup_archive, tmp_path):
    """Opened in headless Chromium: the output of the `!` command stays closed, the checklist and
    the hooks are there, and the page draws (a screenshot is taken)."""
    conn, sid = markup_archive
    page = tmp_path / "markup.html"
    page.write_bytes(export_session(conn, resolve_session(conn, sid), "html").data)
    dom = in_browser(page, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert '<details class="shell-output"><summary>' in dom.stdout  # closed: no `open`
    assert dom.stdout.count('<li class="') == 7 and dom.stdout.count('<div class="hook') == 5
    shot = tmp_path / "markup.png"
    drawn = in_browser(page, tmp_path, f"--screenshot={shot}", "--window-size=1000,1600", "--hide-scrollbars")
    assert drawn.returncode == 0, drawn.stderr[-2000:]
    assert shot.stat().st_size > 20_000  # a page drawn, not a blank one


def test_json_holds_no_control_a_terminal_would_act_on(conn, tmp_path):
    """A title or message holding a C1 control (U+009B, a CSI on some terminals) or a bidi override
    was written raw into the JSON export, acted on by a terminal that `cat`s it (`show --json`
    escapes them); escaped now, and read back as the same characters."""
    sid = "c1c1c1c1-1111-4222-8333-000000000c1c"
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{sid}.jsonl", sid, cwd="/srv/app")
    said = "red \u009b31m here, \u202eevil\u202c and DEL \x7f"
    t.user(said)
    t.assistant("Noted.")
    t.write()
    ingest(conn, tmp_path / "projects")
    done = export_session(conn, resolve_session(conn, sid), "json")
    text = done.data.decode("utf-8")
    assert not any(c in text for c in ("\u009b", "\u202e", "\x7f")), text
    assert "\\u009b" in text and "\\u202e" in text
    data = json.loads(text)
    assert said in [m["content"] for m in data["messages"]]


def test_markdown_summaries_are_escaped_for_html_not_for_markdown(conn, tmp_path):
    """A call's line sits in raw HTML (`<summary>`), where CommonMark applies no Markdown escape:
    `claude\\_code\\_log` and `\\|` showed their backslashes; HTML escaping alone keeps hostile text
    (tags, quotes, escape sequences) inert there."""
    sid = "d7d7d7d7-1111-4222-8333-000000000d7d"
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{sid}.jsonl", sid, cwd="/srv/app")
    t.user("read it")
    t.assistant(None, tools=[tool_use("r1", "Read", file_path="/Users/x/claude_code_log/a*b.py")])
    t.tool_result("r1", "1\tx")
    t.assistant(
        None, tools=[tool_use("g1", "Grep", pattern="\\.vis-label|<img src=x onerror=alert(1)>\x1b[2J")]
    )
    t.tool_result("g1", "none")
    t.write()
    ingest(conn, tmp_path / "projects")
    text = export_session(conn, resolve_session(conn, sid), "md").data.decode()
    summaries = [line for line in text.splitlines() if line.startswith("<details><summary>")]
    assert "<details><summary>✓ <b>Read</b> /Users/x/claude_code_log/a*b.py</summary>" in summaries
    grep = next(line for line in summaries if "<b>Grep</b>" in line)
    assert "\\.vis-label|&lt;img src=x onerror=alert(1)&gt;" in grep and "<img" not in grep
    assert "\x1b" not in text


def _rendered(markdown: str) -> str:
    """The Markdown as a CommonMark reader shows it (markdown-it, raw HTML on as most renderers)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    md.validateLink = lambda url: True  # a permissive renderer: what the text itself makes a link
    return md.render(markdown)


def test_a_fence_a_message_leaves_open_is_closed_with_it(conn, tmp_path):
    """A reply interrupted inside a code block (aider's ^C in a ```html block) was written as it
    was: its open fence swallowed every message after it (3 of 9 headings shown). Each message's
    fence, of backticks or tildes of any length, is closed at its end."""
    sid = "f1f1f1f1-1111-4222-8333-000000000f1f"
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{sid}.jsonl", sid, cwd="/srv/app")
    t.user("make the page")
    t.assistant("Here:\n\n```html\n<p>half a page")
    t.user("again, with tildes")
    t.assistant("~~~~\nstill ~~~\n```\nnot closed")
    t.user("and now?")
    t.assistant("Done: ```inline``` and\n\n```\nclosed\n```")
    t.write()
    ingest(conn, tmp_path / "projects")
    text = export_session(conn, resolve_session(conn, sid), "md").data.decode()
    page = _rendered(text)
    assert page.count("<h2>") == 6, page
    assert "<p>and now?</p>" in page and "<code>inline</code>" in page
    assert "<code>still ~~~\n```\nnot closed\n</code>" in page
    assert "<code>closed\n</code>" in page


def test_markdown_keeps_a_messages_markdown_but_not_its_html_or_unsafe_links(conn, tmp_path):
    """Message text was written verbatim: a `<script src=…>`, an `<img onerror>` or a
    `[x](javascript:…)` in it was live in whatever rendered the file. Outside code its `<` (and an
    `&` that starts an entity) is escaped and javascript:, vbscript: and data: links read as
    written; headings, lists, emphasis, code and ordinary links stay Markdown."""
    sid = "f2f2f2f2-1111-4222-8333-000000000f2f"
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{sid}.jsonl", sid, cwd="/srv/app")
    t.user("what is <script src=https://evil.example/x.js></script> for?")
    t.assistant(
        "### Findings\n\n- *one* `<b>` and <img src=x onerror=alert(1)>\n- [docs](https://example.com/a?b=1) "
        "<https://example.com>\n\n[x](javascript:alert(1)) [y](<JavaScript\\:alert(2)>) "
        "[z](java&#115;cript:alert(3)) ![i](data:text/html;base64,PHNjcmlwdD4=) <vbscript:msgbox(1)> "
        "&lt;b&gt;\n\n[r]: vbscript:msgbox(4)\n\n```html\n<div>kept</div>\n```\n\n<div>\n\nafter"
    )
    t.write()
    ingest(conn, tmp_path / "projects")
    text = export_session(conn, resolve_session(conn, sid), "md").data.decode()
    page = _rendered(text + "\n[r]\n")
    parsed = _Page()
    parsed.feed(page)
    assert not {"script", "img", "div"} & set(parsed.tags), page
    hrefs = [v or "" for k, v in parsed.attrs if k in ("href", "src")]
    assert not any(h.lower().startswith(("javascript:", "vbscript:", "data:")) for h in hrefs), hrefs
    # the entity is text: a relative address, not a scheme
    assert hrefs == ["https://example.com/a?b=1", "https://example.com", "java&#115;cript:alert(3)"]
    assert "<h3>Findings</h3>" in page and "<li><em>one</em> <code>&lt;b&gt;</code> and &lt;img" in page
    assert "&lt;script src=https://evil.example/x.js&gt;&lt;/script&gt;" in page
    assert "[x](javascript:alert(1))" in page and "&amp;lt;b&amp;gt;" in page
    assert '<code class="language-html">&lt;div&gt;kept&lt;/div&gt;\n</code>' in page
    assert "<p>after</p>" in page


def test_crlf_text_exports_as_lines_not_as_carriage_return_marks(conn, tmp_path):
    """A message or output written with CRLF (or a lone CR) was drawn with ␍ at each line's end in
    every format: a closing fence ```␍ closed nothing and the HTML's code was `language-␍`. A CRLF
    or a lone CR is a line break, as Markdown and `show` read it."""
    sid = "f3f3f3f3-1111-4222-8333-000000000f3f"
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{sid}.jsonl", sid, cwd="/srv/app")
    t.user("Run it\r\nplease")
    t.assistant(
        "Here:\r\n\r\n```python\r\nprint(1)\r\n```\r\n\r\nafter the code\rand a line",
        tools=[tool_use("b1", "Bash", command="make")],
    )
    t.tool_result("b1", "ok\r\ndone\r\n")
    t.user("next")
    t.write()
    ingest(conn, tmp_path / "projects")
    session = resolve_session(conn, sid)
    text = export_session(conn, session, "md").data.decode()
    assert "␍" not in text and "\r" not in text
    page = _rendered(text)
    assert '<code class="language-python">print(1)\n</code>' in page
    assert "<p>after the code\nand a line</p>" in page and "<h2>User" in page.split("after the code")[1]
    assert "```\nok\ndone\n\n```" in text
    page = export_session(conn, session, "html").data.decode()
    assert "␍" not in page and "language-␍" not in page and "<p>Run it\nplease</p>" in page


def test_a_message_nested_deeper_than_the_parser_goes_is_in_the_page_as_written(conn, tmp_path):
    """The Markdown parser skips without a word what lies inside a block opened 20 levels deep: a
    prompt quoting a mail thread 30 `>` deep was an empty stack of quotes in the HTML page."""
    sid = "f4f4f4f4-1111-4222-8333-000000000f4f"
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{sid}.jsonl", sid, cwd="/srv/app")
    t.user("> " * 30 + "the <b>reply</b> &amp; more")
    t.assistant("**Seen**")
    t.write()
    ingest(conn, tmp_path / "projects")
    page = export_session(conn, resolve_session(conn, sid), "html").data.decode()
    prompt = page.split('<article class="msg user">')[1].split("<article")[0]
    assert "&gt; " * 30 + "the &lt;b&gt;reply&lt;/b&gt; &amp;amp; more" in prompt
    assert "<strong>Seen</strong>" in page and "<b>reply" not in page


def test_a_prompts_backslashes_and_entities_export_as_typed(conn, tmp_path):
    """A prompt is typed, not written as Markdown (as `show` draws it): `C:\\Users\\me\\.gemini` was
    exported as `C:\\Users\\me.gemini` (an escape to the reader), a shell line's last backslash as a
    line break and `&amp;` as an ampersand, in the HTML page and in the Markdown file as any
    reader shows it. An assistant's text is Markdown and stays read as such."""
    sid = "f5f5f5f5-1111-4222-8333-000000000f5f"
    typed = "look in C:\\Users\\me\\.gemini\\tmp, a\\_b &amp; **bold** `C:\\x\\.y`\nls \\\n  -la \\\\"
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{sid}.jsonl", sid, cwd="/srv/app")
    t.user(typed)
    t.assistant("Seen C:\\Users\\me\\.gemini &amp; **it**")
    t.write()
    ingest(conn, tmp_path / "projects")
    session = resolve_session(conn, sid)
    shown = (
        "look in C:\\Users\\me\\.gemini\\tmp, a\\_b &amp;amp; <strong>bold</strong> <code>C:\\x\\.y</code>"
    )
    page = export_session(conn, session, "html").data.decode()
    prompt, answer = page.split('<article class="msg user">')[1].split('<article class="msg assistant">')
    assert f"<p>{shown}\nls \\ \n-la \\\\</p>" in prompt
    assert "Seen C:\\Users\\me.gemini &amp; <strong>it</strong>" in answer
    text = export_session(conn, session, "md").data.decode()
    prompt, answer = _rendered(text).split("<h2>User")[1].split("<h2>Assistant")
    assert f"<p>{shown}\nls \\\n-la \\\\</p>" in prompt
    assert "Seen C:\\Users\\me.gemini &amp;amp; <strong>it</strong>" in answer  # its entities kept as written


def test_a_log_with_no_uuids_is_one_branch_and_exports_whole(conn, tmp_path):
    """Claude Code records with no uuid or parentUuid (older or other writers' files) made each
    prompt a root turn, read as a branch of its own: the export kept the last ("Messages | 2 of 4",
    "Branch | 2 of 2:" with no label, the first exchange dropped). Written in order with no tree,
    such a file is one line of turns: exported whole, as `show` and the viewer show it."""
    sid = "f4f4f4f4-1111-4222-8333-000000000f4f"
    folder = tmp_path / "projects" / "-srv-app"
    folder.mkdir(parents=True)
    said = [
        ("user", "Fix the login bug"),
        ("assistant", "Looking."),
        ("user", "Right"),
        ("assistant", "Fixed."),
    ]
    records = [
        {
            "type": role,
            "timestamp": f"2024-01-01T10:0{n}:00Z",
            "cwd": "/srv/app",
            "message": {
                "role": role,
                "content": text if role == "user" else [{"type": "text", "text": text}],
            },
        }
        for n, (role, text) in enumerate(said)
    ]
    (folder / f"{sid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    ingest(conn, tmp_path / "projects")
    done = export_session(conn, resolve_session(conn, sid), "md")
    text = done.data.decode()
    assert done.branch is None and done.branches == 0 and done.messages == 4
    assert "| Messages | 4 |" in text and "Branch" not in text
    assert all(said_text in text for _, said_text in said)
    assert conn.execute("SELECT branch_count FROM agent_sessions WHERE id = ?", (sid,)).fetchone()[0] == 0


def test_export_times_say_their_zone(archive, monkeypatch):
    """Started, Ended and Exported were local times with no zone (`2025-11-17 15:30` for 10:00Z in
    Kolkata): whoever is handed the file cannot tell when that was. They carry their offset."""
    import time
    from datetime import UTC, datetime

    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    try:
        session = resolve_session(archive, SID)
        now = datetime(2025, 11, 17, 10, 0, tzinfo=UTC)
        text = export_session(archive, session, "md", now=now).data.decode()
        page = export_session(archive, session, "html", now=now).data.decode()
        data = json.loads(export_session(archive, session, "json", now=now).data)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert "| Exported | 2025-11-17 15:30 +05:30 by threadloom |" in text
    assert re.search(r"\| Started \| \d{4}-\d\d-\d\d \d\d:\d\d \+05:30 \|", text), text
    assert "<footer>Exported 2025-11-17 15:30 +05:30 by threadloom.</footer>" in page
    assert data["exported_at"] == "2025-11-17 15:30 +05:30"


def test_a_compaction_summary_is_named_as_the_viewer_names_it(conn, tmp_path):
    """The summary Claude Code writes when it compacts (a user record, isCompactSummary) was
    exported and shown as the user's message (`## User`, `<article class="msg user">`, `user` in
    `show`); it is labelled as the viewer labels it: the summary of the earlier conversation."""
    sid = "f5f5f5f5-1111-4222-8333-000000000f5f"
    t = Transcript(tmp_path / "projects" / "-srv-app" / f"{sid}.jsonl", sid, cwd="/srv/app")
    t.user("start the work")
    t.assistant("Started.")
    t.add({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted"})
    said = "This session is being continued from a previous conversation that ran out of context."
    t.add({"type": "user", "isCompactSummary": True, "message": {"role": "user", "content": said}})
    t.user("go on")
    t.assistant("Going on.")
    path = t.write()
    path.write_text(
        path.read_text().replace('"isCompactSummary": true', '"isCompactSummary":true')
    )  # as written
    ingest(conn, tmp_path / "projects")
    session = resolve_session(conn, sid)
    text = export_session(conn, session, "md").data.decode()
    page = _rendered(text)
    label = f"≡ Summary of the earlier conversation · {len(said)} chars"
    assert f"<details><summary>{label}</summary>\n<p>{said}</p>\n</details>" in page, page
    assert page.count("<h2>User") == 2  # the two prompts, not the summary
    page = export_session(conn, session, "html").data.decode()
    assert f'<details class="summary"><summary>{label}</summary><div class="body"><p>{said}</p>' in page
    assert page.count('<article class="msg user">') == 2
    import io

    from rich.console import Console
    from threadloom.core.present.render import render_session

    out = io.StringIO()
    render_session(Console(file=out, width=200, highlight=False), conn, session)
    lines = out.getvalue().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("≡ summary of the earlier conversation"))
    assert lines[at + 1].strip() == said and sum(line.startswith("user ") for line in lines) == 2
