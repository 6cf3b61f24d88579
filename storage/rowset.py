"""RowsetWriter: turns the rows one load sends to one tablet into a rowset's segment files.

A rowset is the unit a load adds to a tablet. The writer buffers rows in a `MemTable`, which
sorts them by the index's key columns and pre-aggregates them per the data model. Memory is
bounded: once the memtable holds `write_buffer_size` bytes (Doris be.conf `write_buffer_size`)
the writer flushes it right away as the next segment and starts an empty one; `build()` flushes
what is left. Each flush is one key-sorted run (keys unique inside it for AGGREGATE/UNIQUE):
- a rowset written by ONE flush is NONOVERLAPPING (`segments_overlap=False`): that run is cut
  into segments of about `SEGMENT_ROWS` rows, consecutive pieces of one run, and the reader
  treats the whole rowset as one run;
- a rowset written by several flushes is OVERLAPPING (`segments_overlap=True`): every flush
  writes exactly ONE segment however many rows it holds, so each segment is a run and seg_no
  order is load order; the reader merges those runs the way it merges rowsets.
One segment per flush keeps the run boundaries in the file list itself (as Doris does, and as
`RowsetMeta.compaction_score` counts them) rather than in a second list in the catalog; the cost
is that a flush of a large buffer makes one large segment, which the page indexes handle.

When `STREAM_ROWS` is set (off by default, see there), rows that arrive in key order are
encoded while the load runs (DUPLICATE indexes without a
sequence column: Spark's range partitions, a file loaded sorted): once the memtable holds
`STREAM_ROWS` rows that arrived in key order after the rows taken before, they go to a
`SegmentStream`, which encodes their data pages at once and keeps them (compressed) in memory,
so `build()` (a two-phase load's precommit, after the body's last byte) only encodes the last
rows, writes and fsyncs. The file is the one a single flush at `build()` would write, so the
rowset stays NONOVERLAPPING (a stream reaching `segment_rows` rows is cut there into the next
segment of the same run). Rows that arrive out of key order end streaming for the writer: a
memtable with rows not in order is never streamed (it flushes as before); rows that break the
order after some were streamed make the streamed rows one run (segment) and the rest later
runs, an OVERLAPPING rowset, as memtable flushes do.

The rowset gets its version only when the load publishes (`storage.txn`), so files are written
before the version is known and stay invisible until the catalog records them. `discard()`
deletes them when the load gives up; files of a process that died are removed by the engine's
garbage collection at the next start.
Upstream: Doris `RowsetWriter` / `BetaRowsetWriter`, `MemTable`, `MemTableWriter::flush`.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from storage.batch import Batch
from storage.catalog.meta import MaterializedIndexMeta, RowsetMeta, TableMeta
from storage.compaction.config import CompactionConfig
from storage.indexes.spec import index_spec_of, spec_signature
from storage.memtable import MemTable
from storage.segment import write_segment
from storage.segment.writer import SegmentInfo, SegmentStream

SEGMENT_ROWS = 1 << 20
# Rows an in-order memtable gathers before they are encoded; 0 turns streaming off, the
# default: through Spark on the shared 2-core machine streaming did not make the write faster
# (it moves the encoding onto the load thread while the body arrives, where it competes with
# Spark's tasks for the cores: docs/performance.md, branch spark18), so it is off until a
# quiet machine says otherwise. Tests turn it on.
STREAM_ROWS = 0
# Streamed batches averaging fewer rows are concatenated first (each append costs a few calls
# per column; a copy of the rows costs less than that for small batches of wide tables).
_PIECE_ROWS = 4096


def segment_path(tablet_id: int, rowset_id: str, seg_no: int) -> str:
    """Path of a segment relative to the backend's storage root."""
    return f"data/{tablet_id}/{rowset_id}_{seg_no}.seg"


