"""Counts said in words: one of a thing is singular ("Ingest done · 1 files read" it said)."""

from __future__ import annotations

from threadloom.core.cli.ingest import _print_ingest_summary
from threadloom.core.ingest.pipeline import IngestReport
from threadloom.tui.archive import ingest_done


def test_one_file_read_is_said_in_the_singular(capsys) -> None:
    one = IngestReport(
        files_seen=1, files_read=1, bytes_read=100_000, records_added=1, sessions=1, seconds=0.1
    )
    assert ingest_done(one) == "1 file read (0.1 MB), 1 session updated in 0.1 s"
    assert ingest_done(IngestReport(files_read=2, sessions=3)).startswith("2 files read")
    _print_ingest_summary(one)
    printed = capsys.readouterr().out
    assert printed.startswith("1 file seen") and "1 record," in printed and "1 session updated" in printed
    assert "0 errors" in printed
