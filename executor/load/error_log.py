"""Load error logs: the filtered rows of a load, with their reasons, in one file each
(Doris BE `RuntimeState::create_error_log_file`, served by `/api/_load_error_log?file=..`).

Files live in `<data_dir>/log/error_log/`, named `error_log_<label-ish>_<txn>_<random>`: the
128 random bits make the URL a capability (it is served without credentials, as Doris BE
serves its error logs), not guessable from the label. One line per filtered row: `Reason: <why>.`
(Doris writes the reason and the source row; our reasons already name the row's values).
`clean_error_logs` deletes files older than `load_error_log_reserve_hours` (Doris BE's
`load_error_log_reserve_hours`); the HTTP side runs it at start and after each load that wrote
a file. `error_log_path` is the only way from a request's `file` parameter to a path: it
refuses anything but a plain name of this directory.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from collections.abc import Iterable
from pathlib import Path

ERROR_LOG_DIR = ("log", "error_log")
# At most this many rows per file (Doris caps the error log too: the first errors matter).
MAX_ERROR_ROWS = 50_000
_NAME = re.compile(r"^error_log_[A-Za-z0-9_.-]{1,200}$")


def error_log_dir(data_dir: Path) -> Path:
    return data_dir.joinpath(*ERROR_LOG_DIR)


def write_error_log(data_dir: Path, label: str, txn_id: int, reasons: Iterable[str]) -> str:
    """Write the reasons (one per filtered row) to a new file; returns its name."""
    directory = error_log_dir(data_dir)
    directory.mkdir(parents=True, exist_ok=True)
    safe_label = re.sub(r"[^A-Za-z0-9_.-]", "_", label)[:100]
    name = f"error_log_{safe_label}_{txn_id}_{secrets.token_hex(16)}"
    tmp = directory / f".{name}.tmp"
    with open(tmp, "w", encoding="utf-8", errors="replace") as f:
        for i, reason in enumerate(reasons):
            if i >= MAX_ERROR_ROWS:
                break
            f.write(reason if reason.startswith("Reason:") else f"Reason: {reason}")
            f.write("\n")
    os.replace(tmp, directory / name)
    return name


def error_log_path(data_dir: Path, name: str) -> Path | None:
    """The file of an ErrorURL's `file` parameter, or None if it is not one of ours."""
    name = name.rsplit("/", 1)[-1] if name.startswith("__shard_") else name
    if not _NAME.match(name):
        return None
    path = error_log_dir(data_dir) / name
    return path if path.is_file() else None


def clean_error_logs(data_dir: Path, reserve_hours: float, now: float | None = None) -> int:
    """Delete error logs older than `reserve_hours`; returns how many were deleted."""
    directory = error_log_dir(data_dir)
    if not directory.is_dir():
        return 0
    limit = (time.time() if now is None else now) - reserve_hours * 3600
    gone = 0
    for f in directory.iterdir():
        try:
            if f.stat().st_mtime < limit:
                f.unlink()
                gone += 1
        except FileNotFoundError:
            continue
    return gone
