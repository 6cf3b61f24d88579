"""Segment pruning from cached metadata: may any row of a segment satisfy the predicates?

Doris checks each predicate against a segment's segment-level zone map before it builds an
iterator (`Segment::new_iterator`), so a segment that cannot match costs no key-range search
and no page. A tablet fed by many small loads asks this for hundreds of segments per scan, so
`ZonePruner` is built once per scan and answers per segment from the segment metadata cache
(storage/segment/meta_cache.py) with Python scalars: the predicate constants are converted to
the stored index values once per (column, stored type), and each check is a few comparisons.
The answer is the same as `ZoneMap.may_match(...)[-1]` for every predicate, ANDed; a
disjunction (storage/predicates.py) excludes a segment when every one of its branches does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from storage.indexes.zone_map import NotIndexable, entry_may_match, index_value
from storage.predicates import (
    INDEXABLE_OPS,
    RUNTIME_FILTER_OPS,
    ColumnPredicate,
    Disjunction,
    index_forms,
)
from storage.segment.encoding import PhysicalLayout
from storage.segment.meta_cache import SegmentMeta, StoredColumn
from storage.types import DataType

Forms = list[tuple[str, list[object]]]  # (operator, index values) a zone map can test

# index values of predicate constants per (stored type, its layout, operator, constants): every
# tablet and segment of a scan (and the next run of the same query) converts the same
# constants; `index_value` costs microseconds each. A constant the type cannot hold exactly
# is remembered as None (NotIndexable).
MAX_INDEX_VALUES = 4096
_INDEX_VALUES: dict[tuple[object, ...], list[object] | None] = {}


def indexed_constants(stored: DataType, layout: PhysicalLayout, op: str,
                      values: tuple[object, ...]) -> list[object]:
    """`[index_value(stored, layout, v) for v in values]`, remembered; raises NotIndexable as
    that would. Do not modify the returned list (it is shared)."""
    try:
        # the constants' types too: 3 == 3.0 == True, but index_value treats them apart
        key = (stored, layout, op, values, tuple(type(v) for v in values))
        got = _INDEX_VALUES.get(key, _MISSING)
    except TypeError:  # an unhashable constant: convert every time
        return [index_value(stored, layout, v) for v in values]
    if got is _MISSING:
        try:
            got = [index_value(stored, layout, v) for v in values]
        except NotIndexable:
            got = None
        if len(_INDEX_VALUES) >= MAX_INDEX_VALUES:
            _INDEX_VALUES.clear()  # crude bound; a miss only converts again
        _INDEX_VALUES[key] = got
    if got is None:
        raise NotIndexable
    return got  # type: ignore[return-value]


_MISSING = object()


# Pruners by (the scan's column types, its predicates and disjunctions with typed constants):
# every tablet of a scan, and every run of a repeated query, asks with equal predicates; a
# pruner converts its constants to index values once per (column, stored type) and keeps them.
MAX_SHARED_PRUNERS = 256
_SHARED: dict[object, tuple[Mapping[str, DataType], ZonePruner]] = {}


def _typed(p: ColumnPredicate) -> tuple[object, ...]:
    return (p.column.lower(), p.op, tuple((type(v), v) for v in p.values))


class ZonePruner:
    """Segment-level zone map checks of one scan's predicates (see the module doc)."""

    @staticmethod
    def shared(types: Mapping[str, DataType], predicates: Sequence[ColumnPredicate],
               disjunctions: Sequence[Disjunction] = ()) -> ZonePruner:
        """A pruner equal to `ZonePruner(types, predicates, disjunctions)`, shared by scans
        with the same `types` object (the catalog's per schema object, storage/reader.py) and
        equal predicates: its converted constants are reused across tablets and queries."""
        if any(p.op in RUNTIME_FILTER_OPS for p in predicates) or any(
                p.op in RUNTIME_FILTER_OPS for d in disjunctions for b in d.branches for p in b):
            return ZonePruner(types, predicates, disjunctions)  # a new filter every query
        try:
            key = (id(types), tuple(map(_typed, predicates)),
                   tuple(tuple(tuple(map(_typed, b)) for b in d.branches) for d in disjunctions))
            got = _SHARED.get(key)
        except TypeError:  # an unhashable constant
            return ZonePruner(types, predicates, disjunctions)
        if got is not None and got[0] is types:
            return got[1]
        pruner = ZonePruner(types, predicates, disjunctions)
        if len(_SHARED) >= MAX_SHARED_PRUNERS:
            _SHARED.clear()  # crude bound; a miss only converts again
        _SHARED[key] = (types, pruner)  # keeps `types` alive: its id is not reused meanwhile
        return pruner

    def __init__(self, types: Mapping[str, DataType],
                 predicates: Sequence[ColumnPredicate],
                 disjunctions: Sequence[Disjunction] = ()) -> None:
        self._types = types  # lower-case name -> the type the scan reads the column as
        # one pruner per branch of each disjunction
        self._disjunctions = [[ZonePruner(types, branch) for branch in d.branches]
                              for d in disjunctions]
        by_column: dict[str, list[ColumnPredicate]] = {}
        for p in predicates:
            by_column.setdefault(p.column.lower(), []).append(p)
        self._by_column = list(by_column.items())
        self._forms: dict[tuple[str, str], Forms] = {}  # (column, stored type sql) -> forms

    def __bool__(self) -> bool:
        return bool(self._by_column) or bool(self._disjunctions)

    def columns(self) -> list[str]:
        """Lower-case names of the predicate columns (whose zone maps the checks need)."""
        out = [k for k, _ in self._by_column]
        for branches in self._disjunctions:
            for b in branches:
                out.extend(c for c in b.columns() if c not in out)
        return out

    def verdict(self, meta: SegmentMeta) -> bool | None:
        """False: no row of the segment can satisfy every predicate; True: some row may;
        None: a zone map it needs is not loaded yet, or a column is missing (open a
        SegmentReader, which loads them or raises)."""
        unknown = False
        for key, preds in self._by_column:
            c = meta.columns.get(key)
            if c is None:
                return None
            forms = self._forms.get((key, c.footer.type_sql))
            if forms is None:
                forms = self._forms[(key, c.footer.type_sql)] = self._index_forms(key, c, preds)
            if not forms:
                continue
            entry = meta.segment_zones.get(key)
            if entry is None:
                unknown = True
                continue
            for op, values in forms:
                if not entry_may_match(entry, op, values):
                    return False
        for branches in self._disjunctions:
            verdicts = [b.verdict(meta) for b in branches]
            if True in verdicts:
                continue
            if None in verdicts:
                unknown = True
                continue
            return False  # no branch can hold (also: no branch at all)
        return None if unknown else True

    def _index_forms(self, key: str, c: StoredColumn, preds: list[ColumnPredicate]) -> Forms:
        """What the zone map can test of `preds` (see `SegmentReader.index_predicates`)."""
        target = self._types.get(key, c.stored)
        if c.stored.is_decimal and c.stored.scale != target.scale:
            return []  # the reader rescales: stored index values are not the read values
        out: Forms = []
        for p in preds:
            for f in index_forms(p):
                if f.op not in INDEXABLE_OPS:
                    continue
                try:
                    out.append((f.op, indexed_constants(c.stored, c.layout, f.op, f.values)))
                except NotIndexable:
                    continue
        return out
