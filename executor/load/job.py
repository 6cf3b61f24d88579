"""One load, whatever its source: parsed record batches -> one `LoadTxn`, visible all at
once at commit or not at all (aborted when `max_filter_ratio` is exceeded, when it outlives its
`timeout`, or on any error). A two-phase load (`TxnOptions.two_phase`) ends PRECOMMITTED
instead: written and persisted, published later by `_stream_load_2pc` (storage/txn.py)."""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import pyarrow as pa

from executor.insert import begin
from executor.load.convert import converted_rows
from executor.load.mapping import mapped_rows
from executor.load.prefetch import parsed_ahead, prepared_ahead
from executor.load.sources import CountedStream, record_batches
from executor.load.spec import (
    LoadFailed,
    LoadSpec,
    LoadStats,
    StatsRecord,
    label_exists,
    label_used,
)
from executor.load.txn_options import TxnOptions, timeout_failure
from sql.errors import DorisError
from storage import clock
from storage.engine import StorageEngine
from storage.txn import LabelAlreadyUsed, LoadTxn, SplitBatch

# Parsed blocks are joined to 128K-row batches before conversion and routing: a 1 MB CSV
# block is ~10k rows of SSB lineorder, and the per-batch costs (one cast per column, one take
# per column per tablet) dominated at that size (py-spy, docs/performance.md). 256k-row
# batches raised an SF 1 load's peak RSS from ~870 MB to ~1.1 GB (the 1 GB target; branch
# load13) while every memtable was held to the commit; with early flushes (storage/txn.py)
# 128k rows measured 670-690 MB against 650-660 MB at 64k, and 1.16-1.28 vs 1.25-1.46 us of
# server CPU a row (alternating quiet runs, session 14).
COALESCE_ROWS = 131072
# Threads preparing batches (conversion, routing, the split by tablet) while the load thread
# inserts earlier ones in file order: one load thread left the second core idle about half the
# time (cores busy 1.4-1.6 of 2, the GIL held ~39% of the wall; docs/performance.md).
PREPARE_THREADS = 2
# Batches prepared beyond one per thread: each holds ~50 MB of SSB lineorder in its forms
# (text, converted, split); 2 ahead measured 823-838 MB peak RSS, 0 ahead 703-711 MB, with
# no clear difference in speed (the load is CPU-bound at 1.75 cores busy of 2)
PREPARE_AHEAD = 1


def coalesced(blocks: Iterator[tuple[pa.RecordBatch, StatsRecord]], min_rows: int,
              ) -> Iterator[tuple[pa.RecordBatch, list[tuple[int, StatsRecord]]]]:
    """`blocks` (each with what its reader recorded) joined into batches of at least
    `min_rows` rows (the last may be smaller), each with (the row its block starts at, the
    block's record) of every block in it."""
    held: list[pa.RecordBatch] = []
    records: list[tuple[int, StatsRecord]] = []
    rows = 0
    for rb, record in blocks:
        if held and rb.schema != held[0].schema:  # e.g. JSON blocks typed differently
            yield _joined(held), records
            held, records, rows = [], [], 0
        held.append(rb)
        records.append((rows, record))
        rows += rb.num_rows
        if rows >= min_rows:
            yield _joined(held), records
            held, records, rows = [], [], 0
    if held:
        yield _joined(held), records


def _joined(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(batches) == 1:
        return batches[0]
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


@dataclass
class _Prepared:
    """One parsed batch made ready for insertion on a preparing thread."""

    rows: int  # rows of the parsed batch
    record: StatsRecord  # what parsing, conversion and routing recorded, in row order
    split: SplitBatch | None = None
    error: BaseException | None = None


def _prepare(req: LoadSpec, txn: LoadTxn, now: _dt.datetime, rb: pa.RecordBatch | None,
             blocks: list[tuple[int, StatsRecord]], read_error: Exception | None) -> _Prepared:
    """Convert `rb` to the table's columns, route its rows and cut them by tablet (on a
    preparing thread: nothing here touches the load's stats or memtables). `blocks`: the
    row each of its parsed blocks starts at and what its reader recorded (a reader's reasons
    go before the block's first row). `read_error`: reading the body failed after the batches
    before this one."""
    record = StatsRecord()
    for start, parsed in blocks:
        parsed.apply_to(record, at_row=start)
    if rb is None:
        return _Prepared(0, record, error=read_error)
    out = _Prepared(rb.num_rows, record)
    try:
        batch, positions = (converted_rows if req.mapping is None else mapped_rows)(
            req, rb, record, now)
        if not batch.num_rows:
            return out
        part_idx, buckets = txn.route(batch)
        placed = part_idx >= 0
        if not placed.all():  # Doris filters a row no partition takes
            missed = np.flatnonzero(~placed).tolist()
            for i, nearest in zip(missed, txn.describe_unplaced(batch, missed)):
                values = ", ".join(f"{c}={batch.column(c).value_at(i)!r}"
                                   for c in req.table.partition_info.columns)
                record.filtered(f"Reason: no partition for this tuple. tuple=({values}); "
                                f"{nearest}", i if positions is None else int(positions[i]))
            batch, part_idx, buckets = batch.filter(placed), part_idx[placed], buckets[placed]
        out.split = txn.split(batch, (part_idx, buckets))
    except BaseException as e:  # noqa: BLE001  # raised by the load thread, in file order
        out.error = e
    finally:
        out.record = record.ordered()
    return out


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
    try:
        # a read()-only file-like view of the body: all record_batches reads of a BinaryIO;
        # parsed on a thread of its own, ahead of the preparing threads; what the parser
        # records is handed to the load's stats with the batch it preceded (file order)
        spool = engine.data_dir / "tmp" / "load"
        parse_record = StatsRecord()
        body = parsed_ahead(
            lambda recorder: record_batches(stream, req, recorder,  # type: ignore[arg-type]
                                            spool), parse_record)

        def batches() -> Iterator[tuple[pa.RecordBatch | None, list[tuple[int, StatsRecord]],
                                        Exception | None]]:
            blocks = ((rb, parse_record.handed_over()) for rb in body)
            try:
                for rb, records in coalesced(blocks, COALESCE_ROWS):
                    yield rb, records, None
            except Exception as e:  # noqa: BLE001  # a reader's error, after what it recorded
                yield None, [(0, parse_record.handed_over())], e

        w0 = time.perf_counter()
        with prepared_ahead(lambda item: _prepare(req, txn, now, *item), batches(),
                            PREPARE_THREADS, PREPARE_AHEAD) as prepared:
            for ready in prepared:
                ready.record.apply_to(stats)
                if ready.error is not None:
                    raise ready.error
                if options.expired():
                    raise timeout_failure(options)
                stats.total_rows += ready.rows
                if ready.split is not None and ready.split.num_rows:
                    txn.add_split(ready.split)
                    stats.loaded_rows += ready.split.num_rows
        parse_record.handed_over().apply_to(stats)  # what parsing recorded after the last batch
        stats.total_rows += stats.skipped_rows
        stats.load_bytes = stream.nbytes
        stats.read_data_ms = int(stream.wait_s * 1000)
        # the time the load worked while its body streamed, less what it waited for the body
        stats.write_data_ms = max(0, int((time.perf_counter() - w0 - stream.wait_s) * 1000))
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


