"""Small formatting helpers shared by the CLI and the TUI."""

from __future__ import annotations

import time
from datetime import datetime


def human_when(ms: int | None, now: float | None = None) -> str:
    """'3m ago', 'yesterday', '12 Mar', '2024-03-12' — short enough for a column."""
    if ms is None:
        return "—"
    now = time.time() if now is None else now
    delta = now - ms / 1000
    if delta < 0:
        delta = 0
    if delta < 60:
        return "just now"
    if delta < 3600:
        return f"{int(delta // 60)}m ago"
    if delta < 86400:
        return f"{int(delta // 3600)}h ago"
    if delta < 2 * 86400:
        return "yesterday"
    if delta < 7 * 86400:
        return f"{int(delta // 86400)}d ago"
    dt = datetime.fromtimestamp(ms / 1000)
    if delta < 300 * 86400:
        return dt.strftime("%d %b")
    return dt.strftime("%Y-%m-%d")


def human_tokens(n: int | None) -> str:
    if not n:
        return "0"
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if n >= size:
            value = n / size
            return f"{value:.1f}{unit}" if value < 100 else f"{value:.0f}{unit}"
    return str(n)


def clock(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M")


def one_line(text: str | None, width: int = 80) -> str:
    if not text:
        return ""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
