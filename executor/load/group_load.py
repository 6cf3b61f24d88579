"""A Stream Load with `group_commit: sync_mode | async_mode` (Doris 2.1 group commit): its good
rows join the table's open group (storage/group_commit.py), so many small loads into one table
within `group_commit_interval_ms` share one load transaction and one new version.

The file is parsed, converted and checked against `max_filter_ratio` exactly as a normal load
(rows no partition takes are filtered), then handed over as one batch; the call returns once
the group is published, with the group's label and txn id. async_mode waits for the publish
too (as for INSERT: ShaleDB has no write-ahead log to acknowledge from earlier). Group commit
is meant for small loads: the rows are held in memory until the group is written.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Sequence
from typing import BinaryIO

import numpy as np

from executor.load.convert import to_batch
from executor.load.mapping import map_batch
from executor.load.sources import CountedStream, record_batches
from executor.load.spec import LoadFailed, LoadSpec, LoadStats
from executor.load.txn_options import TxnOptions, timeout_failure
from storage import clock
from storage.auto_partition import auto_placeable
from storage.batch import Batch
from storage.engine import StorageEngine
from storage.errors import ShaleError, load_analysis_message
from storage.group_commit import GroupCommitOptions
from storage.partition import PartitionRouter
from storage.txn import LoadTxn


def run_group_commit_load(engine: StorageEngine, req: LoadSpec, raw: BinaryIO,
                          options: TxnOptions) -> tuple[LoadStats, str]:
    """Parse `raw` and load its rows through the table's group commit (blocking).
    Returns the stats and the group's label; raises LoadFailed."""
    stats = LoadStats()
    table = req.table
    parts = engine.catalog.partitions(table.table_id)
    router = PartitionRouter(table, parts)
    allowed = None  # the `partitions` header: rows of other partitions are filtered rows
    if req.partitions:
        wanted = {n.lower() for n in req.partitions}
        allowed = [i for i, p in enumerate(parts) if p.name.lower() in wanted]
    stream = CountedStream(raw)
    now = clock.now()
    good: list[Batch] = []
    try:
        # a read()-only file-like view of the body: all record_batches reads of a BinaryIO
        for rb in record_batches(stream, req, stats,  # type: ignore[arg-type]
                                 engine.data_dir / "tmp" / "load"):
            if options.expired():
                raise timeout_failure(options)
            batch = (to_batch if req.mapping is None else map_batch)(req, rb, stats, now)
            stats.total_rows += rb.num_rows
            if not batch.num_rows:
                continue
            part_idx = router.route(batch)
            if allowed is not None:
                part_idx[~np.isin(part_idx, allowed)] = -1
            placed = part_idx >= 0
            creatable = auto_placeable(table, batch, part_idx) if allowed is None else None
            if creatable is not None:  # AUTO PARTITION: the load adds their partition
                placed |= creatable
            if not placed.all():
                missed = np.flatnonzero(~placed).tolist()
                for i, nearest in zip(missed, router.describe_misses(batch, missed)):
                    values = ", ".join(f"{c}={batch.column(c).value_at(i)!r}"
                                       for c in table.partition_info.columns)
                    stats.filtered(f"Reason: no partition for this tuple. tuple=({values}); "
                                   f"{nearest}")
                batch = batch.filter(placed)
            if batch.num_rows:
                good.append(batch)
    except LoadFailed as e:
        e.stats = stats
        raise
    except Exception as e:  # noqa: BLE001 - a broken upload, bad bytes: the load fails
        failed = LoadFailed(f"[INTERNAL_ERROR]{getattr(e, 'message', None) or e}")
        failed.stats = stats
        raise failed from None
    stats.total_rows += stats.skipped_rows
    stats.load_bytes = stream.nbytes
    stats.read_data_ms = int(stream.wait_s * 1000)
    if stats.total_rows == 0:
        raise _with(LoadFailed("[INTERNAL_ERROR]No valid data to load, please check your data "
                               "and the load parameters"), stats)
    if stats.filtered_rows > req.max_filter_ratio * (stats.total_rows - stats.unselected_rows):
        raise _with(LoadFailed("[DATA_QUALITY_ERROR]too many filtered rows"), stats)
    if not good:
        return stats, ""
    db, c0 = engine.catalog.get_database(req.db), time.perf_counter()
    if db is None:
        raise _with(LoadFailed(load_analysis_message(f"unknown database, database={req.db}")),
                    stats)

    def load(members: Sequence[Batch]) -> tuple[str, int]:
        txn = LoadTxn(engine, db, table, label_prefix="group_commit",
                      source_type="BACKEND_STREAMING")
        for b in members:
            txn.add_batch(b)
        return txn.label, txn.commit().txn_id

    future = engine.group_commit.submit(
        table.table_id, Batch.concat(good) if len(good) > 1 else good[0],
        GroupCommitOptions.for_table(table), load)
    try:
        result = future.result(timeout=max(0.0, options.remaining()))
    except concurrent.futures.TimeoutError:
        raise _with(timeout_failure(options), stats) from None
    except ShaleError as e:
        raise _with(LoadFailed(f"[INTERNAL_ERROR]{e.message}"), stats) from None
    stats.loaded_rows = result.rows
    stats.txn_id = result.txn_id
    stats.commit_ms = int((time.perf_counter() - c0) * 1000)
    return stats, result.label


def _with(failed: LoadFailed, stats: LoadStats) -> LoadFailed:
    failed.stats = stats
    return failed
