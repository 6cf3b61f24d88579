"""The batch writer: exactly-once loads through two-phase Stream Load.

- `write` (each Spark task): streams its partition's Arrow record batches as one Arrow IPC
  stream through `PUT /api/{db}/{table}/_stream_load` with `two_phase_commit: true`, label
  `<prefix>_<job>_<partition>_<attempt>`, and returns the precommitted txn in its
  `LoadCommit`. A task that dies mid-stream leaves no txn at all (the server fails a load
  whose body is cut). Several attempts of one partition may each precommit a txn: a retry
  after a failure that came after the precommit, or a speculative copy (spark.speculation)
  racing the original; Spark keeps one winner's message per partition. A task never aborts
  another attempt's txn (with speculation that attempt may be the winner); instead an attempt
  that precommitted after a sibling attempt of its partition was committed aborts its own txn
  (it lost: its rows are already in), and the driver aborts the rest (below).
- `commit` (driver, all tasks done): commits the winners' txns (the messages Spark passes) in
  one `_stream_load_2pc` call (`txn_id: 1,2,3`, ShaleDB's multi-txn commit: one visible
  version, all or nothing), then aborts every load of the job still precommitted (SHOW LOAD
  by the job's label prefix, state LOADING): the losing and failed attempts' txns. Ordering
  makes this complete: an attempt that precommits before the driver's sweep is swept; one
  that precommits after it checks after its precommit, finds the committed sibling (committed
  before the sweep) and aborts itself. Nothing is left PRECOMMITTED to expire. (Both read
  SHOW LOAD over the MySQL port; a job that cannot reach it skips them, and such txns expire
  after `stream_load_default_precommit_timeout_second` as before.)
- `abort` (driver, some task failed for good): aborts every txn it was given and every load
  of the job still precommitted (SHOW LOAD by the job's label prefix); a task Spark could not
  cancel in time may still precommit afterwards: that txn is never committed, and the server
  aborts it after `stream_load_default_precommit_timeout_second`. Nothing becomes visible.
- `overwrite` mode: the driver creates a staging table `CREATE TABLE .. LIKE` the target, the
  tasks load into it, and `commit` makes the staged rows visible then swaps them in with one
  `INSERT OVERWRITE TABLE t [PARTITION (p, ..)] SELECT * FROM staging` (atomic: readers see
  the old contents or the new, never a mix), then drops the staging table; `abort` drops it.
  With `doris.sink.properties.partitions` only the named partitions are replaced (every load
  names them too, so a row of another partition fails the job before anything is visible).
  A staging table is named `__shaledb_spark_stage_<unix seconds>_<job>`: a driver that dies
  mid-overwrite leaves it behind, and the next overwrite job of the database drops every
  staging table older than `staging_ttl_seconds` (default 259200, Doris' longest load
  timeout, so no live job's staging table is ever that old).
- BITMAP/HLL: a BinaryType column (the serialized value a read returns) is sent as base64
  text under `__b64_<name>` and loaded with `columns: .., name=bitmap_from_base64(__b64_name)`
  (hll_from_base64 for HLL); `doris.write.fields` / the sink property `columns` replace that
  with the job's own list (`uid, bm=to_bitmap(uid)`), as in Doris.
"""

from __future__ import annotations

import base64
import logging
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import types as T
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from shaledb_spark import mysql, rest
from shaledb_spark.options import ConnectorOptions
from shaledb_spark.reader import quote_ident
from shaledb_spark.types import OBJECT_TYPES, doris_type

if TYPE_CHECKING:
    import pyarrow as pa

logger = logging.getLogger(__name__)
STAGING_PREFIX = "__shaledb_spark_stage_"
_STAGING_NAME = re.compile(re.escape(STAGING_PREFIX) + r"(\d+)_[0-9a-f]+$")
_B64_PREFIX = "__b64_"


@dataclass
class LoadCommit(WriterCommitMessage):
    """One task's precommitted load (txn_id -1: the partition was empty, nothing loaded)."""

    txn_id: int
    label: str
    rows: int
    partition: int
    attempt: int


# An Arrow IPC stream ends with a continuation marker and a zero length (pa.ipc's writer)
_IPC_END = b"\xff\xff\xff\xff\x00\x00\x00\x00"


