"""The database and the paths threadloom writes: a read-only database is read as it is and never
changed, a path that cannot be written is said in one line, a damaged database is named with the
command that rebuilds it, and restore writes new files inside its folder only.

Tests run as root here, which chmod does not stop: a read-only folder is a read-only mount in a
mount namespace of its own (`unshare`), and the permission cases run as `nobody`; each skips
cleanly where that is not possible."""

from __future__ import annotations

import errno
import gc
import json
import os
import pwd
import random
import re
import shutil
import sqlite3
import stat
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from threadloom.core.cli import main
from threadloom.core.ingest.pipeline import run_ingest
from threadloom.core.store import db
from threadloom.core.store.sql import set_meta

from tests.builders.claude import Transcript, tool_use
from tests.support import SID, make_archive

REPO = Path(__file__).resolve().parents[2]
UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def cli(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def one_line_error(err: str) -> str:
    """The error a command printed: one line, `threadloom: ` first, no traceback."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("threadloom: "), err
    return lines[0]


def ingested(folder: Path, name: str = "a.db") -> Path:
    """A database holding make_archive's one session (SID), closed (no -wal or -shm left)."""
    projects = make_archive(folder)
    path = folder / name
    conn = db.connect(path)
    assert not run_ingest(conn, [projects], include_defaults=False).errors
    conn.close()
    return path


def side_files(path: Path) -> list[str]:
    """What lies beside the database but the writers' lock file (created by an ingest, kept)."""
    return sorted(p.name for p in path.parent.glob(path.name + "*") if p != path and p.suffix != ".lock")


# ---------------------------------------------------------------------- a read-only database


READ_COMMANDS = (["sessions"], ["show", SID[:8]], ["search", "health"], ["verify"], ["sources"])


def test_read_commands_leave_a_read_only_database_and_its_mode_as_they_are(tmp_path, capsys):
    path = ingested(tmp_path)
    os.chmod(path, 0o444)
    before = path.read_bytes()
    outputs = {}
    for args in (*READ_COMMANDS, ["restore", SID, "--to", str(tmp_path / "out")]):
        code, out, err = cli(capsys, *args, "--db", str(path))
        assert code == 0, (args, err)
        outputs[args[0]] = out
    assert SID[:13] in outputs["sessions"] and "Add a health endpoint" in outputs["show"]
    assert "1 of 1 hits" in outputs["search"] and "all stored bytes match" in outputs["verify"]
    assert (tmp_path / "out" / "-srv-api" / f"{SID}.jsonl").exists()
    assert stat.S_IMODE(path.stat().st_mode) == 0o444  # was made 0600
    assert path.read_bytes() == before
    assert side_files(path) == []  # and no -wal or -shm left beside it


def test_search_of_a_read_only_database_whose_index_was_left_behind(tmp_path, capsys):
    projects = make_archive(tmp_path)
    path = tmp_path / "a.db"
    code, _, err = cli(
        capsys, "ingest", "--db", str(path), "--only", "--source", str(projects), "--no-index", "-q"
    )
    assert code == 0, err
    gc.collect()  # the command's connection is closed (its process would have ended)
    assert side_files(path) == []
    os.chmod(path, 0o444)
    before = path.read_bytes()
    code, out, err = cli(capsys, "search", "health", "--db", str(path))
    assert code == 0, err  # was "attempt to write a readonly database" for a user, a chmod for root
    assert "cannot be written, so what its first load left" in err and "threadloom index" in err
    assert "still being built" in out  # the search itself says its hits may be incomplete
    for command in ("context", "similar"):  # the other readers of what a first load leaves: the same
        code, out, err = cli(capsys, command, "health" if command == "context" else "1", "--db", str(path))
        assert "cannot be written, so what its first load left" in err, (command, err)
    assert stat.S_IMODE(path.stat().st_mode) == 0o444 and path.read_bytes() == before
    os.chmod(path, 0o600)  # writable again: the search completes the index first, as before
    code, out, err = cli(capsys, "search", "health", "--db", str(path))
    assert code == 0 and "it is complete now" in err and "1 of 1 hits" in out


def test_writing_commands_refuse_a_read_only_database_before_changing_anything(tmp_path, capsys):
    path = ingested(tmp_path)
    os.chmod(path, 0o444)
    before = path.read_bytes()
    for args in (["ingest"], ["ingest", "--rebuild"], ["index"]):
        code, _, err = cli(capsys, *args, "--db", str(path))
        line = one_line_error(err)
        assert code == 1 and "is read-only (-r--r--r--)" in line and f"chmod u+w {path}" in line, args
    assert stat.S_IMODE(path.stat().st_mode) == 0o444 and path.read_bytes() == before
    assert side_files(path) == []  # not moved aside by --rebuild either


def test_the_database_is_made_private_unless_its_owner_made_it_read_only(tmp_path):
    path = tmp_path / "new.db"
    db.connect(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    os.chmod(path, 0o644)
    db.connect(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # a readable-by-all database is still made private
    os.chmod(path, 0o444)
    db._secure_file(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o444
    with pytest.raises(db.LedgerError, match="is read-only"):
        db.connect(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o444


@pytest.fixture
def read_only_mount(tmp_path) -> Callable[..., subprocess.CompletedProcess]:
    """Runs the CLI with `folder` mounted read-only, in a mount namespace of its own (so root's
    writes are refused too, with EROFS, and nothing is left mounted)."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare to mount a folder read-only")
    probe = tmp_path / "probe"
    probe.mkdir()
    check = subprocess.run(
        [
            "unshare",
            "-m",
            "sh",
            "-c",
            f"mount --bind {probe} {probe} && "
            f"mount -o remount,bind,ro {probe} && ! touch {probe}/x 2>/dev/null",
        ],
        capture_output=True,
        timeout=30,
    )
    if check.returncode != 0:
        pytest.skip(f"cannot mount a folder read-only here: {check.stderr.decode().strip()}")

    def run(folder: Path, *args: str) -> subprocess.CompletedProcess:
        command = " ".join(map(_quote, [sys.executable, "-m", "threadloom.core.cli", *args]))
        script = (
            f"mount --bind {_quote(str(folder))} {_quote(str(folder))} && "
            f"mount -o remount,bind,ro {_quote(str(folder))} && exec {command}"
        )
        return subprocess.run(
            ["unshare", "-m", "sh", "-c", script],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=120,
            env=dict(os.environ),
        )

    return run


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def test_a_database_in_a_read_only_folder_is_read_and_left_as_it_is(tmp_path, read_only_mount):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = ingested(folder)  # 0600, in WAL mode, no -shm: SQLite alone cannot read it there
    before = path.read_bytes()
    for args in READ_COMMANDS:
        res = read_only_mount(folder, *args, "--db", str(path))
        assert res.returncode == 0, (args, res.stderr)
        assert "Traceback" not in res.stderr
    assert SID[:13] in read_only_mount(folder, "sessions", "--db", str(path)).stdout
    res = read_only_mount(folder, "ingest", "--db", str(path), "--only")
    assert res.returncode == 1 and f"{path} is on a read-only file system" in one_line_error(res.stderr)
    assert path.read_bytes() == before and side_files(path) == []


def test_changes_not_merged_into_a_database_in_a_read_only_folder_are_said(tmp_path, read_only_mount):
    source = ingested(tmp_path)
    writer = db.connect(source)
    set_meta(writer, "note", "a change only in the -wal")
    folder = tmp_path / "ro"
    folder.mkdir()
    for suffix in ("", "-wal"):  # copied while the writer holds them: the -wal is not merged
        shutil.copyfile(str(source) + suffix, str(folder / "a.db") + suffix)
    writer.close()
    assert (folder / "a.db-wal").stat().st_size > 0
    res = read_only_mount(folder, "sessions", "--db", str(folder / "a.db"))
    line = one_line_error(res.stderr)
    assert res.returncode == 1 and "a.db-wal not yet merged" in line and "threadloom index" in line


@pytest.fixture
def as_nobody() -> Iterator[tuple[Callable[..., subprocess.CompletedProcess], Path]]:
    """Runs the CLI as the user `nobody` (chmod binds it, unlike root) and a folder it can reach
    to work in; skips where no Python with threadloom's packages can be run as nobody."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to run as nobody")
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user nobody")
    env = dict(
        os.environ,
        HOME="/nonexistent",
        PYTHONPATH=os.pathsep.join([str(REPO), sysconfig.get_paths()["purelib"]]),
    )
    prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    for python in dict.fromkeys(
        p for p in (sys.executable, shutil.which("python3"), "/usr/bin/python3") if p
    ):
        probe = subprocess.run(
            [*prefix, python, "-c", "import threadloom.core.cli, rich, platformdirs"],
            capture_output=True,
            cwd=REPO,
            env=env,
            timeout=60,
        )
        if probe.returncode == 0:
            break
    else:
        pytest.skip("no Python with threadloom's packages can be run as nobody here")
    work = Path(tempfile.mkdtemp(prefix="threadloom-nobody-"))
    os.chmod(work, 0o755)

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*prefix, python, "-m", "threadloom.core.cli", *args],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            timeout=120,
        )

    try:
        yield run, work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_a_read_only_database_of_a_user_in_its_own_folder_and_in_a_read_only_one(as_nobody):
    run, work = as_nobody
    nobody = pwd.getpwnam("nobody")
    own, theirs = work / "own", work / "theirs"  # nobody can write the first folder, not the second
    for folder in (own, theirs):
        folder.mkdir()
        path = ingested(folder)
        os.chmod(path, 0o444)
        os.chown(path, nobody.pw_uid, nobody.pw_gid)
        os.chmod(folder / "projects", 0o755)
    os.chown(own, nobody.pw_uid, nobody.pw_gid)
    for folder in (own, theirs):
        path = folder / "a.db"
        before = path.read_bytes()
        for args in READ_COMMANDS[:4]:
            res = run(*args, "--db", str(path))
            assert res.returncode == 0, (
                folder.name,
                args,
                res.stderr,
            )  # "attempt to write a readonly database"
        assert SID[:13] in run("sessions", "--db", str(path)).stdout
        res = run("ingest", "--db", str(path), "--only")
        assert res.returncode == 1 and "is read-only" in one_line_error(res.stderr)
        assert (
            stat.S_IMODE(path.stat().st_mode) == 0o444 and path.read_bytes() == before
        )  # nobody owns it: it could chmod
        assert side_files(path) == []


def test_a_folder_the_user_cannot_write_is_said_in_one_line(as_nobody):
    run, work = as_nobody
    closed = work / "closed"  # root's, 0755: nobody can read it, not write it
    closed.mkdir()
    for args in (
        ["sessions", "--db", str(closed / "new.db")],
        ["ingest", "--db", str(closed / "sub" / "new.db")],
    ):
        res = run(*args)
        line = one_line_error(res.stderr)
        assert res.returncode == 1 and "permission denied on" in line and "--db" in line, args
    path = ingested(work / "data")
    os.chmod(path, 0o644)
    os.chmod(work / "data", 0o755)
    res = run("restore", SID, "--db", str(path), "--to", str(closed / "out"))
    line = one_line_error(res.stderr)
    assert res.returncode == 1 and f"permission denied on {closed}" in line and "--to" in line
    assert not (closed / "out").exists()


# ---------------------------------------------------------------------- paths that cannot be written


def test_database_paths_that_cannot_be_used_are_one_line_each(tmp_path, capsys):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    cases = [
        (["sessions", "--db", str(a_file / "x.db")], f"{a_file} is a file, not a folder"),
        (["ingest", "--db", str(a_file / "deeper" / "x.db")], f"{a_file} is a file, not a folder"),
        # nothing there to read: said as such (the ingest it points to then says why it cannot)
        (["sessions", "--db", "/proc/threadloom-test.db"], "no database at /proc/threadloom-test.db yet"),
        (["ingest", "--db", "/proc/threadloom-test.db"], "/proc takes no new files"),
        (["sessions", "--db", str(tmp_path)], f"{tmp_path} is a folder, not a database file"),
        (["ingest", "--db", str(tmp_path)], f"{tmp_path} is a folder, not a database file"),
    ]
    for args, said in cases:
        code, _, err = cli(capsys, *args)  # a traceback fails the test here
        line = one_line_error(err)
        assert code == 1 and said in line and "--db" in line, (args, line)
    assert a_file.read_text() == "not a folder"


def test_a_read_command_never_creates_a_database_or_its_folders(tmp_path, capsys):
    """A mistyped --db (or no ingest yet) is said, with the command that fills it; nothing is
    left behind."""
    for args in (["sessions"], ["stats"], ["search", "parser"], ["show", "abc"], ["signals"]):
        code, out, err = cli(capsys, *args, "--db", str(tmp_path / "not" / "here.db"))
        assert code == 1 and not out, args
        assert one_line_error(err) == (
            f"threadloom: no database at {tmp_path / 'not' / 'here.db'} yet: "
            f"`threadloom ingest --db {tmp_path / 'not' / 'here.db'}` reads your agents' logs into it"
        )
    assert list(tmp_path.iterdir()) == []


def test_an_os_error_is_said_with_what_to_do():
    path = Path("/data/threadloom.db")
    said = db.cannot_use(path, PermissionError(errno.EACCES, "Permission denied", "/data"))
    assert said == (
        "Cannot write the database /data/threadloom.db: permission denied on /data. "
        "Pass --db a path in a folder you can write (or set $THREADLOOM_DB)."
    )
    said = db.cannot_use(path, OSError(errno.EROFS, "Read-only file system", str(path)))
    assert "is on a read-only file system" in said
    said = db.cannot_use(path, OSError(errno.ENOSPC, "No space left on device", str(path)))
    assert "the disk or your quota is full" in said and "free some space" in said
    said = db.cannot_use(
        Path("/srv/out"),
        PermissionError(errno.EACCES, "Permission denied", "/srv"),
        what="the restored files into",
        fix="choose another --to folder",
    )
    assert (
        said
        == "Cannot write the restored files into /srv/out: permission denied on /srv. Choose another --to folder."
    )


def test_restore_into_a_file_or_a_place_that_takes_no_files_is_one_line(tmp_path, capsys):
    path = ingested(tmp_path)
    a_file = tmp_path / "a-file"
    a_file.write_text("mine")
    for to, said in (
        (a_file, f"{a_file} is a file: --to takes a folder"),
        (a_file / "below", f"{a_file} is a file: --to takes a folder"),
        (Path("/proc/threadloom-test"), "/proc/threadloom-test"),
    ):
        code, _, err = cli(capsys, "restore", SID, "--db", str(path), "--to", str(to))
        line = one_line_error(err)
        assert code == 1 and said in line and "--to" in line, line
    assert a_file.read_text() == "mine"


# ---------------------------------------------------------------------- a damaged database


def damaged_archive(root: Path) -> tuple[bytes, list[str]]:
    """A database of eight sessions with text in many pages, as bytes, and the session ids."""
    rnd = random.Random(2026)
    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "parser",
        "config",
        "health",
        "endpoint",
        "token",
        "refactor",
        "ünïcode",
        "日本",
    ]
    sids = []
    for i in range(8):
        sid = f"cccccccc-1111-4222-8333-{i:012d}"
        sids.append(sid)
        t = Transcript(root / "projects" / f"-srv-p{i % 3}" / f"{sid}.jsonl", sid, cwd=f"/srv/p{i % 3}")
        for k in range(12):
            t.user(" ".join(rnd.choice(words) for _ in range(60)))
            t.assistant(
                " ".join(rnd.choice(words) for _ in range(80)),
                thinking="hmm " * 40,
                tools=[tool_use(f"t{k}", "Bash", command="ls " + "x" * 200)],
            )
            t.tool_result(f"t{k}", "out " * 100)
        t.write()
    conn = db.connect(root / "good.db")
    assert not run_ingest(conn, [root / "projects"], include_defaults=False).errors
    conn.close()
    return (root / "good.db").read_bytes(), sids


def corruptions(data: bytes, seed: int) -> Iterator[tuple[str, bytes]]:
    """Damage as disks and crashes leave it: a garbage header, a truncated file, flipped bits in
    a page, stored text overwritten with control bytes or with bytes that are not UTF-8, a page of
    noise. Seeded: the same damage on every run."""
    rnd = random.Random(seed)
    page = db.PAGE_SIZE
    pages = len(data) // page
    yield "garbage header", b"\x00\xffGARBAGE\x1b[31m\x07" * 8 + data[112:]
    for cut in (len(data) * 3 // 10, len(data) * 7 // 10, page * 3 + 1000):
        yield f"truncated at {cut}", data[:cut]
    for n in range(8):
        damaged = bytearray(data)
        at = rnd.randrange(1, pages)
        for _ in range(rnd.choice((1, 8, 64, 512))):
            damaged[at * page + rnd.randrange(page)] ^= 1 << rnd.randrange(8)
        yield f"bits flipped in page {at} ({n})", bytes(damaged)
    words = [m.start() for m in re.finditer(rb"gamma|delta|parser|/srv/p|cccccccc", data)]
    for junk in (b"\x1b[2J\x07", b"\x9b31m\x7f", b"\x00\x00\x00", b"\xff\xfe\x00", b"\xc3(\x9b"):
        damaged = bytearray(data)
        for at in rnd.sample(words, 40):
            damaged[at : at + len(junk)] = junk
        yield f"text overwritten with {junk!r}", bytes(damaged)
    for _ in range(2):
        damaged = bytearray(data)
        at = rnd.randrange(1, pages)
        damaged[at * page : (at + 1) * page] = rnd.randbytes(page)
        yield f"noise in page {at}", bytes(damaged)


@pytest.mark.long(5)
def test_every_read_command_on_a_damaged_database_says_so_cleanly(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # `sources` looks in the home folder
    good, sids = damaged_archive(tmp_path)
    commands = [
        ["sessions"],
        ["sessions", "--json"],
        ["show", sids[0]],
        ["show", sids[3], "--json"],
        ["search", "parser"],
        ["search", "gamma", "--json"],
        ["verify"],
        ["sources"],
        ["restore", sids[1], "--to", "OUT"],
        ["stats", "--by", "session"],
        ["stats", "--by", "project", "--json"],
    ]
    seen = {"rebuild": 0, "undecodable": 0, "made visible": 0, "runs": 0}
    for n, (name, data) in enumerate(corruptions(good, seed=1515)):
        path = tmp_path / f"damaged-{n}.db"
        path.write_bytes(data)
        for args in commands:
            args = [str(tmp_path / f"out-{n}") if a == "OUT" else a for a in args]
            code, out, err = cli(capsys, *args, "--db", str(path))  # an exception fails the test here
            what = f"{name}: {' '.join(args[:2])}"
            seen["runs"] += 1
            assert not UNPRINTABLE.search(out + err), f"{what} printed raw bytes: {(out + err)[:300]!r}"
            seen["made visible"] += "␛" in out or "\\u009b" in out or "␀" in out
            if code == 0 or (args[0] == "verify" and code == 1 and "files differ" in out):
                continue
            if (
                args[0] in ("verify", "restore")
                and code == 1
                and "damaged" in out + err
                and all(line.startswith("threadloom: ") for line in err.splitlines())
            ):
                continue  # records whose bytes no longer hash as stored: said as the archive's damage
            line = one_line_error(err)
            if "no session matches" in line:  # the damage took the session: an honest answer
                continue
            assert f"threadloom ingest --rebuild --db {path}" in line, f"{what}: {line}"
            seen["rebuild"] += 1
            seen["undecodable"] += "Could not decode to UTF-8" in line
    # the damage reached every kind of failure this test is about
    assert seen["runs"] == 19 * len(commands)
    # (how many outputs showed planted bytes depends on where the layout put them: at least one did)
    assert seen["rebuild"] >= 40 and seen["undecodable"] >= 3 and seen["made visible"] >= 1, seen


def test_a_damage_message_never_holds_the_damaged_bytes():
    undecodable = sqlite3.OperationalError(
        "Could not decode to UTF-8 column 'content' with text 'ab\x1b]0;pwned\x07'"
    )
    said = str(db.explain(undecodable, Path("/d/t.db")))
    assert "pwned" not in said and "\x1b" not in said and "column 'content'" in said
    assert "threadloom ingest --rebuild --db /d/t.db" in said
    try:
        b"ok \xff\xfe".decode()
    except UnicodeDecodeError as exc:
        said = str(db.explain(exc, Path("/d/my data.db")))
    assert "is damaged (stored text is not valid UTF-8" in said
    assert "threadloom ingest --rebuild --db '/d/my data.db'" in said  # a path with a space, quoted


def _tool_call_time_as_text(path: Path) -> None:
    """A value of another type where a number is kept: what a damaged record may read back as
    (SQLite keeps a text in an INTEGER column of a table that is not STRICT)."""
    conn = sqlite3.connect(path)
    assert conn.execute("UPDATE agent_tool_calls SET completed_at = 'not a time'").rowcount == 1
    conn.commit()
    conn.close()


def test_an_error_no_reading_code_expects_is_said_as_damage_when_sqlite_finds_damage(tmp_path, capsys):
    path = ingested(tmp_path)
    _tool_call_time_as_text(path)
    conn = sqlite3.connect(path)
    page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'search_fts_data'").fetchone()[0]
    conn.close()
    data = bytearray(path.read_bytes())  # and a page `show` does not read is noise
    data[(page - 1) * db.PAGE_SIZE : page * db.PAGE_SIZE] = random.Random(7).randbytes(db.PAGE_SIZE)
    path.write_bytes(bytes(data))
    code, _, err = cli(capsys, "show", SID, "--db", str(path))
    line = one_line_error(err)  # was a TypeError's traceback
    assert code == 1 and "is damaged (" in line and "reading it failed with TypeError" in line
    assert f"threadloom ingest --rebuild --db {path}" in line


def test_an_error_no_reading_code_expects_is_raised_when_the_database_is_sound(tmp_path, capsys):
    path = ingested(tmp_path)
    _tool_call_time_as_text(path)
    with pytest.raises(TypeError):  # a bug to report, not a damaged database to rebuild
        main(["show", SID, "--db", str(path)])


def test_a_full_disk_during_a_first_load_is_said_as_a_full_disk(tmp_path, capsys, monkeypatch):
    damaged_archive(tmp_path)  # its archive: ~1.3 MB of database, ~40 pages beyond the empty schema
    projects = tmp_path / "projects"
    connect = db.connect
    for room in (1, 10, 25):  # pages the load may add before SQLite says the disk is full

        def limited(path=None, *, readonly=False, room=room):
            conn = connect(path, readonly=readonly)
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            conn.execute(f"PRAGMA max_page_count = {pages + room}")
            return conn

        monkeypatch.setattr(db, "connect", limited)
        code, _, err = cli(
            capsys,
            "ingest",
            "--db",
            str(tmp_path / f"full-{room}.db"),
            "--only",
            "--source",
            str(projects),
            "-q",
        )
        line = one_line_error(err)  # was "Cannot open the database …: no such savepoint: source_file"
        assert code == 1 and "is full (database or disk is full). Free some space" in line, line
        assert "damaged" not in line and "savepoint" not in line and "rollback" not in line


def test_a_full_disk_is_said_as_a_full_disk_on_a_real_file_system(tmp_path):
    """The same with a tmpfs that fills up (ENOSPC from the kernel), where mounting one works."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare to mount a small file system")
    good, _ = damaged_archive(tmp_path)
    mount = tmp_path / "small"
    mount.mkdir()
    said = []
    for size in (
        len(good) // 3,
        len(good) * 8 // 10,
        len(good) * 19 // 20,
    ):  # too small, at each stage of the load
        command = " ".join(
            map(
                _quote,
                [
                    sys.executable,
                    "-m",
                    "threadloom.core.cli",
                    "ingest",
                    "--db",
                    str(mount / "x.db"),
                    "--only",
                    "--source",
                    str(tmp_path / "projects"),
                    "-q",
                ],
            )
        )
        res = subprocess.run(
            ["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size={size} tmpfs {mount} && {command}"],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=120,
        )
        if "mount" in res.stderr and "threadloom" not in res.stderr:
            pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
        said.append((res.returncode, one_line_error(res.stderr)))
    for code, line in said:
        assert code == 1 and "is full (database or disk is full). Free some space" in line, line


def test_a_stored_record_damaged_on_disk_is_named_as_the_archive_s_damage(tmp_path, capsys):
    """Eight bytes of a stored record changed in the database file (SQLite's integrity check still
    says ok): verify blamed the agent's file ("changed: … 1 record(s) differ"), said "all stored
    bytes match" once that file was gone, and restore wrote the damaged bytes saying nothing. Each
    record's hash, taken when it was stored, tells the archive's damage apart."""
    path = ingested(tmp_path)
    [source] = (tmp_path / "projects").rglob(f"{SID}.jsonl")
    data = path.read_bytes()
    said = b'"content": "Add a health endpoint"'  # in the stored line (its text is in other columns too)
    at = data.index(said)
    path.write_bytes(data[:at] + said.replace(b"health", b"wealth") + data[at + len(said) :])
    check = sqlite3.connect(path)
    assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    check.close()

    code, out, _ = cli(capsys, "--db", str(path), "verify")
    assert code == 1 and "changed:" not in out and "all stored bytes match" not in out
    assert f"damaged: {source}: 1 stored record (first at line 1) no longer matches" in out
    assert "the archive itself is damaged (1 file)" in out
    source.unlink()  # its only copy now the archive's
    code, out, _ = cli(capsys, "--db", str(path), "verify", "--json")
    assert code == 1
    assert json.loads(out)["damaged"] == [{"path": str(source), "records": 1, "first_line": 1}]
    code, out, err = cli(capsys, "--db", str(path), "restore", SID[:8], "--to", str(tmp_path / "back"))
    assert code == 1 and "1 file restored" in out
    assert "1 record of it no longer match what was stored (the archive's copy is damaged" in err
    assert b"Add a wealth endpoint" in next((tmp_path / "back").rglob(f"{SID}.jsonl")).read_bytes()


# ---------------------------------------------------------------------- restore writes inside its folder only


def test_restore_never_follows_a_link_planted_in_its_folder(tmp_path, capsys):
    path = ingested(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("not to be touched")
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "-srv-api").symlink_to(outside)  # the project folder is a link out
    code, _, err = cli(capsys, "restore", SID, "--db", str(path), "--to", str(dest))
    assert code == 1 and f"{dest / '-srv-api'} is a symbolic link" in one_line_error(err)
    assert sorted(p.name for p in outside.iterdir()) == ["keep"]
    (dest / "-srv-api").unlink()
    (dest / "-srv-api").mkdir()
    target = dest / "-srv-api" / f"{SID}.jsonl"
    for link_to in (
        outside / "keep",
        outside / "new-file",
    ):  # the file itself is a link, to a file or to nothing
        target.symlink_to(link_to)
        code, _, err = cli(capsys, "restore", SID, "--db", str(path), "--to", str(dest))
        assert code == 1 and f"{target} is a symbolic link" in one_line_error(err)
        target.unlink()
    assert (
        sorted(p.name for p in outside.iterdir()) == ["keep"]
        and (outside / "keep").read_text() == "not to be touched"
    )
    code, out, err = cli(capsys, "restore", SID, "--db", str(path), "--to", str(dest))
    assert (
        code == 0
        and target.read_bytes() == (tmp_path / "projects" / "-srv-api" / f"{SID}.jsonl").read_bytes()
    )


def test_restore_keeps_stored_paths_inside_its_folder(tmp_path, capsys):
    path = ingested(tmp_path)
    outside = tmp_path / "outside"
    conn = sqlite3.connect(path)
    # a path as another machine's logs may give it: climbing out of the project folder, to here
    climbing = "/home/u/.claude/projects/-srv-api/" + "../" * 12 + str(outside).lstrip("/") + "/evil.jsonl"
    conn.execute("UPDATE source_files SET path = ?", (climbing,))
    conn.commit()
    conn.close()
    dest = tmp_path / "out"
    code, out, err = cli(capsys, "restore", SID, "--db", str(path), "--to", str(dest))
    assert code == 0, err
    assert not outside.exists()
    written = [p for p in dest.rglob("*") if p.is_file()]
    assert [p.relative_to(dest).parts[0] for p in written] == ["-srv-api"] and written[0].name == "evil.jsonl"
    conn = sqlite3.connect(path)
    conn.execute("UPDATE source_files SET path = '/', project_key = '/'")  # nothing left of it but the root
    conn.commit()
    conn.close()
    code, out, err = cli(capsys, "restore", SID, "--db", str(path), "--to", str(tmp_path / "out2"))
    assert code == 0, err
    assert [p.name for p in (tmp_path / "out2").iterdir()] == ["source-1"]


def test_restore_leaves_the_same_bytes_and_refuses_other_bytes_before_writing(tmp_path, capsys):
    from threadloom.core.actions.restore import session_files
    from threadloom.core.adapters.claude_demo import write_demo_archive

    root = write_demo_archive(tmp_path / "demo", long_turns=3)
    path = tmp_path / "demo.db"
    conn = db.connect(path)
    assert not run_ingest(conn, [root], include_defaults=False).errors
    mains = [r[0] for r in conn.execute("SELECT id FROM agent_sessions WHERE is_subagent = 0 ORDER BY id")]
    session = next(s for s in mains if len(session_files(conn, s)) >= 3)  # with its subagents' files
    conn.close()
    dest = tmp_path / "out"
    code, out, err = cli(capsys, "restore", session, "--db", str(path), "--to", str(dest))
    assert code == 0, err
    written = sorted(p for p in dest.rglob("*") if p.is_file())
    assert len(written) >= 3
    code, out, err = cli(
        capsys, "restore", session, "--db", str(path), "--to", str(dest)
    )  # again: all the same
    assert code == 0 and out.count("already there, the same bytes") == len(written)
    written[-1].write_bytes(b"the user's own")
    for other in written[:-1]:
        other.unlink()
    code, out, err = cli(capsys, "restore", session, "--db", str(path), "--to", str(dest))
    line = one_line_error(err)
    assert code == 1 and f"{written[-1]} already exists with other bytes; restore never overwrites" in line
    assert written[-1].read_bytes() == b"the user's own"
    assert [p for p in dest.rglob("*") if p.is_file()] == [written[-1]]  # nothing else was written either


def test_restore_help_says_what_it_does_with_files_already_there(capsys):
    with pytest.raises(SystemExit):
        main(["restore", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Nothing is ever overwritten" in text and "the same bytes is left as it is" in text
    assert "never through a link" in text


def test_resume_and_a_dry_run_fork_only_read(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))  # make_archive's projects/ is where claude looks
    path = ingested(tmp_path)
    conn = db.connect(path)
    last = conn.execute(
        "SELECT uuid FROM entries WHERE uuid IS NOT NULL ORDER BY id DESC LIMIT 1"
    ).fetchone()[0]
    conn.close()
    os.chmod(path, 0o444)
    before = path.read_bytes()
    code, out, err = cli(capsys, "resume", SID, "--db", str(path))
    assert code == 0 and f"claude --resume {SID}" in out, err
    code, out, err = cli(capsys, "fork", last, "--dry-run", "--db", str(path))
    assert code == 0 and "claude --resume" in out, err
    assert (
        stat.S_IMODE(path.stat().st_mode) == 0o444 and path.read_bytes() == before and side_files(path) == []
    )
