"""Sessions an agent's own cleanup is about to delete before threadloom has archived them.

Claude Code deletes a transcript once its last change is older than `cleanupPeriodDays` (its
settings.json; 30 days by default), each time it starts. A session threadloom has not read by then
is lost, and the usual way it happens is not opening threadloom for a few weeks. `sources` and the
TUI's first screen say how many sessions on disk are not archived yet and are within a week of that
age (or past it: gone at Claude Code's next start), with the oldest, and what keeps them
(`threadloom service install`).
"""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..adapters.base import CleanupPolicy

DAY_MS = 86_400_000


def margin_days(period: int) -> int:
    """How long before the deletion to warn: a week, or a quarter of a shorter period."""
    return max(1, min(7, period // 4))


@dataclass
class CleanupRisk:
    """One agent's sessions on disk that its cleanup will delete and threadloom has not archived."""

    agent: str
    period_days: int  # the agent deletes sessions this long after their last change
    setting: str  # where the period was read ("default" when nowhere)
    margin_days: int
    sessions: int  # the agent's sessions on disk
    unarchived: int  # of them, not archived as they are now
    at_risk: int  # of those, older than period - margin: deleted within `margin_days`, or already due
    overdue: int  # of those, older than the period: deleted at the agent's next start
    oldest_ms: int | None  # the last change of the oldest one at risk
    who: str = ""  # the agent, in sentences
    key: str = ""  # the setting the period is read from

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        del data["who"], data["key"]
        return data

    @property
    def rule(self) -> str:
        """The agent's rule, as the warning says it."""
        said = ", ".join(part for part in (self.key, self.setting) if part)
        return f"{self.who} deletes sessions {self.period_days} days after their last change ({said})"

    def oldest_day(self) -> str:
        return time.strftime("%Y-%m-%d", time.localtime(self.oldest_ms / 1000)) if self.oldest_ms else ""

    def message(self, *, hint: str = "`threadloom ingest` archives them now") -> str:
        """The warning, in one paragraph; empty when nothing is at risk."""
        if not self.at_risk:
            return ""
        due = f", {self.overdue} of them already due (deleted at its next start)" if self.overdue else ""
        return (
            f"{self.rule}: {self.at_risk} not archived yet will be deleted within "
            f"{self.margin_days} days{due}; the oldest was last changed on {self.oldest_day()}. {hint}; "
            "`threadloom service install` keeps archiving with threadloom closed."
        )


def cleanup_risk(conn: sqlite3.Connection | None, *, now_ms: int | None = None) -> CleanupRisk | None:
    """The sessions at risk of the agent that deletes its own old sessions (its adapter's
    `cleanup_policy`: Claude Code's `cleanupPeriodDays`); None when it keeps no sessions here, or
    its cleanup is off (a period of 0 or less). A session is its transcript, `<root>/<project>/<id>
    .jsonl`; it is archived when the archive holds the file at its present size and mtime. `conn`:
    the archive, read only (None: nothing archived yet)."""
    from ..adapters import ADAPTERS

    for name in ADAPTERS:
        policy = ADAPTERS[name].cleanup_policy()
        if policy is not None:
            risk = _risk(conn, name, policy, now_ms)
            if risk is not None:
                risk.who, risk.key = ADAPTERS[name].display_name, policy.key
            return risk
    return None


claude_risk = cleanup_risk  # its first name, when Claude Code's was the one cleanup known


def _risk(
    conn: sqlite3.Connection | None, agent: str, policy: CleanupPolicy, now_ms: int | None
) -> CleanupRisk | None:
    from ..adapters.base import disk_name, stored_name

    projects = policy.root.absolute()  # as the archive names the files it read there
    if not projects.is_dir() or policy.period_days is None:
        return None
    period, setting = int(policy.period_days), policy.setting
    if period <= 0:
        return None
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    margin = margin_days(period)
    archived: dict[str, tuple[int, int]] = {}
    if conn is not None:
        prefix = stored_name(str(projects)).rstrip(os.sep) + os.sep
        rows = conn.execute(
            "SELECT path, size, mtime_ns FROM source_files WHERE agent = ? AND status != 'error' "
            "AND substr(path, 1, ?) = ?",
            (agent, len(prefix), prefix),
        )
        archived = {disk_name(path): (size, mtime_ns) for path, size, mtime_ns in rows}
    risk = CleanupRisk(agent, period, setting, margin, 0, 0, 0, 0, None)
    for path, st in _transcripts(projects, policy.suffix):
        risk.sessions += 1
        if archived.get(path) == (st.st_size, st.st_mtime_ns):
            continue
        risk.unarchived += 1
        age_ms = now_ms - st.st_mtime_ns // 1_000_000
        if age_ms < (period - margin) * DAY_MS:
            continue
        risk.at_risk += 1
        risk.overdue += age_ms >= period * DAY_MS
        changed = st.st_mtime_ns // 1_000_000
        risk.oldest_ms = changed if risk.oldest_ms is None else min(risk.oldest_ms, changed)
    return risk


def _transcripts(projects: Path, suffix: str = ".jsonl") -> list[tuple[str, os.stat_result]]:
    """Each project folder's session transcripts (`*.jsonl` directly in it), with their stat: one
    listing per project folder."""
    found = []
    try:
        folders = [e for e in os.scandir(projects) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    for folder in folders:
        try:
            with os.scandir(folder.path) as it:
                for entry in it:
                    if entry.name.endswith(suffix) and entry.is_file(follow_symlinks=False):
                        try:
                            found.append((entry.path, entry.stat(follow_symlinks=False)))
                        except OSError:
                            continue
        except OSError:
            continue
    return found