def _ipc_chunks(first: pa.RecordBatch, rest_batches: Iterator[pa.RecordBatch],
                counter: list[int]) -> Iterator[Any]:
    """The batches as one Arrow IPC stream (the bytes `pa.ipc.new_stream` writes): the
    schema's message, then each batch's message as its own buffer (`serialize`: the one copy
    of the batch this side makes; the HTTP upload sends the buffer as it is)."""
    yield first.schema.serialize()
    yield first.serialize()
    counter[0] += first.num_rows
    for batch in rest_batches:
        yield batch.serialize()
        counter[0] += batch.num_rows
    yield _IPC_END


def _encode_objects(batch: pa.RecordBatch, encoded: dict[int, str]) -> pa.RecordBatch:
    """The batch with its BITMAP/HLL binary columns as base64 text under `__b64_<name>`."""
    if not encoded:
        return batch
    import pyarrow as pa
    arrays, names = list(batch.columns), list(batch.schema.names)
    for i in encoded:
        arrays[i] = pa.array([None if v is None else base64.b64encode(v).decode("ascii")
                              for v in arrays[i].to_pylist()], pa.string())
        names[i] = _B64_PREFIX + names[i]
    return pa.RecordBatch.from_arrays(arrays, names=names)


def load_columns(schema: T.StructType, props: list[dict[str, Any]],
                 opts: ConnectorOptions) -> tuple[str, dict[int, str]]:
    """The load's `columns` header and the DataFrame positions sent as base64 (BinaryType
    columns of BITMAP/HLL table columns), unless the job gave its own `columns` list."""
    if opts.write_columns:
        return opts.write_columns, {}
    types = {p["name"].lower(): doris_type(p) for p in props}
    encoded = {i: types[f.name.lower()] for i, f in enumerate(schema.fields)
               if types.get(f.name.lower()) in OBJECT_TYPES}
    if not encoded:
        return "", {}
    sources = [quote_ident(_B64_PREFIX + f.name if i in encoded else f.name)
               for i, f in enumerate(schema.fields)]
    mapped = [f"{quote_ident(schema.fields[i].name)}={kind.lower()}_from_base64("
              f"{quote_ident(_B64_PREFIX + schema.fields[i].name)})"
              for i, kind in encoded.items()]
    return ", ".join(sources + mapped), encoded


