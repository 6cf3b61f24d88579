"""Runs every tests/sql/**/*.test file (sqllogictest format, see runner.py) against the live
session server, one parametrized test per file."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

SQL_DIR = Path(__file__).resolve().parent
if str(SQL_DIR) not in sys.path:
    sys.path.insert(0, str(SQL_DIR))

import runner  # noqa: E402

TEST_FILES = sorted(SQL_DIR.rglob("*.test"))
# Server-wide settings a file may change (the seed 001 files pin "today"); each file resets
# them in its last records, and this puts them back even when a file stops early (a lost
# connection), so no other file on the same server sees them.
FE_DEFAULTS = {"current_time_override": "", "dynamic_partition_enable": "true",
               "dynamic_partition_check_interval_seconds": "600"}


def test_corpus_is_not_empty() -> None:
    assert TEST_FILES, f"no .test files under {SQL_DIR}"


@pytest.mark.parametrize(
    "path", TEST_FILES, ids=[p.relative_to(SQL_DIR).as_posix() for p in TEST_FILES]
)
def test_sql_file(server, path: Path) -> None:
    name = path.relative_to(SQL_DIR).as_posix()
    connect = lambda: server.connect(**runner.text_connect_kwargs())
    try:
        result = runner.run_file(path, connect, name)
    finally:
        _restore_fe_config(path, connect)
    if not result.ok:
        pytest.fail(result.report(), pytrace=False)
    assert result.records_run > 0, f"{name} has no records"


def _restore_fe_config(path: Path, connect) -> None:  # type: ignore[no-untyped-def]
    text = path.read_text(encoding="utf-8")
    touched = [key for key in FE_DEFAULTS if key in text]
    if not touched:
        return
    conn = connect()
    try:
        with conn.cursor() as cur:
            for key in touched:
                cur.execute(f'ADMIN SET FRONTEND CONFIG ("{key}" = "{FE_DEFAULTS[key]}")')
    finally:
        conn.close()
