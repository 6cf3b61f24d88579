"""Point lookups on a short-key prefix: the rows of one tablet at one version whose leading key
columns equal given values, read without a TabletReader / SegmentIterator.

Doris serves its short-circuit point queries from a per-tablet lookup (the primary-key index
of merge-on-write tables, or a row store) instead of a scan. Here the same work a scan would
do for `k = v` (short-key seek, read the block of rows found, filter, merge) is done with the
per-scan set-up taken out:
- a `TabletPlan` per (backend root, tablet, index, visible rowsets, table schema) keeps what a
  scan re-derives every time: the rowsets as sorted runs in merge order (an OVERLAPPING
  rowset's segments are runs of their own), each segment's cached metadata (footer, ordinal
  and short-key indexes), column types, the merge spec and the delete versions' conditions.
  Rowsets never change once published, so a plan is invalidated by construction: a new load
  version, a compaction or a schema change gives another key (LRU of `PLANS_CACHED` plans);
- per segment, the sparse short-key entries are binary searched, then the one block each
  bound falls in is binary searched row by row on the key columns' decoded pages (from the
  engine's page cache, kept for the lookup), then only the pages holding the rows found are
  read for each needed column;
- rows are filtered by every predicate exactly (the short key is a superset), DUPLICATE rows
  are concatenated run by run, AGGREGATE / UNIQUE rows are merged with `storage.merge.combine`
  in run order (newest wins for REPLACE, the sequence column when there is one), and delete
  versions hide the rows of lower versions, as `storage/reader.py` does.

`lookup` answers None whenever it does not apply (no equality on the leading short-key column,
a segment without a short key or with a converted key column, a delete version naming a value
column of a merging table, a key range wider than `MAX_LOOKUP_ROWS` rows): the caller then
reads the tablet with a TabletReader, which is always right.
"""

from __future__ import annotations

import bisect
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING

import numpy as np

from storage.batch import Batch, Column
from storage.catalog.meta import MaterializedIndexMeta, RowsetMeta, TableMeta, TabletMeta
from storage.catalog.mv import index_table
from storage.indexes.short_key import (
    KeyPart,
    KeyRange,
    ShortKeyIndex,
    encode_component,
    key_ranges,
)
from storage.merge import MergeSpec, combine
from storage.page_cache import PageCache
from storage.predicates import ColumnPredicate, evaluate
from storage.segment import SegmentReader
from storage.segment.meta_cache import SEGMENT_META_CACHE, SegmentMeta
from storage.segment.reader import ColumnInfo
from storage.types import DataType

if TYPE_CHECKING:
    from storage.engine import StorageEngine
    from storage.scan_stats import ScanStats

PLANS_CACHED = 4096  # tablet plans kept (a few hundred bytes each, plus shared segment metadata)
# A key range of more rows than this (a DUPLICATE key repeated many times) is a scan, not a
# lookup: the TabletReader streams it in batches instead of one Batch here.
MAX_LOOKUP_ROWS = 4096
# Candidate blocks tested vectorised before the bounds are narrowed row by row instead.
CANDIDATE_BLOCKS = 4

Conditions = tuple[ColumnPredicate, ...]


@dataclass(frozen=True, slots=True)
class _Segment:
    path: str
    meta: SegmentMeta
    # lower-case column -> its pages' first rows (and the row count at the end), as a list:
    # bisect on it costs less than numpy's searchsorted on a few dozen values
    page_starts: dict[str, list[int]] = field(default_factory=dict, compare=False)


@dataclass(frozen=True, slots=True)
class _Run:
    """One sorted run in merge order: a rowset, or one segment of an OVERLAPPING rowset."""

    end_version: int
    segments: tuple[_Segment, ...]


@dataclass(frozen=True, slots=True)
class TabletPlan:
    """What a lookup in one tablet at one set of visible rowsets needs (see the module doc)."""

    table: TableMeta  # the table as planned: another TableMeta (schema change) is another plan
    tablet_id: int
    names: dict[str, str]  # lower-case name -> the index's spelling
    types: dict[str, DataType]  # lower-case name -> type read as
    keys: frozenset[str]  # lower-case key columns of the index
    spec: MergeSpec
    runs: tuple[_Run, ...]
    deletes: tuple[tuple[int, Conditions], ...]  # (delete version, its conditions), oldest first
    delete_columns: frozenset[str]  # as the index spells them