class RowsetWriter:
    """Collects batches (the index's columns) for one tablet, flushing a segment whenever the
    memtable reaches `write_buffer_size` bytes (None: the CompactionConfig default);
    `build()` flushes the rest and returns the rowset's meta (version 0 until published)."""

    def __init__(
        self, root: Path, tablet_id: int, rowset_id: str, index: MaterializedIndexMeta,
        table: TableMeta, segment_rows: int | None = None, write_buffer_size: int | None = None,
    ) -> None:
        self._root = root
        self._tablet_id = tablet_id
        self._rowset_id = rowset_id
        self._index = index
        self._memtable = MemTable(table, index)
        self._index_spec = index_spec_of(table, index)
        self._segment_rows = segment_rows or SEGMENT_ROWS
        self.write_buffer_size = write_buffer_size or CompactionConfig().write_buffer_size
        self._received = 0
        self._files: list[str] = []
        self._size = 0
        self._rows = 0  # rows written to segments (after pre-aggregation)
        self._flushes = 0  # flushes that wrote rows: more than one makes the rowset OVERLAPPING
        # discard() may run on another thread than a flush (an abort while the load's commit is
        # writing): the lock keeps a file from being added after the discard listed them.
        self._lock = threading.Lock()
        self._discarded = False
        # Streaming (module docstring): taking rows from the memtable and appending them must
        # be one step per writer (a flush on the load's flush pool may race the load thread).
        self._stream_lock = threading.Lock()
        self._streaming = STREAM_ROWS > 0 and self._memtable.streams and \
            SegmentStream.supports(index.columns, self._index_spec)
        self._stream: SegmentStream | None = None
        self._stream_last: Batch | None = None  # the last row streamed (order check)

    def add_batch(self, batch: Batch) -> None:
        self._memtable.insert(batch)
        self._received += batch.num_rows
        if self.buffered_bytes >= self.write_buffer_size:
            self.flush()
        elif self._streaming and self._memtable.num_rows >= STREAM_ROWS:
            with self._stream_lock:
                self._stream_in_order()

    def _stream_in_order(self) -> bool:
        """Stream the memtable's rows if they continue the run (True); else end streaming."""
        if not self._streaming:
            return False
        if not self._memtable.num_rows:
            return True
        pieces = self._memtable.take_in_order(self._stream_last)
        if pieces is None:
            self._streaming = False
            return False
        if len(pieces) > 1 and sum(p.num_rows for p in pieces) < _PIECE_ROWS * len(pieces):
            pieces = [Batch.concat(pieces)]  # small pieces: one append (per-append costs)
        for run in pieces:
            if self._stream is None:
                if self._stream_last is None:  # the run's first rows: one flush, however cut
                    with self._lock:
                        self._flushes += 1
                self._stream = SegmentStream(run.names, run.types, self._index.keys,
                                             self._index.short_key_column_count,
                                             self._index_spec)
            self._stream.append(run)
            self._stream_last = run.take(np.array([run.num_rows - 1]))  # a copy, not a view
            if self._stream.num_rows >= self._segment_rows:
                self._finish_stream()  # the next rows of the run go to the next segment
        return True

    def _finish_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            self._write_file(stream.finish)

    @property
    def num_rows(self) -> int:
        """Rows received (before pre-aggregation)."""
        return self._received

    @property
    def buffered_rows(self) -> int:
        """Rows waiting in the memtable (not yet flushed or streamed)."""
        return self._memtable.num_rows

    @property
    def keeps_every_row(self) -> bool:
        """Whether the index keeps every row as it is (DUPLICATE, no sequence column): its
        runs need no merge to drop or combine rows, so splitting a load into runs costs a
        reader little (storage/txn.py flushes such memtables early)."""
        return self._memtable.streams

    @property
    def buffered_bytes(self) -> int:
        """Bytes held in the memtable now (see MemTable.nbytes) and in the streamed rows'
        encoded pages not yet written."""
        stream = self._stream
        return self._memtable.nbytes + (0 if stream is None else stream.nbytes)

    @property
    def num_flushes(self) -> int:
        """Flushes that wrote a segment so far."""
        return self._flushes

    def flush(self) -> None:
        """Write the memtable now as the next segment (one sorted run) and empty it (rows
        continuing a streamed run are appended to it, and that segment is written: the
        next one continues the same run)."""
        with self._stream_lock:
            self._stream_in_order()
            self._finish_stream()  # rows out of order: the streamed rows end their run
            run = self._memtable.flush()
            if run is not None and run.num_rows:
                self._write(run, run.num_rows)
                with self._lock:  # a load may flush one writer from two threads (txn.py)
                    self._flushes += 1

    def build(self) -> RowsetMeta:
        with self._stream_lock:
            if self._stream_last is not None and self._stream_in_order():
                self._finish_stream()
            self._finish_stream()  # rows out of order: the streamed rows end their run
            run = self._memtable.flush()
            if run is not None and run.num_rows:
                # The only run of the rowset may be cut anywhere; once another flush wrote a
                # segment, a segment must be a whole run.
                self._write(run, self._segment_rows if self._flushes == 0 else run.num_rows)
                self._flushes += 1
        return RowsetMeta(
            rowset_id=self._rowset_id,
            tablet_id=self._tablet_id,
            start_version=0,
            end_version=0,
            num_rows=self._rows,
            data_size=self._size,
            files=tuple(self._files),
            create_time=time.time(),
            segments_overlap=self._flushes > 1,
            index_spec=spec_signature(self._index_spec),
        )

    def _write(self, run: Batch, piece_rows: int) -> None:
        rows = run.num_rows
        for start in range(0, rows, piece_rows):
            self._write_file(functools.partial(
                write_segment, batch=run.slice(start, min(rows, start + piece_rows)),
                key_columns=self._index.keys,
                short_key_columns=self._index.short_key_column_count,
                indexes=self._index_spec))

    def _write_file(self, write: Callable[[Path], SegmentInfo]) -> None:
        """The next segment file, written by `write(path)`, recorded in the rowset."""
        with self._lock:
            self._check_live()
            rel = segment_path(self._tablet_id, self._rowset_id, len(self._files))
            self._files.append(rel)
        try:
            info = write(self._root / rel)
        except BaseException:
            with self._lock:  # the atomic write left no file behind
                self._files.remove(rel)
            raise
        with self._lock:
            if self._discarded:  # discarded while this file was being written
                (self._root / rel).unlink(missing_ok=True)
            self._check_live()
            self._size += info.size
            self._rows += info.num_rows

    def _check_live(self) -> None:
        if self._discarded:
            raise RuntimeError(f"rowset {self._rowset_id} was discarded")

    def discard(self) -> None:
        """Delete the segments written so far: the load gave up and will never publish them.
        A flush running meanwhile deletes its own file and fails, as do later flushes."""
        with self._lock:
            self._discarded = True
            files = list(self._files)
        for rel in files:
            try:
                os.unlink(self._root / rel)
            except FileNotFoundError:
                pass
