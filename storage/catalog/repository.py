"""CatalogRepository: the SQLite (WAL) file that persists the catalog. No SQL strings elsewhere.

Every metadata object is one row `(kind, id, parent, body)` with `body` the JSON of its frozen
dataclass (`codec.py`). A `Mutation` groups puts and deletes into one SQLite transaction: a DDL
or a load publish is atomic and durable (`synchronous=FULL`) or not there at all.

Job history that the `Catalog` does not hold in memory has tables of its own, read and written
only by the methods below (their owners keep their own in-memory view and bounds):
`load_records` (`LoadRecordMeta`, SHOW LOAD / SHOW STREAM LOAD, executor/load/records.py) and
`export_jobs` (`ExportJobMeta`, SHOW EXPORT, server/export_jobs.py). Both are created by
`_SCHEMA` on open (`IF NOT EXISTS`), so an older catalog file gains them on its first open.
Upstream concept: Doris FE edit log + image, reduced to one transactional store.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from storage.catalog import codec
from storage.catalog.meta import (
    AlterJobMeta,
    Backend,
    ColocateGroup,
    DatabaseMeta,
    ExportJobMeta,
    LoadRecordMeta,
    MaterializedIndexMeta,
    PartitionMeta,
    RoleMeta,
    RowsetMeta,
    TableMeta,
    TabletMeta,
    TxnMeta,
    UserMeta,
)

# class -> (kind, id attribute, parent attribute or None)
KINDS: dict[type, tuple[str, str, str | None]] = {
    DatabaseMeta: ("db", "db_id", None),
    TableMeta: ("table", "table_id", "db_id"),
    PartitionMeta: ("partition", "partition_id", "table_id"),
    MaterializedIndexMeta: ("index", "index_id", "table_id"),
    TabletMeta: ("tablet", "tablet_id", "table_id"),
    RowsetMeta: ("rowset", "rowset_id", "tablet_id"),
    Backend: ("backend", "backend_id", None),
    ColocateGroup: ("colocate", "group_id", "db_id"),
    TxnMeta: ("txn", "txn_id", "db_id"),
    AlterJobMeta: ("alter_job", "job_id", "db_id"),
    UserMeta: ("user", "ident", None),
    RoleMeta: ("role", "name", None),
}
CLASS_OF_KIND = {kind: cls for cls, (kind, _, _) in KINDS.items()}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    kind TEXT NOT NULL,
    id TEXT NOT NULL,
    parent INTEGER,
    body TEXT NOT NULL,
    PRIMARY KEY (kind, id)
);
CREATE TABLE IF NOT EXISTS sequences (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS load_records (job_id INTEGER PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS export_jobs (job_id INTEGER PRIMARY KEY, body TEXT NOT NULL);
"""

FIRST_ID = 10000


def identity(obj: Any) -> tuple[str, str, int | None]:
    kind, id_attr, parent_attr = KINDS[type(obj)]
    parent = getattr(obj, parent_attr) if parent_attr else None
    return kind, str(getattr(obj, id_attr)), parent


class Mutation:
    """Puts and deletes applied in one SQLite transaction (see `CatalogRepository.mutate`)."""

    def __init__(self) -> None:
        self.puts: list[Any] = []
        self.deletes: list[tuple[str, str]] = []

    def put(self, obj: Any) -> None:
        self.puts.append(obj)

    def delete(self, obj: Any) -> None:
        kind, ident, _ = identity(obj)
        self.deletes.append((kind, ident))


class CatalogRepository:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def load_all(self) -> Iterator[Any]:
        with self._lock:
            rows = self._conn.execute("SELECT kind, body FROM objects").fetchall()
        for kind, body in rows:
            cls = CLASS_OF_KIND.get(kind)
            if cls is not None:
                yield codec.loads(cls, body)

    def next_ids(self, count: int, name: str = "id") -> list[int]:
        """Allocate `count` fresh ids (durable, never reused)."""
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                row = cur.execute("SELECT value FROM sequences WHERE name = ?", (name,)).fetchone()
                start = row[0] if row else FIRST_ID
                cur.execute(
                    "INSERT INTO sequences(name, value) VALUES(?, ?) "
                    "ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                    (name, start + count),
                )
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise
        return list(range(start, start + count))

    @contextmanager
    def mutate(self) -> Iterator[Mutation]:
        """Yield a Mutation; on normal exit write all of it in one transaction."""
        mutation = Mutation()
        yield mutation
        self.apply(mutation)

    def apply(self, mutation: Mutation) -> None:
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                for kind, ident in mutation.deletes:
                    cur.execute("DELETE FROM objects WHERE kind = ? AND id = ?", (kind, ident))
                for obj in mutation.puts:
                    kind, ident, parent = identity(obj)
                    cur.execute(
                        "INSERT OR REPLACE INTO objects(kind, id, parent, body) VALUES(?, ?, ?, ?)",
                        (kind, ident, parent, codec.dumps(obj)),
                    )
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise

    # ---- job history (not part of the in-memory Catalog) ------------------------------------
    def _write(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        with self._lock:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                for sql, params in statements:
                    cur.execute(sql, params)
                cur.execute("COMMIT")
            except BaseException:
                cur.execute("ROLLBACK")
                raise

    def _list(self, table: str, cls: type) -> list[Any]:
        with self._lock:
            rows = self._conn.execute(f"SELECT body FROM {table} ORDER BY job_id").fetchall()
        return [codec.loads(cls, body) for (body,) in rows]

    def put_load_records(self, records: list[LoadRecordMeta], keep_from: int | None = None
                         ) -> None:
        """Insert or replace `records` and, in the same transaction, drop every record whose
        job id is below `keep_from` (the owner's bound), so the table stays small."""
        statements: list[tuple[str, tuple[Any, ...]]] = [
            ("INSERT OR REPLACE INTO load_records(job_id, body) VALUES(?, ?)",
             (r.job_id, codec.dumps(r))) for r in records]
        if keep_from is not None:
            statements.append(("DELETE FROM load_records WHERE job_id < ?", (keep_from,)))
        self._write(statements)

    def load_records(self) -> list[LoadRecordMeta]:
        """Every stored load record, oldest (lowest job id) first."""
        return self._list("load_records", LoadRecordMeta)

    def put_export_jobs(self, jobs: list[ExportJobMeta], keep_from: int | None = None) -> None:
        """Insert or replace `jobs`; drop the jobs whose id is below `keep_from` (same txn)."""
        statements: list[tuple[str, tuple[Any, ...]]] = [
            ("INSERT OR REPLACE INTO export_jobs(job_id, body) VALUES(?, ?)",
             (j.job_id, codec.dumps(j))) for j in jobs]
        if keep_from is not None:
            statements.append(("DELETE FROM export_jobs WHERE job_id < ?", (keep_from,)))
        self._write(statements)

    def export_jobs(self) -> list[ExportJobMeta]:
        """Every stored export job, oldest (lowest job id) first."""
        return self._list("export_jobs", ExportJobMeta)
