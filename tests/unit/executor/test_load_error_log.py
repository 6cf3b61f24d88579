"""Load error logs (executor/load/error_log.py): one `Reason:` line per filtered row, names that
only resolve inside the error-log directory, and clean-up by age
(`load_error_log_reserve_hours`)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from executor.load.error_log import (
    MAX_ERROR_ROWS,
    clean_error_logs,
    error_log_dir,
    error_log_path,
    write_error_log,
)


def test_written_log_lists_each_reason_and_resolves_by_name(tmp_path: Path) -> None:
    name = write_error_log(tmp_path, "my label/../x", 42, ["Reason: a", "b"])
    assert name.startswith("error_log_my_label_.._x_42_")
    path = error_log_path(tmp_path, name)
    assert path is not None and path.parent == error_log_dir(tmp_path)
    assert path.read_text().splitlines() == ["Reason: a", "Reason: b"]
    assert error_log_path(tmp_path, f"__shard_0/{name}") == path  # Doris' URL form


def test_only_plain_names_of_the_directory_resolve(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("x")
    write_error_log(tmp_path, "l", 1, ["r"])
    for name in ("../secret", "../../etc/passwd", "/etc/passwd", "error_log_../../secret",
                 "", "error_log_missing"):
        assert error_log_path(tmp_path, name) is None, name


def test_rows_are_capped(tmp_path: Path) -> None:
    name = write_error_log(tmp_path, "l", 1, (f"r{i}" for i in range(MAX_ERROR_ROWS + 5)))
    path = error_log_path(tmp_path, name)
    assert path is not None
    assert sum(1 for _ in path.open()) == MAX_ERROR_ROWS


def test_clean_deletes_only_logs_past_the_reserve(tmp_path: Path) -> None:
    old = error_log_path(tmp_path, write_error_log(tmp_path, "old", 1, ["r"]))
    new = error_log_path(tmp_path, write_error_log(tmp_path, "new", 2, ["r"]))
    assert old is not None and new is not None
    three_days_ago = time.time() - 72 * 3600
    os.utime(old, (three_days_ago, three_days_ago))
    assert clean_error_logs(tmp_path, 48) == 1
    assert not old.exists() and new.exists()
    assert clean_error_logs(tmp_path / "nowhere", 48) == 0
