"""One load, whatever its source: parsed record batches -> one `LoadTxn`, visible all at
once at commit or not at all (aborted when `max_filter_ratio` is exceeded, when it outlives its
`timeout`, or on any error). A two-phase load (`TxnOptions.two_phase`) ends PRECOMMITTED
instead: written and persisted, published later by `_stream_load_2pc` (storage/txn.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np
import pyarrow as pa

from executor.insert import begin
from executor.load.convert import to_batch
from executor.load.mapping import map_batch
from executor.load.prefetch import parsed_ahead
from executor.load.sources import CountedStream, record_batches
from executor.load.spec import LoadFailed, LoadSpec, LoadStats, label_exists, label_used
from executor.load.txn_options import TxnOptions, timeout_failure
from sql.errors import DorisError
from storage import clock
from storage.engine import StorageEngine
from storage.txn import LabelAlreadyUsed

# Parsed blocks are joined to 128K-row batches before conversion and routing: a 1 MB CSV
# block is ~10k rows of SSB lineorder, and the per-batch costs (one cast per column, one take
# per column per tablet) dominated at that size (py-spy, docs/performance.md). 256k-row
# batches raised an SF 1 load's peak RSS from ~870 MB to ~1.1 GB (the 1 GB target; branch
# load13) while every memtable was held to the commit; with early flushes (storage/txn.py)
# 128k rows measured 670-690 MB against 650-660 MB at 64k, and 1.16-1.28 vs 1.25-1.46 us of
# server CPU a row (alternating quiet runs, session 14).
COALESCE_ROWS = 131072


def coalesced(batches: Iterator[pa.RecordBatch], min_rows: int) -> Iterator[pa.RecordBatch]:
    """`batches` joined into batches of at least `min_rows` rows (the last may be smaller)."""
    held: list[pa.RecordBatch] = []
    rows = 0
    for rb in batches:
        if held and rb.schema != held[0].schema:  # e.g. JSON blocks typed differently
            yield _joined(held)
            held, rows = [], 0
        held.append(rb)
        rows += rb.num_rows
        if rows >= min_rows:
            yield _joined(held)
            held, rows = [], 0
    if held:
        yield _joined(held)


def _joined(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(batches) == 1:
        return batches[0]
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


def run_load(engine: StorageEngine, req: LoadSpec, raw: BinaryIO,
             options: TxnOptions | None = None, source_type: str = "BACKEND_STREAMING",
             ) -> LoadStats:
    """Parse `raw` and load it in one transaction (blocking: run it on a worker thread).
    Raises LoadFailed (with the stats so far) after aborting the transaction."""
    options = options or TxnOptions()
    stats = LoadStats()
    t0 = time.perf_counter()
    try:
        txn = begin(engine, req.db, req.table, req.label, req.partitions)
        txn.source_type = source_type
    except LabelAlreadyUsed as e:
        raise label_used(req.label, e) from None
    except DorisError as e:
        raise LoadFailed(f"[ANALYSIS_ERROR]TStatus: {e.message}") from None
    holder = engine.txns.label_holder(txn.db.db_id, txn.label)
    if holder is not None and holder != txn.txn_id:  # a concurrent retry began first
        txn.abort()
        raise label_exists(req.label, holder, existing="RUNNING")
    stats.txn_id = txn.txn_id
    stats.begin_txn_ms = int((time.perf_counter() - t0) * 1000)
    stream = CountedStream(raw)
    now = clock.now()
    write_s = 0.0
    try:
        # a read()-only file-like view of the body: all record_batches reads of a BinaryIO;
        # parsed on a thread of its own, ahead of the conversion and routing here
        spool = engine.data_dir / "tmp" / "load"
        body = parsed_ahead(
            lambda recorder: record_batches(stream, req, recorder,  # type: ignore[arg-type]
                                            spool), stats)
        for rb in coalesced(body, COALESCE_ROWS):
            if options.expired():
                raise timeout_failure(options)
            w0 = time.perf_counter()
            batch = (to_batch if req.mapping is None else map_batch)(req, rb, stats, now)
            stats.total_rows += rb.num_rows
            if not batch.num_rows:
                continue
            part_idx, buckets = txn.route(batch)
            placed = part_idx >= 0
            if not placed.all():  # Doris filters a row no partition takes
                missed = np.flatnonzero(~placed).tolist()
                for i, nearest in zip(missed, txn.describe_unplaced(batch, missed)):
                    values = ", ".join(f"{c}={batch.column(c).value_at(i)!r}"
                                       for c in req.table.partition_info.columns)
                    stats.filtered(f"Reason: no partition for this tuple. tuple=({values}); "
                                   f"{nearest}")
                batch, part_idx, buckets = batch.filter(placed), part_idx[placed], buckets[placed]
            txn.add_batch(batch, (part_idx, buckets))
            stats.loaded_rows += batch.num_rows
            write_s += time.perf_counter() - w0
        stats.total_rows += stats.skipped_rows
        stats.load_bytes = stream.nbytes
        stats.read_data_ms = int(stream.wait_s * 1000)
        stats.write_data_ms = int(write_s * 1000)
        if stats.total_rows == 0:
            raise LoadFailed("[INTERNAL_ERROR]No valid data to load, please check your data "
                             "and the load parameters")
        # Doris: the ratio is of the rows `where` kept (unselected rows are no errors)
        if stats.filtered_rows > req.max_filter_ratio * (stats.total_rows - stats.unselected_rows):
            raise LoadFailed("[DATA_QUALITY_ERROR]too many filtered rows")
        if options.expired():
            raise timeout_failure(options)
        c0 = time.perf_counter()
        if options.two_phase:
            txn.precommit(options.timeout_s * 1000)  # the load's timeout, for SHOW TRANSACTION
        else:
            txn.commit()
        stats.commit_ms = int((time.perf_counter() - c0) * 1000)
        return stats
    except BaseException as e:
        txn.abort()
        if isinstance(e, LoadFailed):
            e.stats = stats
            raise
        if isinstance(e, pa.ArrowInvalid):
            failed = LoadFailed(f"[DATA_QUALITY_ERROR]{e}")
        elif isinstance(e, LabelAlreadyUsed):  # a concurrent load took the label first
            failed = label_used(req.label, e)
        elif isinstance(e, Exception):  # a DorisError of the load, a broken upload, ...
            failed = LoadFailed(f"[INTERNAL_ERROR]{getattr(e, 'message', None) or e}")
        else:
            raise
        failed.stats = stats
        raise failed from None


