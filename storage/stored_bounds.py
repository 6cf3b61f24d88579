"""Whether every stored row of some tablets satisfies a comparison, from segment zone maps.

The sync materialized view rewrite (planner/materialized_view.py) may drop a filter such as
`lo_orderdate <= 19971231` when it holds for every row the scan captures: a view keyed on
`lo_orderdate DIV 10000` then answers the query although the key alone could not express the
bound (19971299 would be a legal INT). The proof is data-dependent and exact:
- every segment of every rowset of the scanned tablets at the scanned versions is consulted
  (the rows a view aggregates at a version are the rows of the base index at that version:
  every load writes all indexes in one version);
- the segment-level zone map entry of an integer column holds the exact min and max of its
  non-NULL values (integers are never truncated), so `min >= c` proves `x >= c` for every row
  of the segment; a segment holding a NULL proves nothing (NULL fails the comparison);
- rows hidden by DELETE versions are still in the segments: the proof covers a superset;
- anything unknown (a file gone under compaction, an unreadable footer, a non-integer
  column) answers False, and the caller keeps the base index.
`StoredBounds` is the interface: the engine makes one (`engine.stored_bounds`), the statement
runner puts it in the session context (`SessionContext.stored_bounds`) and the planner hands it
to the rewrite through its optimizer context; a planner given none proves nothing (the base
index answers). Entries are cached per rowset (its files never change), so a repeated query
costs a few dictionary lookups per scanned rowset.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from storage.indexes.zone_map import HAS_NOT_NULL, HAS_NULL, MAX_VALID, MIN_VALID
from storage.segment.meta_cache import SEGMENT_META_CACHE
from storage.segment.reader import SegmentReader
from storage.types import DataType


def _entry_implies(entry: tuple[int, object, object], op: str, c: int) -> bool:
    flags, lo, hi = entry
    if flags & HAS_NULL:
        return False
    if not flags & HAS_NOT_NULL:
        return True  # no values at all
    if not (flags & MIN_VALID and flags & MAX_VALID):
        return False
    if not isinstance(lo, int) or not isinstance(hi, int):
        return False
    return {">=": lo >= c, ">": lo > c, "<=": hi <= c, "<": hi < c}[op]


class StoredBounds:
    """Zone-map proofs over the segment files of one engine (its catalog and data dir)."""

    def __init__(self, catalog: Any, data_dir: Path) -> None:
        self.catalog = catalog
        self.data_dir = Path(data_dir)

    def comparison_holds(self, ranges: Iterable[Any], column: str, column_type: DataType,
                         op: str, c: int) -> bool:
        """Whether `column op c` (op in >=, >, <=, <; an integer column) holds for every row
        of the rowsets the scan ranges (`planner.logical.ScanRange`: tablet and version)
        capture."""
        return comparison_holds(self.catalog, self.data_dir, ranges, column, column_type, op, c)


def comparison_holds(catalog: Any, data_dir: Path, ranges: Iterable[Any], column: str,
                     column_type: DataType, op: str, c: int) -> bool:
    """`StoredBounds.comparison_holds` for the segment files of `catalog` under `data_dir`."""
    if op not in (">=", ">", "<=", "<") or not column_type.is_integer:
        return False
    roots: dict[int, str] = {}  # backend id -> its root (a few backends, many tablets)
    try:
        for rng in ranges:
            tablet = rng.tablet
            root = roots.get(tablet.backend_id)
            if root is None:
                root_path = catalog.backend(tablet.backend_id).root_path
                # normalised as storage/reader.py spells it, so the metadata cache hits
                root = os.path.join(os.path.normpath(os.fspath(data_dir / root_path)), "")
                roots[tablet.backend_id] = root
            for rowset in catalog.rowsets(tablet.tablet_id, rng.version):
                for entry in _rowset_entries(root, rowset, tablet.tablet_id, column,
                                             column_type):
                    if not _entry_implies(entry, op, c):
                        return False
    except Exception:  # noqa: BLE001 - a missing or damaged file proves nothing
        return False
    return True


# Segment-level zone-map entries of one column of one rowset, by (root, rowset id, column,
# type): a rowset's files never change once written, so the entries are fixed. Opening every
# segment of every scanned tablet for each query and each candidate view was 16% of the
# server's samples in SSB-flat Q3.3 with views (py-spy, docs/performance.md "mvflat2").
_ENTRIES: dict[tuple[str, str, str, DataType], tuple[tuple[int, object, object], ...]] = {}
_ENTRIES_SIZE = 65536


def _rowset_entries(root: str, rowset: Any, tablet_id: int, column: str,
                    column_type: DataType) -> tuple[tuple[int, object, object], ...]:
    key = (root, rowset.rowset_id, column, column_type)
    hit = _ENTRIES.get(key)
    if hit is not None:
        return hit
    latest = SEGMENT_META_CACHE.latest
    types = {column: column_type}
    entries = []
    for rel in rowset.files:
        path = root + rel
        with SegmentReader(path, types, tablet_id, published=latest(path)) as reader:
            if reader.meta.num_rows == 0:
                continue
            info = reader.column(column)
            entries.append(reader.zone_map(info).segment_entry())
    out = tuple(entries)
    if len(_ENTRIES) >= _ENTRIES_SIZE:
        _ENTRIES.clear()
    _ENTRIES[key] = out
    return out
