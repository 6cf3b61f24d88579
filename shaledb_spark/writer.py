"""The batch writer: exactly-once loads through two-phase Stream Load.

- `write` (each Spark task): streams its partition's Arrow record batches as one Arrow IPC
  stream through `PUT /api/{db}/{table}/_stream_load` with `two_phase_commit: true`, label
  `<prefix>_<job>_<partition>_<attempt>`, and returns the precommitted txn in its
  `LoadCommit`. A retried task first aborts whatever an earlier attempt of its partition may
  have precommitted (labels of attempts 0..n-1), so a retry never loads its rows twice; a task
  that dies mid-stream leaves no txn at all (the server fails a load whose body is cut).
- `commit` (driver, all tasks done): commits every task's txn in one `_stream_load_2pc` call
  (`txn_id: 1,2,3`, ShaleDB's multi-txn commit: one visible version, all or nothing).
- `abort` (driver, some task failed for good): aborts every txn it was given and every load
  of the job still precommitted (SHOW LOAD by the job's label prefix); a task Spark could not
  cancel in time may still precommit afterwards: that txn is never committed, and the server
  aborts it after `stream_load_default_precommit_timeout_second`. Nothing becomes visible.
- `overwrite` mode: the driver creates a staging table `CREATE TABLE .. LIKE` the target, the
  tasks load into it, and `commit` makes the staged rows visible then swaps them in with one
  `INSERT OVERWRITE TABLE t SELECT .. FROM staging` (atomic: readers see the old contents or the
  new, never a mix), then drops the staging table; `abort` drops it.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import types as T
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from shaledb_spark import fetch, rest
from shaledb_spark.options import ConnectorOptions
from shaledb_spark.reader import quote_ident


@dataclass
class LoadCommit(WriterCommitMessage):
    """One task's precommitted load (txn_id -1: the partition was empty, nothing loaded)."""

    txn_id: int
    label: str
    rows: int
    partition: int
    attempt: int


def _ipc_chunks(first: pa.RecordBatch, rest_batches: Iterator[pa.RecordBatch],
                counter: list[int]) -> Iterator[bytes]:
    """The batches as one Arrow IPC stream, a chunk of bytes per batch."""
    sink = io.BytesIO()
    writer = pa.ipc.new_stream(sink, first.schema)

    def drain() -> bytes:
        data = sink.getvalue()
        sink.seek(0)
        sink.truncate()
        return data

    writer.write_batch(first)
    counter[0] += first.num_rows
    yield drain()
    for batch in rest_batches:
        writer.write_batch(batch)
        counter[0] += batch.num_rows
        yield drain()
    writer.close()
    yield drain()


class ShaleDBWriter(DataSourceArrowWriter):
    def __init__(self, opts: ConnectorOptions, schema: T.StructType, overwrite: bool) -> None:
        self.opts = opts
        self.schema = schema
        self.overwrite = overwrite
        self.job = uuid.uuid4().hex[:16]
        self.target = opts.table
        self.staging = ""
        if overwrite:  # on the driver: before any task runs
            self.staging = f"__shaledb_spark_{self.job}"
            self._sql(f"CREATE TABLE {self._ident(self.staging)} LIKE {self._ident(self.target)}")
            self.target = self.staging

    # ---- helpers ------------------------------------------------------------------------
    def _ident(self, table: str) -> str:
        return f"{quote_ident(self.opts.db)}.{quote_ident(table)}"

    def _sql(self, *statements: str) -> None:
        conn = fetch.connect(self.opts)
        try:
            with conn.cursor() as cur:
                for s in statements:
                    cur.execute(s)
        finally:
            conn.close()

    def _precommitted_labels(self) -> list[str]:
        prefix = f"{self.opts.label_prefix}_{self.job}_"
        conn = fetch.connect(self.opts)
        try:
            with conn.cursor() as cur:
                cur.execute(f"SHOW LOAD FROM {quote_ident(self.opts.db)} "
                            f"WHERE LABEL LIKE '{prefix}%'")
                return [row[1] for row in cur.fetchall() if row[2] == "LOADING"]
        finally:
            conn.close()

    def _label(self, partition: int, attempt: int) -> str:
        return f"{self.opts.label_prefix}_{self.job}_{partition}_{attempt}"

    def _headers(self) -> dict[str, str]:
        headers = {"format": "arrow", "timezone": "UTC"}
        headers.update({k: v for k, v in self.opts.sink_properties.items()
                        if k.lower() not in ("two_phase_commit", "label")})
        return headers

    # ---- tasks --------------------------------------------------------------------------
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        partition = ctx.partitionId() if ctx is not None else 0
        attempt = ctx.attemptNumber() if ctx is not None else 0
        for earlier in range(attempt):  # a retry: no earlier attempt's load may survive
            rest.two_phase(self.opts, self.target, "abort",
                           label=self._label(partition, earlier))
        label = self._label(partition, attempt)
        first = next((b for b in iterator if b.num_rows), None)
        if first is None:
            return LoadCommit(-1, label, 0, partition, attempt)
        counter = [0]
        batches = (b for b in iterator if b.num_rows)
        result = rest.stream_load(self.opts, self.target, label,
                                  _ipc_chunks(first, batches, counter), self._headers())
        return LoadCommit(int(result["TxnId"]), label, int(result["NumberLoadedRows"]),
                          partition, attempt)

    # ---- driver -------------------------------------------------------------------------
    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        txns = [m.txn_id for m in messages if isinstance(m, LoadCommit) and m.txn_id >= 0]
        if txns:
            done = rest.two_phase(self.opts, self.target, "commit", txn_ids=txns)
            if done.get("status") != "Success":
                self.abort(messages)
                raise rest.ShaleDBError(f"commit of {self.opts.db}.{self.opts.table} failed: "
                                        f"{done.get('msg')}")
        if self.overwrite:
            cols = ", ".join(quote_ident(f.name) for f in self.schema.fields)
            try:
                self._sql(f"INSERT OVERWRITE TABLE {self._ident(self.opts.table)} ({cols}) "
                          f"SELECT {cols} FROM {self._ident(self.staging)}")
            finally:
                self._sql(f"DROP TABLE IF EXISTS {self._ident(self.staging)}")

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        txns = {m.txn_id for m in messages if isinstance(m, LoadCommit) and m.txn_id >= 0}
        for txn in sorted(txns):
            rest.two_phase(self.opts, self.target, "abort", txn_ids=[txn])
        # loads of this job Spark sent no message for (a task that finished while the job
        # was failing): every label of the job still precommitted (LOADING) is aborted too
        for label in self._precommitted_labels():
            rest.two_phase(self.opts, self.target, "abort", label=label)
        if self.overwrite:
            self._sql(f"DROP TABLE IF EXISTS {self._ident(self.staging)}")


def describe(messages: list[Any]) -> list[tuple[int, str, int]]:
    """(txn_id, label, rows) of the commit messages (for logs and tests)."""
    return [(m.txn_id, m.label, m.rows) for m in messages if isinstance(m, LoadCommit)]
