"""One compaction task: merge a tablet's input rowsets into one rowset and swap it in.

The inputs are read through the same `TabletReader` queries use, so rows merge by the data
model exactly as merge-on-read does (seed 002 3.4): AGGREGATE keys combine by their aggregation
types, UNIQUE keys keep the newest row (or the largest sequence value), DUPLICATE rows are
merge-sorted by key. Delete versions among the inputs (base and full compaction only; the
cumulative policy never hands them in) are applied while reading, so their rows are dropped
physically; delete versions above the inputs stay versions and keep hiding the output's rows.

The output is written as NONOVERLAPPING segments (fsynced, atomically renamed) under a fresh
rowset id, invisible until `swap` replaces the inputs with it in ONE catalog transaction. The
swap first checks that the tablet and every input are still there (a DROP, TRUNCATE or INSERT
OVERWRITE may have removed them); otherwise the output files are deleted and nothing changes.
A crash before the swap leaves unreferenced output files, after it unreferenced input files:
both are removed by the engine's start-up garbage collection. The replaced inputs become stale
(`stale.py`) so queries pinned to older versions still read them.
Fault points (storage/faults.py): `compaction_after_first_segment`, `compaction_before_swap`,
`compaction_after_swap`.
Upstream: Doris `Compaction::do_compaction` / `merge_input_rowsets` / `modify_rowsets`.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from storage.batch import Batch
from storage.catalog.meta import RowsetMeta, TabletMeta
from storage.catalog.repository import Mutation
from storage.engine import StorageEngine
from storage.faults import fault_point
from storage.indexes.spec import index_spec_of, spec_signature
from storage.predicates import ReadOptions
from storage.reader import TabletReader
from storage.rowset import SEGMENT_ROWS, segment_path
from storage.segment import write_segment

MERGE_BATCH_ROWS = 65536


@dataclass(frozen=True, slots=True)
class MergeResult:
    output: RowsetMeta
    input_rows: int
    input_bytes: int
    seconds: float


def merge_rowsets(engine: StorageEngine, tablet: TabletMeta, inputs: Sequence[RowsetMeta],
                  throttle: Callable[[], None] = lambda: None,
                  segment_rows: int = SEGMENT_ROWS) -> MergeResult | None:
    """Write the merged rows of `inputs` (rowsets of `tablet`, version order; a virtual
    initial rowset with an empty id is ignored) as a new rowset covering their whole version
    range. Returns None when the tablet's table or index is gone."""
    started = time.perf_counter()
    found = engine.table_and_index(tablet)
    if found is None:
        return None
    table, index = found
    real = [r for r in inputs if r.rowset_id]
    start = min(r.start_version for r in inputs)
    end = max(r.end_version for r in inputs)
    root = engine.backend_root(tablet.backend_id)
    index_spec = index_spec_of(table, index)
    rowset_id = f"c{uuid.uuid4().hex}"
    reader = TabletReader(root, table, index, real,
                          ReadOptions(columns=index.columns, batch_size=MERGE_BATCH_ROWS),
                          sort_duplicates=True)
    files: list[str] = []
    size = rows = 0
    pending: list[Batch] = []
    pending_rows = 0

    def flush() -> None:
        nonlocal size, rows, pending, pending_rows
        if not pending_rows:
            return
        batch = Batch.concat(pending) if len(pending) > 1 else pending[0]
        rel = segment_path(tablet.tablet_id, rowset_id, len(files))
        info = write_segment(root / rel, batch, key_columns=index.keys,
                             short_key_columns=index.short_key_column_count,
                             indexes=index_spec)
        files.append(rel)
        size += info.size
        rows += batch.num_rows
        pending, pending_rows = [], 0
        if len(files) == 1:
            fault_point("compaction_after_first_segment")

    try:
        for batch in reader:
            if batch.num_rows:
                pending.append(batch)
                pending_rows += batch.num_rows
                if pending_rows >= segment_rows:
                    flush()
            throttle()
        flush()
    except BaseException:
        remove_files(root, files)
        raise
    output = RowsetMeta(
        rowset_id=rowset_id, tablet_id=tablet.tablet_id, start_version=start, end_version=end,
        num_rows=rows, data_size=size, files=tuple(files), create_time=time.time(),
        segments_overlap=False, index_spec=spec_signature(index_spec),
    )
    return MergeResult(output, sum(r.num_rows for r in real), sum(r.data_size for r in real),
                       time.perf_counter() - started)


def remove_files(root: Path, files: Sequence[str]) -> None:
    for rel in files:
        try:
            os.unlink(root / rel)
        except FileNotFoundError:
            pass


def swap(engine: StorageEngine, tablet: TabletMeta, inputs: Sequence[RowsetMeta],
         output: RowsetMeta) -> bool:
    """Replace `inputs` by `output` in one catalog transaction. False (and the output's files
    deleted) when the tablet moved or vanished or an input is no longer live."""
    cat = engine.catalog
    real = [r for r in inputs if r.rowset_id]
    root = engine.backend_root(tablet.backend_id)
    fault_point("compaction_before_swap")
    with cat.lock:
        now = next((t for t in cat.tablets(tablet.table_id, tablet.partition_id, tablet.index_id)
                    if t.tablet_id == tablet.tablet_id), None)
        live = {r.rowset_id for r in cat.rowsets(tablet.tablet_id)}
        ok = (now is not None and now.backend_id == tablet.backend_id
              and all(r.rowset_id in live for r in real))
        if ok:
            m = Mutation()
            for r in real:
                m.delete(r)
            m.put(output)
            cat.commit(m)
    if not ok:
        remove_files(root, output.files)
        return False
    fault_point("compaction_after_swap")
    engine.stale_rowsets.retire(root, real, output)
    return True
