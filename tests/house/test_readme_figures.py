"""The README's prose and its Performance table say the same figure: the prose once kept a ratio
(a pull into an empty archive, 1.0-1.4x a cold ingest) that the measured table (2.32x) no longer held."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_sync_pull_ratio_in_the_prose_is_the_tables() -> None:
    text = README.read_text()
    row = re.search(
        r"\| sync: first push to a hub / pull of it all into an empty machine .*?\| [\d.]+× / ([\d.]+)×", text
    )
    prose = re.search(r"a pull of all of it into an empty\s+archive (?:takes )?([\d.]+(?:-[\d.]+)?)x", text)
    assert row and prose, "the sync's figures moved in the README: update this test"
    assert prose.group(1) == f"{float(row.group(1)):.1f}"
