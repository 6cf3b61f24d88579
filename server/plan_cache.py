"""Plans of repeated query texts (`PlanCache`): a COM_QUERY whose text was planned before, under
the same database, user, query options and catalog generation, runs the kept `PlannedQuery`
without parsing a copy, binding, optimizing or distributing again.

Planning is most of a small query's server CPU (2-3 ms of 6-8 ms for SSB-flat Q1.2, Q1.3, Q3.4
on the base table's prefix, docs/performance.md), and dashboards repeat the same texts.
Upstream: Doris' SQL cache / prepared-statement plan reuse (the `sql_cache` keyed by text and
the tables' versions); MySQL 8 has no plan cache, DuckDB reuses plans of prepared statements.

Why a kept plan is still right:
- *Data.* A plan holds its scans' tablets and the partition versions to read them at
  (planner/scan_ranges.py), the materialized view it chose (proved on the stored rows) and
  the rows it counted. The key holds `Catalog.generation`, read before planning and bumped
  after every commit that changes more than rowsets (loads' publishes, DELETE, DDL, view
  states, users), once memory shows it: a plan is reused only while nothing but compaction
  (same rows at every visible version) committed since it was made.
- *Session.* The key holds the current database (name resolution), the user (what the
  catalog shows them; privileges are still checked on every run, server/statements/runner.py)
  and the frozen `QueryOptions` (every variable the planner reads).
- *Text.* Only texts whose meaning is the text: `cacheable_statement` allows a node list of
  pure SQL (columns, literals, operators, aggregates, joins, subqueries, deterministic
  functions); NOW(), RAND(), @@var, user variables, `?`, table functions and any function
  sqlglot does not know are never kept. Plans reading information_schema or files (values
  built at plan time, file listings) are not kept either (`cacheable_plan`).
- *Trees.* The cache keeps its own copy of the parsed text, marked `SHARED`; the session
  passes it to the runner instead of a fresh copy (the copy was 0.3-1.4 ms), and a miss
  copies a `SHARED` tree before binding, so nothing ever annotates the kept one.
Only COM_QUERY texts are keyed (the session marks them `TEXT`): a prepared statement's text
has `?` where each execution's values go, and other callers (INSERT .. SELECT, EXPORT) plan
subtrees without a text of their own.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlglot import expressions as exp

from planner.logical import LogicalFileScan, LogicalValues
from sql.binder.bind_expressions import SESSION_COLUMNS

if TYPE_CHECKING:
    from planner.query import PlannedQuery
    from sql.options import SessionContext

PLAN_CACHE_ENTRIES = 512
PLAN_CACHE_MAX_SQL = 16384

# stmt.meta[META] says where a statement tree came from
META = "plan_cache"
TEXT = "text"  # parsed from a COM_QUERY text, private to this execution: may be keyed by text
SHARED = "shared"  # the cache's own tree of that text: read-only, copied before binding

# Pure SQL: the value of an expression made of these depends on its inputs only.
_PURE_NODES: tuple[type[exp.Expression], ...] = (
    # query structure
    exp.Select, exp.Union, exp.Intersect, exp.Except, exp.From, exp.Join, exp.Where,
    exp.Group, exp.Having, exp.Order, exp.Ordered, exp.Limit, exp.Offset, exp.Subquery,
    exp.With, exp.CTE, exp.Table, exp.TableAlias, exp.Alias, exp.Column, exp.Identifier,
    exp.Star, exp.Distinct, exp.Paren, exp.Tuple, exp.Exists, exp.Window, exp.WindowSpec,
    # literals and types
    exp.Literal, exp.Null, exp.Boolean, exp.DataType, exp.DataTypeParam, exp.Interval,
    # operators
    exp.Add, exp.Sub, exp.Mul, exp.Div, exp.IntDiv, exp.Mod, exp.Neg, exp.And, exp.Or,
    exp.Not, exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.Is,
    exp.In, exp.Between, exp.Like, exp.ILike, exp.Case, exp.If, exp.Cast, exp.TryCast,
    exp.BitwiseAnd, exp.BitwiseOr, exp.BitwiseXor, exp.BitwiseNot,
    # aggregates and window functions
    exp.Sum, exp.Count, exp.Avg, exp.Min, exp.Max, exp.RowNumber,
    # deterministic scalar functions
    exp.Extract, exp.Substring, exp.Coalesce, exp.Nullif, exp.Abs, exp.Round, exp.Floor,
    exp.Ceil, exp.Lower, exp.Upper, exp.Length, exp.Concat, exp.Trim, exp.Year, exp.Month,
    exp.Day,
)


def cacheable_statement(stmt: exp.Expression) -> bool:
    """A SELECT / set operation of pure SQL only (see the module docstring); `exp.Var` (a bare
    keyword) only as an INTERVAL or EXTRACT unit; no bare name the binder may read as a
    session function."""
    if not isinstance(stmt, (exp.Select, exp.SetOperation)):
        return False
    for node in stmt.walk():
        if isinstance(node, exp.Column) and not node.table and \
                node.name.lower() in SESSION_COLUMNS:  # CURRENT_DATE without parentheses
            return False
        if isinstance(node, exp.Var):
            if not isinstance(node.parent, (exp.Interval, exp.Extract)):
                return False
        elif type(node) not in _PURE_TYPES:
            return False
    return True


_PURE_TYPES = frozenset(_PURE_NODES)


def cacheable_plan(planned: PlannedQuery) -> bool:
    """No leaf whose rows were made at plan time (information_schema) or are files."""
    stack = [planned.plan]
    while stack:
        node = stack.pop()
        if isinstance(node, (LogicalValues, LogicalFileScan)):
            return False
        stack.extend(node.children)
    return True


def plan_key(sql: str, ctx: SessionContext, generation: int) -> tuple[object, ...]:
    return (sql, ctx.database, ctx.current_user, ctx.options, generation)


class PlanCache:
    """Least-recently-used plans by `plan_key`, and one shared parse tree per kept text."""

    def __init__(self, entries: int = PLAN_CACHE_ENTRIES,
                 max_sql: int = PLAN_CACHE_MAX_SQL) -> None:
        self.entries = entries
        self.max_sql = max_sql
        self._plans: OrderedDict[tuple[object, ...], PlannedQuery] = OrderedDict()
        self._trees: dict[str, tuple[exp.Expression, int]] = {}  # text -> (tree, plans)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def statement(self, sql: str) -> exp.Expression | None:
        """The kept (read-only, `SHARED`) tree of `sql` when a plan of it is kept."""
        kept = self._trees.get(sql)
        return kept[0] if kept is not None else None

    def plan(self, stmt: exp.Expression, ctx: SessionContext, generation: int | None,
             make: Callable[[exp.Expression], PlannedQuery]) -> PlannedQuery:
        """The plan of `stmt` under `ctx`: kept, or `make(stmt)` (kept when allowed).
        `generation` is the catalog's, read before this call; None: no cache."""
        mark = stmt.meta.get(META)
        sql = stmt.meta.get("sql")
        if mark is None or generation is None or not sql or len(sql) > self.max_sql:
            return make(stmt)
        key = plan_key(sql, ctx, generation)
        with self._lock:
            kept = self._plans.get(key)
            if kept is not None:
                self._plans.move_to_end(key)
                self.hits += 1
                return kept
            self.misses += 1
        if mark == SHARED:  # never bind the kept tree
            stmt = stmt.copy()
            stmt.meta[META] = TEXT
        if not cacheable_statement(stmt):
            return make(stmt)
        pristine = stmt.copy()  # before binding: the binder may annotate `stmt`
        planned = make(stmt)
        if cacheable_plan(planned):
            pristine.meta[META] = SHARED
            self._store(key, sql, pristine, planned)
        return planned

    def _store(self, key: tuple[object, ...], sql: str, tree: exp.Expression,
               planned: PlannedQuery) -> None:
        with self._lock:
            if key in self._plans:
                return
            self._plans[key] = planned
            old = self._trees.get(sql)
            self._trees[sql] = (old[0] if old is not None else tree,
                                (old[1] if old is not None else 0) + 1)
            while len(self._plans) > self.entries:
                gone, _ = self._plans.popitem(last=False)
                self._forget_text(str(gone[0]))

    def _forget_text(self, sql: str) -> None:
        tree, count = self._trees[sql]
        if count <= 1:
            del self._trees[sql]
        else:
            self._trees[sql] = (tree, count - 1)

    def stats(self) -> dict[str, Any]:
        return {"entries": len(self._plans), "texts": len(self._trees),
                "hits": self.hits, "misses": self.misses}
