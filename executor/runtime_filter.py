"""Runtime filters: a hash join's build keys, handed to the probe side's scan before it starts.

A hash join drains its build (right) side before it pulls the probe (left) side, so once the
build keys are known the join can tell the scan under its probe side which key values can
possibly match. For a star join (SSB, TPC-H) that removes most fact rows inside storage: the
key range becomes `>=` / `<=` predicates the short-key index and zone maps prune pages with,
and the exact key set is checked row by row (`in_bitmap`, a dense bitmap for integer keys) before the remaining columns are decoded.

Targets are found when the operator tree is built: a probe key that is a plain column is
followed down through renaming Projects, Filters and the preserved side of other joins to the
Scan that produces it. Only joins that drop unmatched probe rows publish filters (INNER, LEFT
SEMI, RIGHT OUTER/SEMI/ANTI); LEFT/FULL OUTER, LEFT ANTI and mark joins must keep every probe
row. A filter is an optimisation only: a scan that started before one arrived just reads more.
A join whose build side kept nearly all rows of its table (an unfiltered dimension) publishes
nothing: every probe row would pass. Scans test the filters they receive most selective first.
Session variable `runtime_filter_mode` = OFF switches them off (Doris' name).
Upstream: Doris `RuntimeFilter` (IN / MIN_MAX / BLOOM types, `runtime_filter_mode`), DuckDB
join filter pushdown.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from executor.operator import Operator
from planner.logical import LogicalJoin, LogicalPlan, LogicalProject
from planner.statistics import base_rows
from sql.expressions import ColumnRef
from storage.batch import Column
from storage.predicates import ColumnPredicate, IntegerSet

# Joins whose probe rows without a partner never reach the output.
FILTERING_KINDS = ("inner", "left_semi", "right", "right_semi", "right_anti")
MAX_BITMAP_SPAN = 1 << 24  # bits (16 MiB of bools) for an integer key set
# A build side that kept this fraction of its table's rows or more (an unfiltered dimension)
# would let almost every probe row through: testing it costs more than it saves.
USELESS_FRACTION = 0.9


def build_fraction(build: LogicalPlan, build_rows: int) -> float:
    """Fraction of the build input's base rows that reached the hash table (1.0 = no filter):
    how selective the runtime filter will be, and the order scans test filters in."""
    base = base_rows(build)
    return 1.0 if base <= 0 else min(1.0, build_rows / base)


@dataclass(frozen=True, slots=True)
class Target:
    key_index: int  # which of the join's probe keys
    scan: Operator  # executor.scan.Scan
    column: str  # the scan column the key reads


def find_targets(join: Operator) -> list[Target]:
    """Scans under `join`'s probe side that its build keys can filter."""
    plan: LogicalJoin = join.plan  # type: ignore[attr-defined]
    if plan.kind not in FILTERING_KINDS:
        return []
    out = []
    for i, key in enumerate(plan.left_keys):
        if isinstance(key, ColumnRef):
            hit = _resolve(join.children[0], key.name)
            if hit is not None:
                out.append(Target(i, hit[0], hit[1]))
    return out


def _resolve(op: Operator, name: str) -> tuple[Operator, str] | None:
    from executor.filter import Filter
    from executor.hash_join import HashJoin
    from executor.scan import Scan

    while True:
        if isinstance(op, Scan):
            return (op, name) if name in op.plan.columns else None
        if isinstance(op, Filter):
            op = op.children[0]
            continue
        plan = getattr(op, "plan", None)
        if isinstance(plan, LogicalProject):
            expr = dict(plan.exprs).get(name)
            if not isinstance(expr, ColumnRef):
                return None
            op, name = op.children[0], expr.name
            continue
        if isinstance(op, HashJoin):
            p = op.plan
            if name in p.left.names and p.kind not in ("right", "full", "right_semi",
                                                        "right_anti"):
                op = op.children[0]
                continue
            if name in p.right.names and p.kind in ("inner", "cross"):
                op = op.children[1]
                continue
        return None


def build_predicates(column: str, keys: Column) -> list[ColumnPredicate]:
    """Storage predicates that keep exactly the rows whose `column` is among the build keys."""
    data = keys.data
    valid = keys.validity
    if keys.offsets is None and data.dtype.kind in "iub":
        values = data if valid is None else data[valid]
        if len(values) == 0:
            return [ColumnPredicate(column, "in", ())]
        lo, hi = int(values.min()), int(values.max())
        if hi - lo < MAX_BITMAP_SPAN:  # the key set; storage prunes with its [min, max] too
            return [ColumnPredicate(column, "in_bitmap", (IntegerSet.of(values),))]
        return [ColumnPredicate(column, ">=", (_physical(data, lo),)),
                ColumnPredicate(column, "<=", (_physical(data, hi),))]
    # Other key types (strings, floats, LARGEINT) get no filter yet: storage evaluates `in` on
    # them row by row in Python, which costs more than the probe it would save.
    return []


def _physical(data: np.ndarray, v: int) -> object:
    return bool(v) if data.dtype.kind == "b" else int(v)