class _PlanCache:
    """LRU of TabletPlans, shared by the sessions of a process (lookups run on any thread)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._plans: OrderedDict[tuple[object, ...], TabletPlan] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[object, ...]) -> TabletPlan | None:
        with self._lock:
            plan = self._plans.get(key)
            if plan is not None:
                self._plans.move_to_end(key)
            return plan

    def put(self, key: tuple[object, ...], plan: TabletPlan) -> None:
        with self._lock:
            self._plans[key] = plan
            while len(self._plans) > self.capacity:
                self._plans.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._plans.clear()

    def __len__(self) -> int:
        return len(self._plans)


PLANS = _PlanCache(PLANS_CACHED)


def lookup(engine: StorageEngine, tablet: TabletMeta, version: int, columns: Sequence[str],
           predicates: Sequence[ColumnPredicate], stats: ScanStats | None = None
           ) -> Batch | None:
    """The rows of `tablet` at `version` satisfying every predicate (`columns`, named as
    given), as one Batch (possibly empty); None when a point lookup does not apply and the
    caller must read the tablet with a TabletReader."""
    if not predicates or any(p.op != "=" or len(p.values) != 1 for p in predicates):
        return None
    found = engine.table_and_index(tablet)
    if found is None:
        return None
    table, index = found
    root = engine.backend_root(tablet.backend_id)
    rowsets = engine.rowsets_at(tablet.tablet_id, version)
    plan = tablet_plan(root, table, index, tablet.tablet_id, rowsets)
    if plan is None:
        return None
    return read(plan, columns, predicates, engine.page_cache, stats)


def tablet_plan(root: str | os.PathLike[str], table: TableMeta, index: MaterializedIndexMeta,
                tablet_id: int, rowsets: Sequence[RowsetMeta]) -> TabletPlan | None:
    """The cached plan of these rowsets (built on first use); None when some delete version
    names a value column of a merging table (such deletes apply to merged rows: the reader's
    epoch merge answers)."""
    base = os.path.join(os.path.normpath(os.fspath(root)), "")
    key = (base, tablet_id, index.index_id, tuple(r.rowset_id for r in rowsets), id(table))
    plan = PLANS.get(key)
    if plan is not None and plan.table is table:
        return plan
    plan = _build_plan(base, table, index, tablet_id, rowsets)
    if plan is not None:
        PLANS.put(key, plan)
    return plan


def _build_plan(base: str, table: TableMeta, index: MaterializedIndexMeta, tablet_id: int,
                rowsets: Sequence[RowsetMeta]) -> TabletPlan | None:
    schema = index_table(table, index)
    names = {c.lower(): c for c in index.columns}
    types = {c.name.lower(): c.type for c in schema.columns if c.name.lower() in names}
    spec = MergeSpec.of(table, index)
    keys = frozenset(k.lower() for k in index.keys)
    ordered = sorted(rowsets, key=attrgetter("start_version", "end_version"))
    deletes = []
    for r in ordered:
        if r.delete_predicates:
            conds = tuple(ColumnPredicate(names.get(c.column.lower(), c.column), c.op,
                                          tuple(c.values)) for c in r.delete_predicates)
            if any(p.column.lower() not in names for p in conds):
                return None  # a column the index lacks: the reader reports it
            deletes.append((r.start_version, conds))
    delete_columns = frozenset(p.column for _, conds in deletes for p in conds)
    if spec.merges and any(c.lower() not in keys for c in delete_columns):
        return None
    runs = []
    for r in ordered:
        if not r.files:
            continue
        segments = tuple(_Segment(base + rel, _segment_meta(base + rel, types, tablet_id))
                         for rel in r.files)
        if r.segments_overlap and len(segments) > 1:
            runs += [_Run(r.end_version, (s,)) for s in segments]
        else:
            runs.append(_Run(r.end_version, segments))
    return TabletPlan(table, tablet_id, names, types, keys, spec, tuple(runs), tuple(deletes),
                      delete_columns)


def _segment_meta(path: str, types: dict[str, DataType], tablet_id: int) -> SegmentMeta:
    meta = SEGMENT_META_CACHE.latest(path)
    if meta is None:  # not cached yet: opening the file validates and caches its metadata
        with SegmentReader(path, types, tablet_id=tablet_id) as reader:
            meta = reader.meta
    return meta


def read(plan: TabletPlan, columns: Sequence[str], predicates: Sequence[ColumnPredicate],
         page_cache: PageCache | None, stats: ScanStats | None = None) -> Batch | None:
    """The lookup itself on a plan (see `lookup`)."""
    names = plan.names
    try:
        requested = [names[c.lower()] for c in columns]
        preds = tuple(ColumnPredicate(names[p.column.lower()], p.op, p.values)
                      for p in predicates)
    except KeyError:
        return None  # an unknown column: the reader raises the error users see
    merges = plan.spec.merges
    # Merging tables filter by key columns before the merge (a key predicate holds for every
    # row of a key or none) and by value columns after it, as the reader does.
    before = tuple(p for p in preds if p.column.lower() in plan.keys) if merges else preds
    after = tuple(p for p in preds if p.column.lower() not in plan.keys) if merges else ()
    if not before:
        return None
    need = set(requested) | {p.column for p in preds} | plan.delete_columns
    if merges:
        need |= set(plan.spec.columns_needed())
    read_cols = [c for c in names.values() if c in need]  # storage order
    by_column: dict[str, list[ColumnPredicate]] = {}
    for p in before:
        by_column.setdefault(p.column.lower(), []).append(p)

    pieces: list[Batch] = []
    owners: list[int] = []
    total = 0
    ranges: dict[tuple[KeyPart, ...], list[KeyRange] | None] = {}  # per prefix layout
    try:
        for run_no, run in enumerate(plan.runs):
            deletes = [conds for version, conds in plan.deletes if version > run.end_version]
            for seg in run.segments:
                found = _segment_rows(seg, plan, read_cols, before, by_column, ranges,
                                      page_cache, stats)
                if found is not None and deletes:
                    found = _without_deleted(found, deletes)
                if found is not None and found.num_rows:
                    total += found.num_rows
                    if total > MAX_LOOKUP_ROWS:
                        return None
                    pieces.append(found)
                    owners.append(run_no)
    except _NotALookup:
        return None
    out_names = tuple(columns)
    if not pieces:
        return Batch(out_names, tuple(Column.from_physical(plan.types[c.lower()], [])
                                      for c in requested))
    batch = Batch.concat(pieces) if len(pieces) > 1 else pieces[0]
    if merges and len(pieces) > 1:
        arrival = np.repeat(np.asarray(owners, np.int64), [b.num_rows for b in pieces])
        batch = combine(batch, plan.spec, arrival)
    if after:
        keep = _matches(batch, after)
        if keep is not None:
            batch = batch.filter(keep)
    if stats is not None:
        stats.rows_returned += batch.num_rows
    return batch.select(requested).rename(out_names)


def _matches(batch: Batch, preds: Conditions) -> np.ndarray | None:
    """Mask of the rows satisfying every predicate; None when all do."""
    keep = None
    for p in preds:
        hit = evaluate(p, batch.column(p.column))
        keep = hit if keep is None else keep & hit
    if keep is None or keep.all():
        return None
    return keep


def _without_deleted(batch: Batch, deletes: Sequence[Conditions]) -> Batch:
    keep = np.ones(batch.num_rows, np.bool_)
    for conds in deletes:
        hit = np.ones(batch.num_rows, np.bool_)
        for p in conds:
            hit &= evaluate(p, batch.column(p.column))
        keep &= ~hit
    return batch if keep.all() else batch.filter(keep)


class _KeyProbe:
    """K(row) of one segment's rows for the in-block binary search: the key columns' pages
    come from the page cache once per lookup, values are read in place (no slicing)."""

    def __init__(self, reader: SegmentReader, parts: Sequence[KeyPart],
                 infos: Sequence[ColumnInfo], stats: ScanStats | None) -> None:
        self._reader = reader
        self._parts = parts
        self._infos = infos
        self._stats = stats
        self._firsts = [reader.ordinal(i, stats).first_rows.tolist() for i in infos]
        self._pages: dict[tuple[int, int], Column] = {}
        self._limit = sum(p.width + 1 for p in parts)

    def __call__(self, row: int) -> bytes:
        pieces = []
        for n, (part, info) in enumerate(zip(self._parts, self._infos)):
            firsts = self._firsts[n]
            page = bisect.bisect_right(firsts, row) - 1
            col = self._pages.get((n, page))
            if col is None:
                col = self._pages[(n, page)] = self._reader.read_page(info, page, self._stats)
            local = row - firsts[page]
            value: object
            if col.validity is not None and not col.validity[local]:
                value = None
            elif col.offsets is not None:
                value = col.data[col.offsets[local]:col.offsets[local + 1]].tobytes()
            else:
                value = col.data[local]
            pieces.append(encode_component(part, value))
        return b"".join(pieces)[:self._limit]


class _NotALookup(Exception):
    """A segment the lookup cannot serve (see the module doc): the caller scans instead."""


def _segment_rows(seg: _Segment, plan: TabletPlan, read_cols: Sequence[str],
                  preds: Conditions, by_column: dict[str, list[ColumnPredicate]],
                  ranges: dict[tuple[KeyPart, ...], list[KeyRange] | None],
                  page_cache: PageCache | None, stats: ScanStats | None) -> Batch | None:
    """The rows of one segment satisfying `preds` (`read_cols`), None when there are none.

    The sparse short-key entries bound the candidate rows to whole blocks (the block before
    the first entry at or above the key, up to the first entry above it); the predicate
    columns of those rows are tested at once (vectorised), and the other columns are read for
    the rows found only. Only when the candidates are many blocks (a key repeated across
    blocks, or a prefix of a string key) are the bounds narrowed row by row first."""
    meta = seg.meta
    if meta.num_rows == 0:
        return None
    if meta.footer.short_key is None:
        raise _NotALookup()
    with SegmentReader(seg.path, plan.types, plan.tablet_id, published=meta,
                       page_cache=page_cache) as reader:
        sk = reader.short_key(stats)
        if sk is None:
            raise _NotALookup()
        parts, index = sk
        layout = tuple(parts)
        if layout not in ranges:
            ranges[layout] = key_ranges(parts, by_column)
        key_range = ranges[layout]
        if key_range is None:
            raise _NotALookup()  # the predicates do not constrain the leading short-key column
        infos = [reader.column(p.name) for p in parts]
        if not all(i.indexable for i in infos):
            raise _NotALookup()
        if stats is not None:
            stats.rows_total += meta.num_rows
        spans = _block_spans(index, key_range)
        if sum(b - a for a, b in spans) > CANDIDATE_BLOCKS * index.interval:
            spans = index.row_ranges(key_range, _KeyProbe(reader, parts, infos, stats))
            if sum(b - a for a, b in spans) > MAX_LOOKUP_ROWS:
                raise _NotALookup()
        if not spans:
            return None
        # the predicate columns of the candidate rows, tested at once
        tested = {p.column for p in preds}
        cols = {c: _column_rows(seg, reader, reader.column(c), spans, stats) for c in tested}
        probe = Batch(tuple(cols), tuple(cols.values()))
        keep = _matches(probe, preds)
        n = probe.num_rows
        kept = n if keep is None else int(np.count_nonzero(keep))
        if stats is not None:
            stats.rows_filtered_predicate += n - kept
        if kept == 0:
            return None
        narrowed: np.ndarray | None = None  # the rows found within `rows`, when not all
        if keep is None:
            rows = spans
            found = cols
        else:
            ids = np.concatenate([np.arange(a, b) for a, b in spans])[keep]
            first, last = int(ids[0]), int(ids[-1]) + 1
            rows = [(first, last)]
            found = {c: col.filter(keep) for c, col in cols.items()}
            if last - first != kept:
                narrowed = np.zeros(last - first, np.bool_)
                narrowed[ids - first] = True
        out = []
        for c in read_cols:
            col = found.get(c)
            if col is None:
                col = _column_rows(seg, reader, reader.column(c), rows, stats)
                if narrowed is not None:
                    col = col.filter(narrowed)
            out.append(col)
    return Batch(tuple(read_cols), tuple(out))


def _block_spans(index: ShortKeyIndex, key_ranges_: Sequence[KeyRange]
                 ) -> list[tuple[int, int]]:
    """Whole short-key blocks that can hold the rows of each key range (merged, in order)."""
    entries, interval, n = index.entries, index.interval, index.num_rows
    spans: list[tuple[int, int]] = []
    for kr in key_ranges_:
        lo, hi = 0, n
        if kr.lower is not None:
            key = kr.lower.key
            width = len(key)
            search = bisect.bisect_left if kr.lower.inclusive else bisect.bisect_right
            i = search(entries, key, key=lambda e: e[:width])
            lo = max(i - 1, 0) * interval
        if kr.upper is not None:
            key = kr.upper.key
            width = len(key)
            search = bisect.bisect_right if kr.upper.inclusive else bisect.bisect_left
            hi = min(search(entries, key, key=lambda e: e[:width]) * interval, n)
        if hi <= lo:
            continue
        if spans and lo <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], hi))
        else:
            spans.append((lo, hi))
    return spans


def _column_rows(seg: _Segment, reader: SegmentReader, info: ColumnInfo,
                 spans: Sequence[tuple[int, int]], stats: ScanStats | None) -> Column:
    """Rows `spans` of one column, reading only the pages that hold them."""
    key = info.footer.name.lower()
    starts = seg.page_starts.get(key)
    if starts is None:
        ordinal = reader.ordinal(info, stats)
        starts = seg.page_starts[key] = [*ordinal.first_rows.tolist(), ordinal.num_rows]
    out = []
    for start, stop in spans:
        page = bisect.bisect_right(starts, start) - 1
        while page < len(starts) - 1 and starts[page] < stop:
            first, end = starts[page], starts[page + 1]
            col = reader.read_page(info, page, stats)
            a, b = max(start, first), min(stop, end)
            out.append(col if (a, b) == (first, end) else col.slice(a - first, b - first))
            page += 1
    return out[0] if len(out) == 1 else Column.concat(out)
