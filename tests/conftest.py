"""Shared fixtures: one live ShaleDB server per test session, fresh connections, fresh databases.

The `server` fixture is session-scoped and started lazily, so pure unit tests (tests/unit) never
start a server. Tests that need their own server (crash/restart tests) use
`support.server.ServerProcess` directly on a tmp data dir.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# mysql-connector's C extension (tests/clients test it, not the pure-Python fallback) needs a
# static TLS block from libstdc++ that is no longer available once pyarrow's libraries are
# loaded ("cannot allocate memory in static TLS block"). This conftest is imported before any
# test module, so loading the extension here makes the suite independent of test order.
try:
    import _mysql_connector  # noqa: F401
except ImportError:  # the extension is missing or broken: test_auth says so itself
    pass

# Property tests draw the same examples on every run (seeded from each test's name), so the suite
# fails only when code or tests change, never on a newly drawn example while CI judges a change;
# `HYPOTHESIS_PROFILE=explore ./scripts/test.sh ...` draws fresh random examples to hunt for bugs.
# Tests' own @settings (example counts, deadlines) apply on top of the loaded profile.
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
# The server packages (storage, sql, planner, executor, server) are imported from the repo root,
# `support` from tests/. A regular package always wins over the namespace dir tests/sql.
for _p in (str(REPO_ROOT), str(TESTS_DIR)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from support.names import unique_db_name  # noqa: E402
from support.server import ServerProcess  # noqa: E402


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One ShaleDB server (3 embedded backends) on a fresh data dir for the whole session."""
    data_dir = tmp_path_factory.mktemp("shaledb-data")
    srv = ServerProcess(data_dir, backends=3)
    srv.start()
    try:
        yield srv
    finally:
        if srv.running:
            srv.stop()


@pytest.fixture
def conn(server: ServerProcess):
    """A fresh pymysql connection (autocommit) with no current database."""
    c = server.connect()
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def make_db(server: ServerProcess):
    """Factory: `make_db("name")` creates a unique database and returns its name; all are dropped
    at teardown."""
    created: list[str] = []

    def _make(prefix: str = "t") -> str:
        name = unique_db_name(prefix)
        with server.connect() as c, c.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{name}`")
        created.append(name)
        return name

    yield _make
    if server.running:
        with server.connect() as c, c.cursor() as cur:
            for name in created:
                cur.execute(f"DROP DATABASE IF EXISTS `{name}`")


@pytest.fixture
def db(make_db, request: pytest.FixtureRequest) -> str:
    """A fresh database named after the test; dropped afterwards."""
    return make_db(request.node.name)


@pytest.fixture
def db_conn(server: ServerProcess, db: str):
    """A fresh pymysql connection (autocommit) whose current database is `db`."""
    c = server.connect(db)
    try:
        yield c
    finally:
        c.close()
