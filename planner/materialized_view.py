"""Query rewrite onto a synchronous materialized view (called by rules/choose_rollup.py).

An aggregate over projections / filters over one OLAP scan reads a materialized view instead of
the base index when the view covers it (Doris `SelectMaterializedIndexWithAggregate` for sync
MVs, Nereids' `mv_` / `mva_` slot rewrite):
- every group expression and filter, in the scan's column terms, is built from the view's key
  expressions (each sub-expression whose SQL text equals a key's define expression becomes that
  key column, or derives from a key `e DIV a` by the sound rules of `_derived_from_div_key`;
  no base column may remain); a filter on the RANGE partition column that every scanned
  partition's bounds imply, or an integer comparison the base rowsets' zone maps prove for
  every captured row (`_holds_for_stored_rows`), is dropped first (it filters nothing there);
- every aggregate matches a value column: sum(x) a SUM column defined as x (or as the widening
  CAST of x the view applied), min / max (x) a MIN / MAX column or key expressions, count(x) the
  SUM column of `CASE WHEN x IS NULL THEN 0 ELSE 1 END` (count(*) that of a NOT NULL column),
  and a DISTINCT aggregate (or min / max)
  of key expressions stays as it is over the keys.
The view's rows are pre-aggregated per tablet and merged on read, so the rewritten aggregate
re-aggregates them: sum of partial sums, min of minima, count as the sum of partial counts
(with 0, not NULL, for a global count over no rows). Among covering views the one expected to
read the fewest rows wins (its rows in the scanned partitions, narrowed for each leading key the
query binds by `=` / IN: `_bound_prefix`; then fewer columns, then the earliest created), and
only if that is much less than the base rows the scan would read (`_worth_reading`): a view row
costs more than a base row (merge-on-read of its keys, re-aggregation), so a view keyed finely
enough to hold nearly every base row is not read instead of the base it would slow down.
The scan then reads every view tablet holding rows in the scanned partitions at the same
versions (every load writes every index in the same version; a finished view places its rows
by its own keys, not by the base's buckets: storage/view_routing.py).
Expressions are matched on the SQL text of bound expressions: the view's define expressions
are bound again against the table (sql/ddl/materialized_view.py `bind_define_expr`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from planner.logical import (
    LogicalAggregate,
    LogicalFilter,
    LogicalPlan,
    LogicalProject,
    LogicalScan,
    ScanRange,
)
from planner.rules.push_down_filters import storage_disjunction, storage_predicate
from sql.binder.expressions import (
    SWAPPED_OP,
    AggregateCall,
    And,
    Arithmetic,
    Case,
    Cast,
    ColumnRef,
    Comparison,
    Expr,
    InList,
    IsNull,
    Literal,
    make_and,
)
from sql.binder.materialized_view import bind_define_expr, count_define
from sql.errors import DorisError
from storage.catalog.meta import (
    AggType,
    MaterializedIndexMeta,
    PartitionMeta,
    PartitionType,
    TableMeta,
    TabletMeta,
)
from storage.stored_bounds import StoredBounds
from storage.types import BIGINT, DOUBLE, TypeKind

_NARROW_INTS = (TypeKind.TINYINT, TypeKind.SMALLINT, TypeKind.INT)
# A view replaces the base scan only when it holds at most this fraction of the rows the base
# scan captures. Measured (docs/performance.md, "mvflat", SSB-flat SF 0.2, rewrite on vs off
# in one process): `mv_q2` with 23% of the base rows was 1.4-1.7x SLOWER than the base (a view
# row over 56 small tablets costs ~5-7x a base row: per-tablet and per-segment set-up, the
# short-key seek, merge-on-read, re-aggregation); `mv_q4s` at 14.5% was as fast or faster,
# the year views at ~3% 2.5-4.5x faster.
MAX_VIEW_ROW_FRACTION = 0.2
# The planner has no column statistics: each leading view key bound by `=` / IN is taken to
# keep this fraction of the view's rows (SSB-flat: `c_nation = 'UNITED STATES'` keeps 1/25,
# `p_category = 'MFGR#14'` 1/25, `c_city IN (2 cities)` 1/125), counting at most
# PREFIX_KEYS_COUNTED keys. A view keyed by city pairs holds 27% of the SSB-flat base rows at
# SF 0.2, yet a query fixing its leading key reads a few percent of them.
PREFIX_KEY_SELECTIVITY = 0.1
PREFIX_KEYS_COUNTED = 2
# Below this many base rows either scan costs about the same fixed set-up; the view is taken
# whenever it covers the query, so small tables keep a predictable plan.
COST_CHECK_MIN_ROWS = 1024


@dataclass(frozen=True, slots=True)
class _View:
    """One view's columns by their define expressions' SQL text."""

    index: MaterializedIndexMeta
    keys: dict[str, ColumnRef]  # define sql -> key column
    values: dict[tuple[AggType, str], ColumnRef]  # (aggregation, define sql) -> value column
    # a COUNT(col) column of a NOT NULL column: it counts every row, so it answers count(*)
    count_star: ColumnRef | None = None
    # keys `e DIV a` (a > 0 an integer literal) by the SQL text of `e`: [(a, key column)]
    div_keys: dict[str, tuple[tuple[int, ColumnRef], ...]] = field(default_factory=dict)


# Binding every view's define expressions again for every query was ~7% of a short query's
# server time (py-spy, SSB-flat Q3.1 with 8 views): the result depends only on the table's
# schema and the view's columns, both immutable catalog objects, so it is cached by identity
# (a schema change makes new objects; the cache keeps the last few hundred).
_VIEW_CACHE: dict[tuple[int, int], tuple[TableMeta, MaterializedIndexMeta, _View | None]] = {}
_VIEW_CACHE_SIZE = 512


def _view(table: TableMeta, index: MaterializedIndexMeta) -> _View | None:
    key = (id(table), id(index))
    hit = _VIEW_CACHE.get(key)
    if hit is not None and hit[0] is table and hit[1] is index:
        return hit[2]
    view = _bind_view(table, index)
    if len(_VIEW_CACHE) >= _VIEW_CACHE_SIZE:
        _VIEW_CACHE.clear()
    _VIEW_CACHE[key] = (table, index, view)
    return view


def _bind_view(table: TableMeta, index: MaterializedIndexMeta) -> _View | None:
    keys: dict[str, ColumnRef] = {}
    values: dict[tuple[AggType, str], ColumnRef] = {}
    count_star: ColumnRef | None = None
    div_keys: dict[str, list[tuple[int, ColumnRef]]] = {}
    for col in index.schema:
        try:
            bound = bind_define_expr(table, col.define_expr)
        except DorisError:
            return None  # a base column it reads is gone: never use the view
        text = bound.sql()
        ref = ColumnRef(col.name, col.type)
        if col.is_key:
            keys[text] = ref
            divisor = _positive_divisor(bound)
            if divisor is not None:
                assert isinstance(bound, Arithmetic)
                div_keys.setdefault(bound.left.sql(), []).append((divisor, ref))
        elif col.agg_type in (AggType.SUM, AggType.MIN, AggType.MAX):
            values[(col.agg_type, text)] = ref
            if (col.agg_type is AggType.SUM and isinstance(bound, Case) and bound.whens
                    and isinstance(bound.whens[0][0], IsNull)
                    and isinstance(arg := bound.whens[0][0].arg, ColumnRef)
                    and text == count_define(arg).sql()
                    and not table.column(arg.name).nullable):
                count_star = ref
    return _View(index, keys, values, count_star,
                 {k: tuple(v) for k, v in div_keys.items()})


def _positive_divisor(e: Expr) -> int | None:
    """`a` when `e` is `x DIV a` over integers with `a` a positive integer literal."""
    if (isinstance(e, Arithmetic) and e.op == "DIV" and isinstance(e.right, Literal)
            and isinstance(e.right.value, int) and not isinstance(e.right.value, bool)
            and e.right.value > 0 and e.left.type.is_integer and e.type.is_integer):
        return e.right.value
    return None


def _derived_from_div_key(x: Expr, view: _View) -> Expr | None:
    """`x` over a view key `e DIV a` when that is sound for every integer value of `e`
    (NULL gives NULL on both sides):
    - `e DIV n` with `a` dividing `n`: `(e DIV a) DIV (n / a)`. Truncating division composes,
      trunc(trunc(e / a) / b) = trunc(e / (a * b)) for a, b > 0 (e >= 0: floors compose;
      e < 0: trunc(-y) = -trunc(y)); a month key `d DIV 100` answers `d DIV 10000` (year).
    - `e >= c`, `e < c` with c > 0 a multiple of `a`: `(e DIV a) >= c / a`, `(e DIV a) < c / a`
      (`e > c`, `e <= c` as `e >= c + 1`, `e < c + 1`). Proof of `>=`: e >= c > 0 gives
      e DIV a >= c / a; 0 <= e < c gives e DIV a <= (c - 1) DIV a = c / a - 1; e < 0 gives
      e DIV a <= 0 < c / a. `<` is its negation. Only these: `d >= 19940101` is NOT answerable
      by `d DIV 100` (19940100 would pass the key test), nor is any bound c <= 0 (e = -50
      has e DIV 100 = 0 under truncation).
    The literal's type is kept (the key has the type of `e DIV a`, the type of `e`)."""
    n = _positive_divisor(x)
    if n is not None:
        assert isinstance(x, Arithmetic) and isinstance(x.right, Literal)
        for a, ref in view.div_keys.get(x.left.sql(), ()):
            if n % a == 0 and n > a:
                return Arithmetic("DIV", ref, Literal(n // a, x.right.type), x.type)
        return None
    if not isinstance(x, Comparison) or x.op not in (">", ">=", "<", "<="):
        return None
    left, right, op = x.left, x.right, x.op
    if isinstance(left, Literal) and not isinstance(right, Literal):
        left, right, op = right, left, SWAPPED_OP[op]
    if not (isinstance(right, Literal) and isinstance(right.value, int)
            and not isinstance(right.value, bool) and right.type.is_integer
            and left.type.is_integer):
        return None
    keys = view.div_keys.get(left.sql())
    if not keys or left.sql() in view.keys:
        return None  # `e` itself a key: matched as it is below
    c = right.value + (1 if op in (">", "<=") else 0)
    new_op = ">=" if op in (">", ">=") else "<"
    for a, ref in keys:
        if c > 0 and c % a == 0:
            return Comparison(new_op, ref, Literal(c // a, right.type), x.type)
    return None


def _conjuncts(e: Expr) -> tuple[Expr, ...]:
    return tuple(x for a in e.args for x in _conjuncts(a)) if isinstance(e, And) else (e,)


def _chain(agg: LogicalAggregate) -> tuple[LogicalScan, dict[str, Expr], list[Expr]] | None:
    """The scan under `agg` through projections and filters only, the substitution of the
    names above the scan into scan terms, and the filters met on the way (in scan terms)."""
    node = agg.child
    steps: list[LogicalPlan] = []
    while isinstance(node, (LogicalProject, LogicalFilter)):
        steps.append(node)
        node = node.child
    if not isinstance(node, LogicalScan):
        return None
    mapping: dict[str, Expr] = {}
    filters: list[Expr] = []
    for step in reversed(steps):  # bottom-up: each projection sees the names below it
        if isinstance(step, LogicalFilter):
            filters.extend(_subst(f, mapping) for f in _conjuncts(step.predicate))
        else:
            assert isinstance(step, LogicalProject)
            mapping = {n: _subst(e, mapping) for n, e in step.exprs}
    return node, mapping, filters


def _subst(e: Expr, mapping: dict[str, Expr]) -> Expr:
    if not mapping:
        return e
    return e.transform(
        lambda x: mapping.get(x.name) if isinstance(x, ColumnRef) and x.name in mapping else None)


def _over_keys(e: Expr, view: _View) -> Expr | None:
    """`e` with every sub-expression that is a view key replaced by the key column; None when
    a base column remains."""
    mv_names = {r.name for r in view.keys.values()}

    def fn(x: Expr) -> Expr | None:
        ref = view.keys.get(x.sql())
        if ref is not None:
            return ref
        return _derived_from_div_key(x, view) if view.div_keys else None

    out = e.transform(fn)
    if any(isinstance(x, ColumnRef) and x.name not in mv_names for x in out.walk()):
        return None
    return out


def _sum_define_candidates(arg: Expr) -> list[str]:
    texts = [arg.sql()]
    if arg.type.kind in _NARROW_INTS:
        texts.append(Cast(arg, BIGINT).sql())
    elif arg.type.kind is TypeKind.FLOAT:
        texts.append(Cast(arg, DOUBLE).sql())
    return texts


def _call(call: Expr, view: _View) -> tuple[AggregateCall, bool] | None:
    """The aggregate over the view's columns, and whether it is a count turned into a sum."""
    if not isinstance(call, AggregateCall):
        return None
    if not call.args:  # count(*): the count of a NOT NULL column counts every row
        if call.name == "count" and not call.distinct and view.count_star is not None:
            return AggregateCall("sum", (view.count_star,), False, call.type), True
        return None
    if call.distinct or call.name in ("min", "max"):
        args = [_over_keys(a, view) for a in call.args]
        if all(a is not None for a in args):
            return replace(call, args=tuple(a for a in args if a is not None)), False
        if call.distinct:
            return None
    if len(call.args) != 1:
        return None
    arg = call.args[0]
    if call.name == "sum":
        for text in _sum_define_candidates(arg):
            ref = view.values.get((AggType.SUM, text))
            if ref is not None:
                return replace(call, args=(ref,)), False
        return None
    if call.name in ("min", "max"):
        agg = AggType.MIN if call.name == "min" else AggType.MAX
        ref = view.values.get((agg, arg.sql()))
        return (replace(call, args=(ref,)), False) if ref is not None else None
    if call.name == "count":
        ref = view.values.get((AggType.SUM, count_define(arg).sql()))
        if ref is not None:
            return AggregateCall("sum", (ref,), False, call.type), True
    return None


def view_ranges(catalog: Any, scan: LogicalScan, tablets: list[TabletMeta]
                ) -> tuple[tuple[ScanRange, ...], int] | None:
    """The view's tablets to read for `scan` (`tablets`: every tablet of the view) and the
    rows they hold: every tablet holding rows in the partitions the base ranges cover, at the
    same versions, or None when such a partition has no tablet of the view. Not the view
    tablets of the base ranges' buckets: a finished view places its rows by its own keys
    (storage/view_routing.py), so the base's bucket pruning says nothing about where a view
    row is; tablets with no rows at the version are skipped (a view fills only some of a
    partition's tablets)."""
    versions = {r.tablet.partition_id: r.version for r in scan.ranges}
    seen: set[int] = set()
    out: list[ScanRange] = []
    total = 0
    for t in tablets:
        version = versions.get(t.partition_id)
        if version is None:
            continue
        seen.add(t.partition_id)
        rows = sum(rs.num_rows for rs in catalog.rowsets(t.tablet_id, version))
        if rows:
            out.append(ScanRange(t, version))
            total += rows
    if len(seen) != len(versions):
        return None
    return tuple(out), total


class _Shared:
    """What every candidate view of one aggregate shares, computed at most once and only when
    a view needs it (the rewrite runs for every aggregate of every query: the table's tablets
    and the zone-map proofs were a fifth of planning an SSB-flat query with 8 views)."""

    def __init__(self, catalog: Any, scan: LogicalScan, views: list[MaterializedIndexMeta],
                 bounds: StoredBounds | None) -> None:
        self._catalog = catalog
        self._scan = scan
        self._views = views
        self._bounds = bounds
        self._tablets: dict[int, list[TabletMeta]] | None = None
        self._proved: dict[str, bool] = {}

    def tablets(self, index_id: int) -> list[TabletMeta]:
        """The view's tablets in the partitions the scan reads."""
        if self._tablets is None:
            self._tablets = {ix.index_id: [] for ix in self._views}
            for pid in sorted({r.tablet.partition_id for r in self._scan.ranges}):
                for t in self._catalog.tablets(self._scan.table_id, pid):
                    if t.index_id in self._tablets:
                        self._tablets[t.index_id].append(t)
        return self._tablets.get(index_id, [])

    def holds_for_stored_rows(self, table: TableMeta, f: Expr) -> bool:
        if self._bounds is None:
            return False
        key = f.sql()
        hit = self._proved.get(key)
        if hit is None:
            hit = self._proved[key] = _holds_for_stored_rows(self._bounds, table, self._scan, f)
        return hit


def rewrite_aggregate(agg: LogicalAggregate, catalog: Any,
                      bounds: StoredBounds | None = None) -> LogicalPlan | None:
    """`agg` (and the projections / filters down to its scan) over the best covering
    materialized view, or None when none covers it. `bounds` proves filters from the stored
    rows' zone maps (storage/stored_bounds.py); without it no filter is dropped that way."""
    found = _chain(agg)
    if found is None:
        return None
    scan, mapping, chain_filters = found
    table = catalog.table_by_id(scan.table_id)
    if table is None or scan.index_name not in ("", table.name):
        return None  # already decided (or on a rollup)
    views = [ix for ix in catalog.materialized_indexes(scan.table_id)
             if ix.is_materialized_view and ix.state == "NORMAL"]
    if not views:
        return None
    groups = [(n, _subst(e, mapping)) for n, e in agg.group_by]
    calls = [(n, _subst(e, mapping)) for n, e in agg.aggregates]
    shared = _Shared(catalog, scan, views, bounds)
    best: tuple[tuple[float, int, float], LogicalPlan] | None = None
    for index in views:
        view = _view(table, index)
        if view is None:
            continue
        found_plan = _rewrite(agg, scan, table, view, groups, calls, chain_filters, catalog,
                              shared)
        if found_plan is None:
            continue
        plan, view_scan = found_plan
        reads = view_scan.row_count * PREFIX_KEY_SELECTIVITY ** _bound_prefix(
            index, view_scan.filters)
        rank = (reads, len(index.columns), index.create_time)
        if best is None or rank < best[0]:
            best = (rank, plan)
    if best is None or not _worth_reading(best[0][0], scan.row_count):
        return None
    return best[1]


def _worth_reading(view_reads: float, base_rows: int) -> bool:
    """Whether a covering view expected to read `view_reads` rows (its rows in the scanned
    partitions, narrowed by its prefix index) should replace a base scan capturing
    `base_rows`."""
    return base_rows < COST_CHECK_MIN_ROWS or view_reads <= base_rows * MAX_VIEW_ROW_FRACTION


def _bound_prefix(index: MaterializedIndexMeta, filters: tuple[Expr, ...]) -> int:
    """How many leading keys of `index` (at most PREFIX_KEYS_COUNTED) the view scan's filters
    bind by `=` / IN: the segment iterator seeks to them through the short-key index and page
    zone maps of the sorted keys, so the scan reads only their rows."""
    bound: set[str] = set()
    for f in filters:
        if isinstance(f, Comparison) and f.op == "=":
            left, right = f.left, f.right
            if isinstance(left, Literal):
                left, right = right, left
            if isinstance(left, ColumnRef) and isinstance(right, Literal):
                bound.add(left.name)
        elif isinstance(f, InList) and not f.negated and isinstance(f.arg, ColumnRef):
            bound.add(f.arg.name)
    n = 0
    for key in index.keys[:PREFIX_KEYS_COUNTED]:
        if key not in bound:
            break
        n += 1
    return n


def _holds_in_partitions(table: TableMeta, parts: list[PartitionMeta], f: Expr) -> bool:
    """Whether conjunct `f` holds for every row any of `parts` can hold: a comparison of an
    integer RANGE partition column with a constant that each partition's [lower, upper) bounds
    imply (e.g. `d >= 19970101 AND d <= 19981231` on partitions p1997 and p1998). Such a
    conjunct filters nothing in the scanned partitions, so a view need not hold its column."""
    info = table.partition_info
    if info.type is not PartitionType.RANGE or len(info.columns) != 1 or not parts:
        return False
    bound = _integer_bound(f)
    if bound is None or bound[0].name.lower() != info.columns[0].lower():
        return False
    _, op, c = bound
    for p in parts:
        lower = int(p.lower[0]) if p.lower is not None else None
        upper = int(p.upper[0]) if p.upper is not None else None  # exclusive
        ok = {">": lower is not None and lower > c, ">=": lower is not None and lower >= c,
              "<": upper is not None and upper - 1 < c,
              "<=": upper is not None and upper - 1 <= c}[op]
        if not ok:
            return False
    return True


def _holds_for_stored_rows(bounds: StoredBounds, table: TableMeta, scan: LogicalScan,
                           f: Expr) -> bool:
    """Whether conjunct `f`, a comparison of an integer column with an integer constant, holds
    for every row the scan captures, proved by the segment zone maps of the base index at the
    scanned versions (storage/stored_bounds.py). `lo_orderdate >= 19920101 AND lo_orderdate
    <= 19971231` over yearly partitions 1992-1997 holding dates of those years only is such a
    filter: it selects every stored row, so a year-keyed view answers the query soundly, while
    the same filter over data holding 19971299 keeps the base index. Checked only for a filter
    no view key can express, after the partition bounds (which need no I/O)."""
    bound = _integer_bound(f)
    if bound is None:
        return False
    ref, op, c = bound
    try:
        column = table.column(ref.name)
    except (KeyError, DorisError):
        return False
    return bounds.comparison_holds(scan.ranges, column.name, column.type, op, c)


def _integer_bound(f: Expr) -> tuple[ColumnRef, str, int] | None:
    """`f` as (integer column, op, integer constant) with the column on the left, when it is a
    comparison `col op c` / `c op col` with op in >, >=, <, <=; else None."""
    if not isinstance(f, Comparison) or f.op not in (">", ">=", "<", "<="):
        return None
    left, right, op = f.left, f.right, f.op
    if isinstance(left, Literal) and isinstance(right, ColumnRef):
        left, right, op = right, left, SWAPPED_OP[op]
    if not (isinstance(left, ColumnRef) and isinstance(right, Literal)
            and isinstance(right.value, int) and not isinstance(right.value, bool)
            and left.type.is_integer and right.type.is_integer):
        return None
    return left, op, right.value


def _rewrite(agg: LogicalAggregate, scan: LogicalScan, table: TableMeta, view: _View,
             groups: list[tuple[str, Expr]], calls: list[tuple[str, Expr]],
             chain_filters: list[Expr], catalog: Any, shared: _Shared
             ) -> tuple[LogicalPlan, LogicalScan] | None:
    new_groups = []
    for n, g in groups:
        e = _over_keys(g, view)
        if e is None:
            return None
        new_groups.append((n, e))
    new_calls: list[tuple[str, AggregateCall]] = []
    counts: list[str] = []
    for n, c in calls:
        matched = _call(c, view)
        if matched is None:
            return None
        new_calls.append((n, matched[0]))
        if matched[1]:
            counts.append(n)
    scan_filters = []
    selected = (set(scan.selection.partition_ids) if scan.selection is not None
                else {pid for pid, _ in scan.partitions})
    parts = [p for p in catalog.partitions(scan.table_id) if p.partition_id in selected]
    for f in scan.filters:
        if _holds_in_partitions(table, parts, f):
            continue
        e = _over_keys(f, view)
        if e is None:
            if shared.holds_for_stored_rows(table, f):
                continue  # every captured row satisfies it: it filters nothing
            return None
        scan_filters.append(e)
    above = []
    for f in chain_filters:
        e = _over_keys(f, view)
        if e is None:
            return None
        above.append(e)
    found = view_ranges(catalog, scan, shared.tablets(view.index.index_id))
    if found is None:  # layout changed under the plan (e.g. TRUNCATE): keep the base index
        return None
    ranges, view_rows = found
    used: set[str] = set()
    for e in [*(g for _, g in new_groups), *(c for _, c in new_calls), *scan_filters, *above]:
        used |= {x.name for x in e.walk() if isinstance(x, ColumnRef)}
    schema = {c.name: c for c in view.index.schema}
    columns = tuple(c for c in view.index.columns if c in used) or view.index.columns[:1]
    selection = scan.selection
    if selection is not None:
        selection = replace(selection, tablet_ids=tuple(r.tablet.tablet_id for r in ranges))
    filters = tuple(scan_filters)
    new_scan = replace(
        scan, index_id=view.index.index_id, index_name=view.index.name, columns=columns,
        column_types=tuple(schema[c].type for c in columns), ranges=tuple(ranges),
        filters=filters,
        predicates=tuple(p for p in (storage_predicate(f) for f in filters) if p is not None),
        disjunctions=tuple(d for d in (storage_disjunction(f) for f in filters)
                           if d is not None),
        selection=selection, row_count=view_rows,
        preaggregation=True, preagg_reason="")
    child: LogicalPlan = new_scan
    pred = make_and(above)
    if pred is not None:
        child = LogicalFilter(child, pred)
    out: LogicalPlan = LogicalAggregate(child, tuple(new_groups), tuple(new_calls))
    if counts and not new_groups:
        # a global count over no rows is 0, the sum of no partial counts NULL
        exprs = []
        for n, t in zip(agg.names, agg.types, strict=True):
            ref = ColumnRef(n, t)
            exprs.append((n, Case(((IsNull(ref), Literal(0, t)),), ref, t) if n in counts
                          else ref))
        out = LogicalProject(out, tuple(exprs))
    return out, new_scan

