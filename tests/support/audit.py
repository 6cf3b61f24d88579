"""Reading a test server's fe.audit.log.

The server writes audit lines from a background thread (server/audit.py), so a statement's
line lands a moment after its result: tests wait for the lines they expect instead of reading
once."""

from __future__ import annotations

import time
from pathlib import Path


def wait_for_audit_lines(data_dir: str | Path, needle: str, at_least: int = 1,
                         timeout: float = 60.0) -> list[str]:
    """The audit log's lines containing `needle`, once at least `at_least` of them are written
    (or whatever is there when `timeout` runs out: the caller's assertion then says what is
    missing)."""
    path = Path(data_dir) / "log" / "fe.audit.log"
    deadline = time.monotonic() + timeout
    while True:
        text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
        lines = [line for line in text.splitlines() if needle in line]
        if len(lines) >= at_least or time.monotonic() > deadline:
            return lines
        time.sleep(0.05)
