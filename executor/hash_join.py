"""Hash join operator: INNER / CROSS / LEFT / RIGHT / FULL / semi / anti / mark joins.

Build phase: the right child is drained (`sink`) into one batch and its equi-key columns into a
`JoinTable` (executor/join_table.py). Probe phase: each left batch is probed; the verified
(probe row, build row) candidate pairs are filtered by the residual condition, then shaped by
the join kind. Without equi keys every pair is a candidate (nested loop join), the probe batch
cut into slices so the pair count stays bounded. Build rows matched by any probe row are
tracked for RIGHT / FULL / right semi / right anti joins and emitted after the last probe.
NULL keys never match. A mark join outputs the left rows plus a three-valued BOOLEAN column
(planner/physical.py JoinExprs). Upstream: Doris `HashJoinNode` / `NestedLoopJoinNode`,
DuckDB `PhysicalHashJoin` (build = Sink, probe = streaming operator), mark joins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from executor.build_dictionary import with_encoded_strings
from executor.compile import compile_column, compile_expr, compile_predicate
from executor.join_table import JoinTable
from executor.kernels.join_hash import is_identity
from executor.memory import BufferedInput
from executor.operator import ExecContext, Operator, chunks
from executor.runtime_filter import USELESS_FRACTION, build_fraction, build_predicates
from executor.state import JoinBuild, JoinBuildState, RuntimeFilterState
from planner.physical import JoinExprs
from planner.runtime_filters import RuntimeFilterDesc
from sql.binder.expressions import Comparison, make_and
from storage.batch import Batch, Column
from storage.types import BOOLEAN, DataType

_MAX_PAIRS = 1 << 20


def null_column(t: DataType, n: int) -> Column:
    """n NULLs of type t (values under the nulls zero / empty, as the Column contract wants)."""
    valid = np.zeros(n, np.bool_)
    if t.is_varlen:
        return Column(t, np.zeros(0, np.uint8), valid, np.zeros(n + 1, np.int64))
    return Column(t, np.zeros(n, dtype=t.numpy_dtype), valid)


class HashJoin(BufferedInput, Operator):
    """Build side sinks through BufferedInput (counted against exec_mem_limit)."""

    memory_node = "HashJoin"

    def __init__(self, plan: JoinExprs, left: Operator, right: Operator, *,
                 runtime_targets: list[tuple[RuntimeFilterDesc, Operator]] | None = None,
                 global_filters: list[RuntimeFilterState] | None = None,
                 shared_build: JoinBuildState | None = None, build_owner: bool = True) -> None:
        super().__init__(left, right)
        self.plan = plan
        self._init_buffer()
        # filters whose target scan is in this instance, with that scan (executor/build.py)
        self.runtime_targets = runtime_targets if runtime_targets is not None else []
        # filters whose target scans run in other fragments (created by the coordinator)
        self.global_filters = global_filters if global_filters is not None else []
        # a broadcast build side shared by the fragment's instances (created by the
        # coordinator): the owner builds, the others wait for its table
        self.shared_build = shared_build
        self.build_owner = build_owner

    def open(self, ctx: ExecContext) -> None:
        super().open(ctx)
        p = self.plan
        self._lkeys = [compile_column(e, ctx.cancel) for e in p.left_keys]
        self._rkeys = [compile_column(e, ctx.cancel) for e in p.right_keys]
        cond = make_and([e for e in (p.condition, p.residual) if e is not None])
        self._residual = compile_predicate(cond, ctx.cancel) if cond is not None else None
        self._mark: tuple[Callable[[Batch], Column], Callable[[Batch], Column]] | None = None
        if p.mark_keys is not None:
            self._mark = (compile_column(p.mark_keys[0], ctx.cancel),
                          compile_column(p.mark_keys[1], ctx.cancel))
            self._mark_cmp = compile_expr(Comparison("=", *p.mark_keys), ctx.cancel)

    # ---- build ------------------------------------------------------------------------------

    def _finish_build(self) -> None:
        """Concatenate the build rows and hash their keys into the join table(s)."""
        p = self.plan
        parts = self.take_buffered()
        # string payloads on codes: each probe gathers int32 codes, not strings
        self._build_batch = (with_encoded_strings(Batch.concat(parts)) if parts
                             else Batch.empty(p.right_names, p.right_types))
        b = self._build_batch
        n = b.num_rows
        self._bkeys = [fn(b) for fn in self._rkeys]
        self._publish_filters(n)
        if self.global_filters:
            keep = build_fraction(self.plan.build_base_rows, n)
            for gf in self.global_filters:
                gf.publish(self._bkeys[gf.key_index], keep)
        self._table = JoinTable(self._bkeys, n) if self._bkeys else None
        self._matched = np.zeros(n, np.bool_)
        self._full_table: JoinTable | None = None
        self._null_table: JoinTable | None = None
        self._any_null = False
        if self._mark is not None and self.plan.residual is None and \
                self.plan.condition is None:
            v = self._mark[1](b)
            self._full_table = JoinTable(self._bkeys + [v], n)
            null_rows = np.flatnonzero(v.null_mask())
            self._null_table = JoinTable(self._bkeys, n, null_rows) if self._bkeys else None
            self._any_null = bool(len(null_rows))

    def _built(self) -> JoinBuild:
        return JoinBuild(self._build_batch, self._bkeys, self._table, self._full_table,
                         self._null_table, self._any_null)

    def _adopt(self, build: JoinBuild) -> None:
        """Probe another instance's build (read-only)."""
        self._build_batch, self._bkeys, self._table = build.batch, build.keys, build.table
        self._full_table, self._null_table = build.full_table, build.null_table
        self._any_null = build.any_null

    def _publish_filters(self, n: int) -> None:
        """Runtime filters for the scans under this instance's probe side."""
        if self.runtime_targets:
            keep = build_fraction(self.plan.build_base_rows, n)
            if keep < USELESS_FRACTION:
                for desc, scan in self.runtime_targets:
                    scan.add_runtime_filter(  # type: ignore[attr-defined]
                        build_predicates(desc.column, self._bkeys[desc.key_index]), keep)

    def _build_side(self) -> None:
        """Drain the build side into the join table, or take the one another instance of
        this fragment built from the same broadcast rows (read-only, shared)."""
        shared = self.shared_build
        if shared is not None and not self.build_owner:
            self._adopt(shared.wait(self.ctx.cancel))
            n = self._build_batch.num_rows
            self._matched = np.zeros(n, np.bool_)
            self._publish_filters(n)
            return
        self._init_buffer()
        for batch in self.children[1].batches():
            if batch.num_rows:
                self.sink(batch)
        self._finish_build()
        if shared is not None:
            shared.publish(self._built())

    # ---- probe -------------------------------------------------------------------------------
    def _pairs(self, lb: Batch) -> Iterator[tuple[Batch, np.ndarray, np.ndarray]]:
        """(probe slice, probe idx, build idx) after keys and residual."""
        nb = self._build_batch.num_rows
        if self._table is not None:
            slices = [lb]
        else:
            step = max(1, _MAX_PAIRS // max(nb, 1))
            slices = list(chunks(lb, step))
        for part in slices:
            n = part.num_rows
            if self._table is not None:
                pi, bi = self._table.probe([fn(part) for fn in self._lkeys], n)
            else:
                pi = np.repeat(np.arange(n, dtype=np.int64), nb)
                bi = np.tile(np.arange(nb, dtype=np.int64), n)
            if self._residual is not None and len(pi):
                mask = self._residual(self._pair_batch(part, pi, bi))
                pi, bi = pi[mask], bi[mask]
            yield part, pi, bi

    def _pair_batch(self, lb: Batch, pi: np.ndarray, bi: np.ndarray) -> Batch:
        b = self._build_batch
        left = lb if len(pi) == lb.num_rows and is_identity(pi) else lb.take(pi)
        return Batch(lb.names + b.names, left.columns + b.take(bi).columns)

    def produce(self) -> Iterator[Batch]:
        self._build_side()
        kind = self.plan.kind
        size = self.ctx.batch_size
        left = self.children[0]
        lnames, ltypes = self.plan.left_names, self.plan.left_types
        b = self._build_batch
        for lb in left.batches():
            if lb.num_rows == 0:
                continue
            if kind == "mark":
                yield self._mark_batch(lb)
                continue
            for part, pi, bi in self._pairs(lb):
                n = part.num_rows
                if kind in ("right", "full", "right_semi", "right_anti"):
                    self._matched[bi] = True
                if kind in ("left_semi", "left_anti"):
                    hit = np.zeros(n, np.bool_)
                    hit[pi] = True
                    out = part.filter(hit if kind == "left_semi" else ~hit)
                    if out.num_rows:
                        yield out
                    continue
                if kind in ("right_semi", "right_anti"):
                    continue
                if len(pi):
                    yield from chunks(self._pair_batch(part, pi, bi), size)
                if kind in ("left", "full"):
                    hit = np.zeros(n, np.bool_)
                    hit[pi] = True
                    if not hit.all():
                        miss = part.filter(~hit)
                        nulls = tuple(null_column(t, miss.num_rows) for t in b.types)
                        yield Batch(miss.names + b.names, miss.columns + nulls)
        if kind in ("right", "full"):
            rest = b.filter(~self._matched)
            if rest.num_rows:
                nulls = tuple(null_column(t, rest.num_rows) for t in ltypes)
                yield from chunks(Batch(lnames + rest.names, nulls + rest.columns), size)
        elif kind in ("right_semi", "right_anti"):
            rest = b.filter(self._matched if kind == "right_semi" else ~self._matched)
            if rest.num_rows:
                yield from chunks(rest, size)

    # ---- mark join ---------------------------------------------------------------------------
    def _mark_batch(self, lb: Batch) -> Batch:
        n = lb.num_rows
        name = self.plan.mark_name or "__mark"
        if self._mark is None:  # EXISTS: TRUE iff some pair survives
            hit = np.zeros(n, np.bool_)
            for _, pi, _ in self._pairs(lb):
                hit[pi] = True
            col = Column(BOOLEAN, hit.astype(BOOLEAN.numpy_dtype))
            return Batch(lb.names + (name,), lb.columns + (col,))
        if self._full_table is not None:
            return self._mark_fast(lb, name)
        # generic: per surviving pair, x = v three-valued; TRUE if any TRUE, else NULL if any NULL
        is_true = np.zeros(n, np.bool_)
        is_null = np.zeros(n, np.bool_)
        for _, pi, bi in self._pairs(lb):
            if not len(pi):
                continue
            cmp = self._mark_cmp(self._pair_batch(lb, pi, bi))
            valid = cmp.validity if cmp.validity is not None else np.ones(len(pi), np.bool_)
            t = valid & cmp.data.astype(np.bool_)
            is_true[pi[t]] = True
            is_null[pi[~valid]] = True
        return self._mark_out(lb, name, is_true, is_null)

    def _mark_fast(self, lb: Batch, name: str) -> Batch:
        n = lb.num_rows
        x = self._mark[0](lb)  # type: ignore[index]
        lk = [fn(lb) for fn in self._lkeys]
        assert self._full_table is not None
        pi, _ = self._full_table.probe(lk + [x], n)
        is_true = np.zeros(n, np.bool_)
        is_true[pi] = True
        nb = self._build_batch.num_rows
        if self._table is not None:  # candidates = build rows matching the correlation keys
            pi, _ = self._table.probe(lk, n)
            nonempty = np.zeros(n, np.bool_)
            nonempty[pi] = True
            has_null = np.zeros(n, np.bool_)
            if self._null_table is not None and self._any_null:
                pi, _ = self._null_table.probe(lk, n)
                has_null[pi] = True
        else:
            nonempty = np.full(n, nb > 0)
            has_null = np.full(n, self._any_null)
        is_null = (x.null_mask() & nonempty) | has_null
        return self._mark_out(lb, name, is_true, is_null)

    @staticmethod
    def _mark_out(lb: Batch, name: str, is_true: np.ndarray, is_null: np.ndarray) -> Batch:
        valid = is_true | ~is_null
        col = Column(BOOLEAN, is_true.astype(BOOLEAN.numpy_dtype),
                     None if valid.all() else valid)
        return Batch(lb.names + (name,), lb.columns + (col,))
