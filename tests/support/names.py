"""Names tests make up: databases nobody else uses.

Tests import this module, never `conftest` by name: with several conftest.py files (tests/,
tests/spark/, tests/bench/) a bare `import conftest` gets whichever pytest loaded first."""

from __future__ import annotations

import contextlib
import re
import secrets
from collections.abc import Iterator
from typing import Any


def unique_db_name(prefix: str = "t") -> str:
    """A database name nobody else uses: `<prefix>_<16 hex>` (prefix sanitised)."""
    clean = re.sub(r"[^a-z0-9_]", "_", prefix.lower())[:40]
    return f"{clean}_{secrets.token_hex(8)}"


@contextlib.contextmanager
def scratch_database(server: Any, prefix: str) -> Iterator[str]:
    """A fresh database on `server` (a tests.support.server.ServerProcess), dropped on exit:
    for module-scoped fixtures, which cannot use conftest's function-scoped `make_db`."""
    name = unique_db_name(prefix)
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}`")
    try:
        yield name
    finally:
        if server.running:
            with server.connect() as c, c.cursor() as cur:
                cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
