"""Which index will serve each filter of an OLAP scan: EXPLAIN VERBOSE's `index:` line.

Doris' EXPLAIN says which predicates reach storage, not what storage does with them; ShaleDB
says it per filter, from the scanned materialized index's key prefix, the table's declared
indexes (storage/indexes/spec.py `index_spec_of`) and each predicate's operator:
- short key: the predicate bounds a short-key prefix column that storage turns into key ranges
  (leading `=` / `IN` / `IS NULL` columns, then one range column; storage/indexes/short_key.py);
- bitmap index: every storage operator on a column with a bitmap index (`INDEX .. USING
  BITMAP`, or `INVERTED` without a parser);
- bloom filter: `=`, `IN` and `IS NULL` on a `"bloom_filter_columns"` column (not FLOAT /
  DOUBLE, whose 0.0 and -0.0 hash apart);
- zone map: every storage operator on every column but HLL / BITMAP ones (page min / max);
- none (row evaluation): filters storage cannot take (expressions, casts, ...); the scan
  evaluates them row by row after decoding.
Rendered as `index: <filter> -> <index>[, <index>]; ...`, e.g.
`index: (lo_shipmode = 'AIR') -> bitmap index, zone map; (abs(v) > 3) -> none (row evaluation)`.
A scan that receives runtime filters adds `runtime filter index: RF000[in] -> lo_orderkey: bloom
filter, zone map; RF000[bloom] -> lo_orderkey: zone map (min / max)`: the forms the join may
send (decided by its build keys at run time) and what serves each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from planner.logical import LogicalScan
from planner.rules.push_down_filters import storage_disjunction, storage_predicate
from sql.binder.expressions import Expr
from storage.catalog.meta import MaterializedIndexMeta, TableMeta
from storage.catalog.mv import index_table
from storage.indexes.bloom_filter import BLOOM_OPS
from storage.indexes.short_key import plan_prefix
from storage.indexes.spec import NO_INDEXES, SegmentIndexSpec, index_spec_of
from storage.predicates import INDEXABLE_OPS, ColumnPredicate, Disjunction
from storage.segment.encoding import Layout, layout_of
from storage.segment.iterator import MAX_KEY_SET_PROBES
from storage.types import BLOB_KINDS, DataType

SHORT_KEY = "short key"
BITMAP_INDEX = "bitmap index"
BLOOM_FILTER = "bloom filter"
ZONE_MAP = "zone map"
ROW_EVALUATION = "none (row evaluation)"
# operators that fix a short-key column to points, so the next prefix column can narrow further
_POINT_OPS = frozenset({"=", "in", "is_null"})
_KEY_RANGE_OPS = _POINT_OPS | {"<", "<=", ">", ">=", "is_not_null"}


def _base_name(column: str) -> str:
    """The table column a scan column names (`k#3` -> `k`), lower case."""
    base, sep, slot = column.rpartition("#")
    return (base if sep and slot.isdigit() else column).lower()


class IndexUsage:
    """The indexes of one scanned materialized index, and what each predicate gets from them."""

    def __init__(self, table: TableMeta | None, index: MaterializedIndexMeta | None,
                 predicates: Sequence[ColumnPredicate]) -> None:
        self.types: dict[str, DataType] = {}
        self.spec: SegmentIndexSpec = NO_INDEXES
        self.prefix: list[str] = []
        self.predicates: tuple[ColumnPredicate, ...] = ()
        self.short_key: set[ColumnPredicate] = set()
        if table is None or index is None:
            return
        table = index_table(table, index)  # a materialized view: its own columns
        self.types = {c.name.lower(): c.type for c in table.columns}
        self.spec = index_spec_of(table, index)
        keys = [(k, self.types[k.lower()]) for k in index.keys if k.lower() in self.types]
        self.prefix = [p.name.lower() for p in plan_prefix(keys, index.short_key_column_count)]
        self.predicates = tuple(predicates)
        self.short_key = self._short_key(self.predicates)

    def _short_key(self, predicates: Sequence[ColumnPredicate]) -> set[ColumnPredicate]:
        """The predicates storage turns into short-key ranges (short_key.key_ranges: point
        columns extend the key, the first range column ends it)."""
        by_column: dict[str, list[ColumnPredicate]] = {}
        for p in predicates:
            by_column.setdefault(_base_name(p.column), []).append(p)
        out: set[ColumnPredicate] = set()
        for name in self.prefix:
            used = [p for p in by_column.get(name, ()) if p.op in _KEY_RANGE_OPS]
            if not used:
                break
            out.update(used)
            if not any(p.op in _POINT_OPS for p in used):
                break
        return out

    def key_range_with(self, extra: Sequence[ColumnPredicate]) -> bool:
        """Whether predicates `extra`, added to the scan's own, narrow the short key."""
        return bool(self._short_key(self.predicates + tuple(extra)) & set(extra))

    def served_by(self, pred: ColumnPredicate) -> list[str]:
        """The indexes that can skip data for `pred` (always listed short key, bitmap index,
        bloom filter, zone map)."""
        column = _base_name(pred.column)
        dtype = self.types.get(column)
        out = []
        if pred in self.short_key:
            out.append(SHORT_KEY)
        if pred.op in INDEXABLE_OPS:
            if column in self.spec.bitmap_columns:
                out.append(BITMAP_INDEX)
            if (column in self.spec.bloom_filter_columns and pred.op in BLOOM_OPS
                    and not (dtype is not None and dtype.is_float)):
                out.append(BLOOM_FILTER)
            if dtype is None or dtype.kind not in BLOB_KINDS:
                out.append(ZONE_MAP)
        return out

    def disjunction_served_by(self, disjunction: Disjunction) -> list[str]:
        """An OR tree storage evaluates is answered by the bitmap indexes when every column in
        it has one; page zone maps prune it when every branch has a test they can use (a
        branch without one keeps every page)."""
        out = []
        if disjunction.columns() and all(c in self.spec.bitmap_columns
                                         for c in map(_base_name, disjunction.columns())):
            out.append(BITMAP_INDEX)
        if disjunction.branches and all(any(ZONE_MAP in self.served_by(p) for p in branch)
                                        for branch in disjunction.branches):
            out.append(ZONE_MAP)
        return out


