"""The server's clock: "now" for SQL (NOW(), CURDATE(), CURRENT_TIMESTAMP, column defaults, load
`now()`) and for time-driven background work (the dynamic partition scheduler), with one
injectable override.

`ADMIN SET FRONTEND CONFIG ("current_time_override" = "2024-03-15 00:00:00")` pins the clock to
that local wall-clock time (the server's time zone) until it is set to "" again, so users can
demo and test time-dependent behaviour (which partitions exist "today") without waiting, and our
tests never sleep. A pinned clock stands still. The override is process-wide, like the frontend
config it comes from, and is not persisted: a restart returns to the real clock, as every
`ADMIN SET FRONTEND CONFIG` change returns to fe.conf's value in Doris.
"""

from __future__ import annotations

import datetime as _dt
import threading
import time
from collections.abc import Callable

_lock = threading.Lock()
_override: float | None = None  # epoch seconds while pinned
_listeners: list[Callable[[], None]] = []


def epoch() -> float:
    """Seconds since the epoch: the pinned instant, or the real time."""
    pinned = _override
    return time.time() if pinned is None else pinned


def now() -> _dt.datetime:
    """Local wall-clock time (naive, the server's time zone), microseconds included."""
    pinned = _override
    return _dt.datetime.now() if pinned is None else _dt.datetime.fromtimestamp(pinned)


def now_in(zone: _dt.tzinfo) -> _dt.datetime:
    """Wall-clock time in `zone`, naive."""
    return _dt.datetime.fromtimestamp(epoch(), zone).replace(tzinfo=None)


def override_text() -> str:
    """The override as ADMIN SHOW FRONTEND CONFIG prints it ("" when the real clock runs)."""
    pinned = _override
    if pinned is None:
        return ""
    return _dt.datetime.fromtimestamp(pinned).strftime("%Y-%m-%d %H:%M:%S")


def parse_override(text: str) -> float | None:
    """Epoch seconds for `text` ("YYYY-MM-DD[ HH:MM:SS]" local time), None for "".
    Raises ValueError with what is wrong."""
    value = text.strip()
    if not value:
        return None
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d"):
        try:
            return _dt.datetime.strptime(value, fmt).timestamp()
        except ValueError:
            continue
    raise ValueError(f"'{text}' is not a datetime: expected 'yyyy-MM-dd HH:mm:ss' or ''")


def set_override(pinned: float | None) -> None:
    """Pin the clock at `pinned` (epoch seconds) or release it (None); then tell the listeners
    (the dynamic partition scheduler runs at once when "today" changes)."""
    global _override
    with _lock:
        _override = pinned
        listeners = list(_listeners)
    for listener in listeners:
        listener()


def on_change(listener: Callable[[], None]) -> Callable[[], None]:
    """Call `listener` after every override change; returns a function that unregisters it."""
    with _lock:
        _listeners.append(listener)

    def remove() -> None:
        with _lock:
            if listener in _listeners:
                _listeners.remove(listener)

    return remove