class ShaleDBWriter(DataSourceArrowWriter):
    def __init__(self, opts: ConnectorOptions, schema: T.StructType, overwrite: bool,
                 props: list[dict[str, Any]] | None = None) -> None:
        self.opts = opts
        self.schema = schema
        self.overwrite = overwrite
        self.job = uuid.uuid4().hex[:16]
        self.target = opts.table
        self.staging = ""
        self.columns, self.encoded = load_columns(schema, props or [], opts)
        if overwrite:  # on the driver: before any task runs
            self._drop_stale_staging()
            self.staging = f"{STAGING_PREFIX}{int(time.time())}_{self.job}"
            self._sql(f"CREATE TABLE {self._ident(self.staging)} LIKE {self._ident(self.target)}")
            self.target = self.staging

    def _drop_stale_staging(self) -> None:
        """Drop the staging tables of overwrite jobs whose driver died (older than the TTL)."""
        conn = mysql.connect(self.opts)
        try:
            with conn.cursor() as cur:
                cur.execute(f"SHOW TABLES FROM {quote_ident(self.opts.db)} "
                            f"LIKE '{STAGING_PREFIX}%'")
                now = time.time()
                for (name,) in cur.fetchall():
                    m = _STAGING_NAME.match(name)
                    if m and now - int(m.group(1)) > self.opts.staging_ttl_seconds:
                        cur.execute(f"DROP TABLE IF EXISTS {self._ident(name)}")
        finally:
            conn.close()

    # ---- helpers ------------------------------------------------------------------------
    def _ident(self, table: str) -> str:
        return f"{quote_ident(self.opts.db)}.{quote_ident(table)}"

    def _sql(self, *statements: str) -> None:
        conn = mysql.connect(self.opts)
        try:
            with conn.cursor() as cur:
                for s in statements:
                    cur.execute(s)
        finally:
            conn.close()

    def _job_loads(self, partition: int | None = None,
                   required: bool = True) -> list[tuple[str, str]]:
        """(label, SHOW LOAD state) of this job's loads (of one partition's attempts): LOADING
        is precommitted, FINISHED committed. Not `required` (a commit's sweep, a task's check)
        and the MySQL port unreachable (a job given only the HTTP and Flight ports): none, so
        a losing attempt's txn is left to the server's precommit timeout, as before."""
        prefix = f"{self.opts.label_prefix}_{self.job}_"
        if partition is not None:
            prefix += f"{partition}_"
        try:
            conn = mysql.connect(self.opts)
        except Exception as e:
            if required or not mysql.unreachable(e):
                raise
            logger.warning("shaledb writer: the MySQL port is unreachable (%s): precommitted "
                           "loads of losing attempts are left to the precommit timeout", e)
            return []
        try:
            with conn.cursor() as cur:
                cur.execute(f"SHOW LOAD FROM {quote_ident(self.opts.db)} "
                            f"WHERE LABEL LIKE '{prefix}%'")
                rows = cur.fetchall()
        finally:
            conn.close()
        # LIKE's `_` matches any character: keep exactly `<prefix>[<partition>_]<digits>...`
        return [(row[1], row[2]) for row in rows if row[1].startswith(prefix)
                and (partition is None or row[1][len(prefix):].isdigit())]

    def _precommitted_labels(self, required: bool = True) -> list[str]:
        return [label for label, state in self._job_loads(required=required)
                if state == "LOADING"]

    def _sibling_committed(self, partition: int, attempt: int) -> bool:
        """Another attempt of `partition` was committed already (this attempt lost)."""
        mine = self._label(partition, attempt)
        return any(state == "FINISHED" and label != mine
                   for label, state in self._job_loads(partition, required=False))

    def _label(self, partition: int, attempt: int) -> str:
        return f"{self.opts.label_prefix}_{self.job}_{partition}_{attempt}"

    def _headers(self) -> dict[str, str]:
        headers = {"format": "arrow", "timezone": "UTC"}
        headers.update({k: v for k, v in self.opts.sink_properties.items()
                        if k.lower() not in ("two_phase_commit", "label", "columns")})
        if self.columns:
            headers["columns"] = self.columns
        return headers

    # ---- tasks --------------------------------------------------------------------------
    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        partition = ctx.partitionId() if ctx is not None else 0
        attempt = ctx.attemptNumber() if ctx is not None else 0
        label = self._label(partition, attempt)
        first = next((b for b in iterator if b.num_rows), None)
        if first is None:
            return LoadCommit(-1, label, 0, partition, attempt)
        counter = [0]
        first = _encode_objects(first, self.encoded)
        batches = (_encode_objects(b, self.encoded) for b in iterator if b.num_rows)
        result = rest.stream_load(self.opts, self.target, label,
                                  _ipc_chunks(first, batches, counter), self._headers())
        txn = int(result["TxnId"])
        if self._sibling_committed(partition, attempt):  # a speculative race lost: rows are in
            rest.two_phase(self.opts, self.target, "abort", txn_ids=[txn])
            return LoadCommit(-1, label, 0, partition, attempt)
        return LoadCommit(txn, label, int(result["NumberLoadedRows"]), partition, attempt)

    # ---- driver -------------------------------------------------------------------------
    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        txns = [m.txn_id for m in messages if isinstance(m, LoadCommit) and m.txn_id >= 0]
        if txns:
            done = rest.two_phase(self.opts, self.target, "commit", txn_ids=txns)
            if done.get("status") != "Success":
                self.abort(messages)
                raise rest.ShaleDBError(f"commit of {self.opts.db}.{self.opts.table} failed: "
                                        f"{done.get('msg')}")
        # the losing / failed attempts' precommitted txns (none of them in `messages`)
        winners = {m.label for m in messages if isinstance(m, LoadCommit)}
        for label in self._precommitted_labels(required=False):
            if label not in winners:
                rest.two_phase(self.opts, self.target, "abort", label=label)
        if self.overwrite:
            parts = self.opts.partitions
            named = f" PARTITION ({', '.join(map(quote_ident, parts))})" if parts else ""
            try:  # the staging table is LIKE the target: same columns in the same order
                self._sql(f"INSERT OVERWRITE TABLE {self._ident(self.opts.table)}{named} "
                          f"SELECT * FROM {self._ident(self.staging)}")
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
