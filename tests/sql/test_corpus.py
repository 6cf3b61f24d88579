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


def test_corpus_is_not_empty() -> None:
    assert TEST_FILES, f"no .test files under {SQL_DIR}"


@pytest.mark.parametrize(
    "path", TEST_FILES, ids=[p.relative_to(SQL_DIR).as_posix() for p in TEST_FILES]
)
def test_sql_file(server, path: Path) -> None:
    name = path.relative_to(SQL_DIR).as_posix()
    result = runner.run_file(path, lambda: server.connect(**runner.text_connect_kwargs()), name)
    if not result.ok:
        pytest.fail(result.report(), pytrace=False)
    assert result.records_run > 0, f"{name} has no records"
