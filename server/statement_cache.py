"""Per-server caches on the statement path that save work for statements clients repeat:
`ParseCache` (sqlglot parse trees by exact statement text), `runs_inline`, which picks the
statements cheap enough to answer on the event loop without a hand-off to a worker thread, and
`is_constant_select`, the statements whose result a session may keep by text.

Parsing is the largest fixed cost of a small statement (a sqlglot parse of `SELECT 1` is
~0.5-0.8 ms on our 2-core box, docs/performance.md); a copy of a cached tree is ~20x cheaper.
The parser reads no session state, so the text alone is the key. Callers get private copies
(the binder may annotate trees), the cache keeps pristine ones. Upstream: MySQL's / Doris'
prepared-statement caches keep parse trees the same way; this one also serves COM_QUERY.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from sqlglot import expressions as exp

PARSE_CACHE_ENTRIES = 1024
PARSE_CACHE_MAX_SQL = 4096  # longer texts (bulk INSERT VALUES, generated SQL) are not kept


class ParseCache:
    """Least-recently-used parse trees by statement text, shared by every session."""

    def __init__(self, entries: int = PARSE_CACHE_ENTRIES,
                 max_sql: int = PARSE_CACHE_MAX_SQL) -> None:
        self.entries = entries
        self.max_sql = max_sql
        self._trees: OrderedDict[str, list[exp.Expression]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def parse(self, sql: str, parse: Callable[[str], list[exp.Expression]]
              ) -> list[exp.Expression]:
        """`parse(sql)`, from the cache when this text was parsed before (errors are not
        cached: they are raised again by `parse`)."""
        with self._lock:
            trees = self._trees.get(sql)
            if trees is not None:
                self._trees.move_to_end(sql)
                self.hits += 1
        if trees is not None:
            return [t.copy() for t in trees]
        statements = parse(sql)
        if len(sql) <= self.max_sql:
            kept = [t.copy() for t in statements]
            with self._lock:
                self.misses += 1
                self._trees[sql] = kept
                if len(self._trees) > self.entries:
                    self._trees.popitem(last=False)
        return statements


# Nodes a statement answered on the event loop may hold: constants, session variables and
# the cheap session functions; anything else (a table, a subquery, SLEEP(), any function that
# could compute for long) goes to a worker thread.
_INLINE_NODES = (
    exp.Select, exp.Literal, exp.Neg, exp.Paren, exp.Alias, exp.Null, exp.Boolean,
    exp.Identifier, exp.Var, exp.SessionParameter, exp.Set, exp.SetItem, exp.EQ, exp.Column,
    exp.CurrentSchema, exp.CurrentUser,
)
_INLINE_SELECT_ARGS = frozenset({"expressions"})
_INLINE_SET_KINDS = frozenset({"", "SESSION", "LOCAL", "NAMES", "CHARACTER SET"})


# A SELECT made of these alone is a constant: its result depends on its text and the query
# options only (no function, no variable), so a session may keep it (connection pools send
# `SELECT 1` to validate every connection they hand out).
_CONSTANT_NODES = (exp.Select, exp.Literal, exp.Neg, exp.Paren, exp.Alias, exp.Null,
                   exp.Boolean, exp.Identifier)
CONSTANT_RESULTS_PER_SESSION = 64


def is_constant_select(stmt: exp.Expression) -> bool:
    """`SELECT 1`, `SELECT 'a' AS x, -2, NULL`: literals only, no FROM, no clause."""
    return isinstance(stmt, exp.Select) and runs_inline(stmt) and all(
        isinstance(node, _CONSTANT_NODES) for node in stmt.walk())


def runs_inline(stmt: exp.Expression) -> bool:
    """Whether `stmt` is answered on the event loop: a SELECT of constants and session
    variables without FROM (`SELECT 1`, `SELECT @@tx_isolation`, drivers' connect-time
    probes) or a session-scope SET of plain values. Their work is a few hundred microseconds
    of Python with no I/O, less than handing them to a worker thread and back; SET GLOBAL
    (persisted) and anything reading a table never runs here."""
    if isinstance(stmt, exp.Select):
        if any(v is not None and v != [] and k not in _INLINE_SELECT_ARGS
               for k, v in stmt.args.items()):
            return False
    elif isinstance(stmt, exp.Set):
        for item in stmt.expressions:
            kind = (item.text("kind") or "").upper() if isinstance(item, exp.SetItem) else "?"
            if kind not in _INLINE_SET_KINDS:
                return False
    else:
        return False
    for node in stmt.walk():
        if not isinstance(node, _INLINE_NODES):
            return False
        if isinstance(node, exp.SessionParameter) and \
                (node.text("kind") or "").upper() == "GLOBAL" and isinstance(stmt, exp.Set):
            return False
    return True