def index_line(scan: LogicalScan, usage: IndexUsage, text: Callable[[Expr], str]) -> str | None:
    """EXPLAIN VERBOSE's `index:` line of a scan (None when it has no filters): each filter
    and the indexes that serve it. `text` prints a filter the way EXPLAIN does."""
    if not scan.filters and not scan.disjunctions:
        return None
    pushed = set(scan.predicates)
    left = list(scan.disjunctions)  # OR trees no filter of the scan stands for (none today)
    parts = []
    for f in scan.filters:
        pred = storage_predicate(f)
        served = usage.served_by(pred) if pred is not None and pred in pushed else []
        tree = storage_disjunction(f)
        if tree is not None and tree in left:  # an OR conjunct storage evaluates
            left.remove(tree)
            served = usage.disjunction_served_by(tree)
        parts.append(f"{text(f)} -> {', '.join(served) or ROW_EVALUATION}")
    for d in left:
        served = usage.disjunction_served_by(d)
        parts.append(f"{disjunction_text(d)} -> {', '.join(served) or ROW_EVALUATION}")
    return "index: " + "; ".join(parts)


def runtime_filter_line(usage: IndexUsage, filters: Sequence[tuple[str, str]]) -> str:
    """EXPLAIN VERBOSE's `runtime filter index:` line: what each runtime filter a scan
    receives (RF id, scan column) will be served by, in each form the join may send
    (executor/runtime_filter.py): integer keys a key set (`bitmap`) whose min / max the
    short key and zone maps use (and which bitmap indexes and bloom filters look up when it
    holds at most 1024 keys); string and float keys an `in` list (up to 1024 keys), which every
    index answering IN serves, or else a `bloom` filter of the keys with min / max."""
    parts = []
    for rf, column in filters:
        dtype = usage.types.get(_base_name(column))
        bounds = [ColumnPredicate(column, ">=", (0,)), ColumnPredicate(column, "<=", (0,))]
        key_range = usage.key_range_with(bounds)
        by_range = ([SHORT_KEY] if key_range else []) + [f"{ZONE_MAP} (min / max)"]
        name = column_name(column)
        in_list = ColumnPredicate(column, "in", ("",))
        if dtype is None or layout_of(dtype).layout is Layout.OBJECT_INT:
            # LARGEINT / wide DECIMAL keys: the join sends nothing (executor/runtime_filter.py)
            parts.append(f"{rf} -> {name}: none (no runtime filter for this key type)")
        elif dtype.is_string or dtype.is_float:
            served = ([SHORT_KEY] if usage.key_range_with([in_list]) else []) + [
                s for s in usage.served_by(in_list) if s != SHORT_KEY]
            parts.append(f"{rf}[in] -> {name}: {', '.join(served)}")
            parts.append(f"{rf}[bloom] -> {name}: {', '.join(by_range)}")
        else:  # a key set: min / max, and up to 1024 keys looked up like an IN list
            small = [f"{s} (<= {MAX_KEY_SET_PROBES} keys)" for s in usage.served_by(in_list)
                     if s in (BITMAP_INDEX, BLOOM_FILTER)]
            parts.append(f"{rf}[bitmap] -> {name}: {', '.join(small + by_range)}")
    return "runtime filter index: " + "; ".join(parts)


def column_name(column: str) -> str:
    base, sep, slot = column.rpartition("#")
    return f"{base}[#{slot}]" if sep and slot.isdigit() else column


def predicate_text(p: ColumnPredicate) -> str:
    column = _base_name(p.column)
    if p.op in ("is_null", "is_not_null"):
        return f"{column} {'IS NULL' if p.op == 'is_null' else 'IS NOT NULL'}"
    if p.op in ("in", "not_in"):
        word = "IN" if p.op == "in" else "NOT IN"
        return f"{column} {word} ({', '.join(map(_value_text, p.values))})"
    return f"{column} {p.op} {_value_text(p.values[0])}"


def disjunction_text(d: Disjunction) -> str:
    return "(" + " OR ".join(" AND ".join(map(predicate_text, b)) for b in d.branches) + ")"


def _value_text(v: object) -> str:
    if isinstance(v, bytes):
        v = v.decode("utf-8", "replace")
    return f"'{v}'" if isinstance(v, str) else str(v)
