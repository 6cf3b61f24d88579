"""Scan plans: what a segment iterator's pruning concluded, kept per segment for repeated scans.

Before reading a data page, `SegmentIterator` prunes the segment with its segment zone map, the
short-key index (or a binary search over the leading key column), the bitmap indexes, the page
zone maps and the bloom filters (storage/segment/iterator.py). For a query over a big table
that keeps few rows per segment (SSB-flat Q1.x: a week of a year's tablets) that pruning *is*
most of the scan, and a dashboard repeats the same query text over and over. The outcome depends
only on the segment file version (immutable once written) and on the scan's predicates, so it is
kept with the segment's cached metadata (`SegmentMeta.scan_plans`, storage/segment/meta_cache.py)
under a key of the predicates' columns (as read), operators and constants:
- the row ranges left to walk, or that the segment is skipped;
- the exact row tests each window still runs (closures over the predicates, pure), the bitmap
  selection (sorted row ids, read-only) and the disjunctions the bitmaps answered;
- the counters pruning added to `ScanStats`, replayed on a hit so a query's profile reads as if
  it had pruned (rows and pages skipped by each index; not the time, pages or bytes it would have
  read: a hit reads none).
Constants are keyed with their Python type: `3`, `3.0`, `True` and `Decimal(3)` compare and hash
equal but do not index alike (storage/indexes/zone_map.py `index_value`). Scans with a join's
runtime filter (`in_bitmap`, `in_bloom`: a different one per query) or unhashable constants are
not kept,
nor are plans whose bitmap selection is large (memory). Upstream: Doris caches segment metadata
and, with its SQL / partition caches, whole results; it prunes again per scan.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields

import numpy as np

from storage.predicates import RUNTIME_FILTER_OPS, ColumnPredicate, Disjunction
from storage.scan_stats import ScanStats
from storage.segment.row_ranges import RowRanges

MAX_PLANS_PER_SEGMENT = 32  # distinct predicate sets remembered per segment (then forgotten)
# Bitmap selections kept with a plan, as uint32 row ids (8 KiB): with MAX_PLANS_PER_SEGMENT a
# segment's plans stay within ~256 KiB however many distinct predicates a workload sends.
MAX_SELECTION_ROWS = 2048
# The counters pruning adds that a hit replays (see the module doc).
REPLAYED = tuple(f.name for f in fields(ScanStats) if f.name not in (
    "pages_read", "pages_cached", "bytes_read", "bitmap_index_filter_ns", "bloom_filter_ns"))


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """Pruning's outcome for one segment and one predicate set."""

    ranges: RowRanges | None  # rows left to walk; None: the segment is skipped
    tests: tuple[object, ...]  # the iterator's row tests (RowTest), in order
    selection: np.ndarray | None  # bitmap-selected row ids (uint32, read-only), or None
    answered_disjunctions: frozenset[int]
    counts: tuple[int, ...]  # REPLAYED counters added while pruning


def _constants(values: Sequence[object]) -> tuple[object, ...]:
    return tuple((type(v), v) for v in values)


def _predicate_key(p: ColumnPredicate, column_key: object) -> tuple[object, ...]:
    return (column_key, p.op, _constants(p.values))


def plan_key(columns: Sequence[object], predicates: Sequence[tuple[object, ColumnPredicate]],
             disjunctions: Sequence[Disjunction], column_key: Callable[[str], object]
             ) -> object | None:
    """The key of a scan's plan: the columns read (bitmap page counters depend on them) and
    whether the reader has a page cache (the leading-key search needs one), each
    predicate with its column as read (`column_key(name)`: the segment's column and the type
    it is read as) and typed constants, the disjunctions alike. None when it must not be kept
    (a join's runtime filter, an unhashable constant)."""
    if any(p.op in RUNTIME_FILTER_OPS for _, p in predicates) or any(
            p.op in RUNTIME_FILTER_OPS for d in disjunctions for b in d.branches for p in b):
        return None
    key = (tuple(columns),
           tuple(_predicate_key(p, ck) for ck, p in predicates),
           tuple(tuple(tuple(_predicate_key(p, column_key(p.column)) for p in branch)
                       for branch in d.branches) for d in disjunctions))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def counts(stats: ScanStats) -> tuple[int, ...]:
    return tuple(getattr(stats, name) for name in REPLAYED)


def replay(stats: ScanStats, delta: tuple[int, ...]) -> None:
    for name, d in zip(REPLAYED, delta):
        if d:
            setattr(stats, name, getattr(stats, name) + d)


def remember(plans: dict[object, object], key: object, ranges: RowRanges | None,
             tests: Sequence[object], selection: np.ndarray | None,
             answered_disjunctions: set[int], before: tuple[int, ...],
             after: tuple[int, ...]) -> None:
    """Keep a plan under `key` (a plan with a large bitmap selection is not kept)."""
    if selection is not None:
        if len(selection) > MAX_SELECTION_ROWS:
            return
        selection = selection.astype(np.uint32)  # a copy; segment rows are < 2**32
        selection.flags.writeable = False
    if len(plans) >= MAX_PLANS_PER_SEGMENT:
        plans.clear()  # a workload of many distinct predicates: start over
    plans[key] = ScanPlan(ranges, tuple(tests), selection, frozenset(answered_disjunctions),
                          tuple(a - b for a, b in zip(after, before)))
