"""The fused path of an aggregate: one nogil kernel pass per batch for every call.

`FusedGlobalAggregate.of(plan)` accepts an aggregate without group keys whose every call is
COUNT(*), or COUNT / SUM / AVG / MIN / MAX of an argument built from integer and DECIMAL
(int64-backed) columns and literals by + - * unary minus and widening casts, or of one
FLOAT / DOUBLE column (COUNT also of any column). Such plans (SSB Q1.x, SSB-flat Q1.x, TPC-H
Q6: `SUM(price * discount)` over a filtered scan) fold each batch with one call of
executor/kernels/fused_aggregate.py `global_aggregate`: no array per operator and no Python
between operators, with the GIL released for the pass. Anything else returns None and keeps
the general operators (executor/hash_aggregate.py).

Results equal the general path's: integer programs keep intermediates within +-2^62 or report
OVERFLOW, and that batch is then folded by the general path instead (`sink` returns False);
exact totals are Python ints across batches; float sums run in row order from the running
total, like the general SUM kernel. `flush_into` hands the totals to the kernel grouped state
(executor/grouped_state.py) as one serialized state row, which finalizes them exactly as the
general path would (result types, AVG division, DECIMAL scales).

`FusedGroupedAggregate` is the same for GROUP BY (TPC-H Q1, SSB Q2-Q4, both phases' update
side): group ids from the grouped state (`GroupedState.batch_group_ids`), the calls folded by
`grouped_aggregate` into per-group accumulators that merge into that state row for row
before it is combined, serialized or finalized. `program_bounds` proves per batch which
programs cannot reach 2^62 (interval arithmetic on the columns' largest values): those run
without per-row overflow checks in both kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from executor.grouped_state import GroupedState, state_names
from executor.kernels.fused_aggregate import (
    K_COUNT,
    K_MAX_FLOAT,
    K_MAX_INT,
    K_MIN_FLOAT,
    K_MIN_INT,
    K_SUM_FLOAT,
    K_SUM_INT,
    OK,
    OP_ADD,
    OP_COL,
    OP_CONST,
    OP_FCOL,
    OP_MUL,
    OP_NEG,
    OP_SCALE,
    OP_SUB,
    SPILL,
    global_aggregate,
    grouped_aggregate,
)
from planner.aggregate_phase import AggregateExprs
from sql.binder.expressions import Arithmetic, Cast, ColumnRef, Expr, Literal, Negate
from sql.functions.vector import wide_objects
from storage.batch import Batch, Column
from storage.types import BIGINT, DOUBLE, LARGEINT, DataType, TypeKind

_INT_DIGITS = {TypeKind.TINYINT: 3, TypeKind.SMALLINT: 5, TypeKind.INT: 10, TypeKind.BIGINT: 19}
_ARITH_OPS = {"+": OP_ADD, "-": OP_SUB, "*": OP_MUL}
_MAX_PROGRAM = 16  # ops per argument (the kernel's stack is deeper than any such program)


def _int_like(e: Expr) -> bool:
    """An exact integer value (integer types up to BIGINT, DECIMAL as its scaled integer);
    whether it fits int64 is the kernel's check. Columns must also be stored as int64 or
    narrower (`_int_column`)."""
    t = e.type
    return t.kind in _INT_DIGITS or t.is_decimal


def _int_column(e: Expr) -> bool:
    t = e.type
    return t.kind in _INT_DIGITS or (t.is_decimal and t.precision <= 18)


def _scale(e: Expr) -> int:
    return e.type.scale if e.type.is_decimal else 0


def _integer_digits(e: Expr) -> int:
    t = e.type
    return t.precision - t.scale if t.is_decimal else _INT_DIGITS[t.kind]


class _Program:
    """Compiles an argument expression into (opcode, operand) rows; columns and constants
    are numbered in first-use order."""

    def __init__(self, columns: dict[str, int], constants: list[int]) -> None:
        self.ops: list[tuple[int, int]] = []
        self.columns = columns
        self.constants = constants

    def emit(self, e: Expr) -> bool:
        """Append `e`'s program; False when some part is not supported."""
        if isinstance(e, ColumnRef):
            if not _int_column(e):
                return False
            self.ops.append((OP_COL, self.columns.setdefault(e.name, len(self.columns))))
            return True
        if isinstance(e, Literal):
            if not _int_like(e) or not isinstance(e.value, int) or isinstance(e.value, bool):
                return False
            self.constants.append(e.value)
            self.ops.append((OP_CONST, len(self.constants) - 1))
            return True
        if isinstance(e, Negate):
            return _int_like(e) and self.emit(e.arg) and self._push(OP_NEG, 0)
        if isinstance(e, Cast):
            # a widening cast only: every source value fits, the scale can only grow
            src = e.arg
            if not (_int_like(e) and _int_like(src)):
                return False
            grow = _scale(e) - _scale(src)
            if grow < 0 or _integer_digits(e) < _integer_digits(src):
                return False
            return self.emit(src) and (grow == 0 or self._push(OP_SCALE, grow))
        if isinstance(e, Arithmetic):
            op = _ARITH_OPS.get(e.op)
            if op is None or not (_int_like(e) and _int_like(e.left) and _int_like(e.right)):
                return False
            ls, rs, out = _scale(e.left), _scale(e.right), _scale(e)
            if (op == OP_MUL and out != ls + rs) or (op != OP_MUL and not ls == rs == out):
                return False  # the binder aligns scales; anything else is not plain int math
            return self.emit(e.left) and self.emit(e.right) and self._push(op, 0)
        return False

    def _push(self, op: int, arg: int) -> bool:
        self.ops.append((op, arg))
        return True


@dataclass
class _Call:
    name: str  # count / sum / avg / min / max
    kind: int
    type_arg: DataType | None  # the argument's type (None for COUNT(*))


@dataclass
class _Compiled:
    """Every call's kernel kind and argument program, and the columns the programs read."""

    calls: list[_Call]
    ops: np.ndarray  # (opcode, operand) rows of all programs
    starts: np.ndarray  # call a's program is ops[starts[a]:starts[a + 1]]
    constants: np.ndarray
    int_columns: list[str]
    float_columns: list[str]


def _compile(plan: AggregateExprs) -> _Compiled | None:
    """The programs of `plan`'s calls, or None when some call is not of a supported shape."""
    if not plan.aggregates:
        return None
    columns: dict[str, int] = {}
    floats: dict[str, int] = {}
    constants: list[int] = []
    ops: list[tuple[int, int]] = []
    starts = [0]
    calls: list[_Call] = []
    for _, a in plan.aggregates:
        if a.distinct or a.name not in ("count", "sum", "avg", "min", "max"):
            return None
        if not a.args:
            if a.name != "count":
                return None
            calls.append(_Call("count", K_COUNT, None))
            starts.append(len(ops))
            continue
        if len(a.args) != 1:
            return None
        arg = a.args[0]
        t = arg.type
        if isinstance(arg, ColumnRef) and t.is_float:
            kind = {"count": K_COUNT, "sum": K_SUM_FLOAT, "avg": K_SUM_FLOAT,
                    "min": K_MIN_FLOAT, "max": K_MAX_FLOAT}[a.name]
            ops.append((OP_FCOL, floats.setdefault(arg.name, len(floats))))
        else:
            prog = _Program(columns, constants)
            if not prog.emit(arg) or len(prog.ops) > _MAX_PROGRAM:
                return None
            # AVG of a non-DECIMAL argument sums in float64 (executor/grouped_state.py)
            float_avg = a.name == "avg" and not t.is_decimal
            kind = {"count": K_COUNT, "sum": K_SUM_INT,
                    "avg": K_SUM_FLOAT if float_avg else K_SUM_INT,
                    "min": K_MIN_INT, "max": K_MAX_INT}[a.name]
            ops.extend(prog.ops)
        calls.append(_Call(a.name, kind, t))
        starts.append(len(ops))
    if any(abs(c) >= 2 ** 62 for c in constants):
        return None
    return _Compiled(calls, np.array(ops, np.int64).reshape(-1, 2),
                     np.array(starts, np.int64), np.array(constants, np.int64),
                     list(columns), list(floats))


class FusedGlobalAggregate:
    """Exact running totals of a global aggregate folded by the fused kernel."""

    def __init__(self, plan: AggregateExprs, calls: list[_Call], ops: np.ndarray,
                 starts: np.ndarray, constants: np.ndarray, int_columns: list[str],
                 float_columns: list[str]) -> None:
        self.plan = plan
        self.calls = calls
        self._ops = ops
        self._starts = starts
        self._kinds = np.array([c.kind for c in calls], np.int64)
        self._constants = constants
        self._int_columns = int_columns
        self._float_columns = float_columns
        k = len(calls)
        self.totals: list[int] = [0] * k  # exact SUM totals (Python ints)
        self.extremes = np.zeros(k, np.int64)  # integer MIN / MAX so far
        self.fvals = np.zeros(k, np.float64)  # float sums (running) and float MIN / MAX
        self.has = np.zeros(k, np.bool_)
        self.counts = np.zeros(k, np.int64)
        self.rows = 0

    @staticmethod
    def of(plan: AggregateExprs) -> FusedGlobalAggregate | None:
        """The fused path for `plan`, or None when it does not have the supported shape."""
        if plan.group_by:
            return None
        c = _compile(plan)
        if c is None:
            return None
        return FusedGlobalAggregate(plan, c.calls, c.ops, c.starts, c.constants,
                                    c.int_columns, c.float_columns)

    def sink(self, batch: Batch) -> bool:
        """Fold `batch`; False (nothing folded) when the batch must take the general path."""
        n = batch.num_rows
        if n == 0:
            return True
        ints, int_valid, int_vidx, int_wide = _matrix(batch, self._int_columns, np.int64, n)
        floats, float_valid, float_vidx, _ = _matrix(batch, self._float_columns, np.float64, n)
        k = len(self.calls)
        sums = self.extremes.copy()
        sum_kinds = self._kinds == K_SUM_INT
        sums[sum_kinds] = 0  # integer sums are batch-local, added to the exact totals
        fvals, has, counts = self.fvals.copy(), self.has.copy(), np.zeros(k, np.int64)
        safe, value_bounds = program_bounds(self._ops, self._starts, self._constants,
                                            _max_abs(ints))
        status = global_aggregate(self._ops, self._starts, self._kinds, self._constants, safe,
                                  value_bounds, ints, int_valid, int_vidx, int_wide, floats,
                                  float_valid, float_vidx, sums, fvals, has, counts)
        if status != OK:
            return False
        for a in np.flatnonzero(sum_kinds).tolist():
            self.totals[a] += int(sums[a])
        self.extremes = np.where(sum_kinds, self.extremes, sums)
        self.fvals, self.has = fvals, has
        self.counts += counts
        self.rows += n
        return True

    def flush_into(self, grouped: GroupedState) -> None:
        """Merge the totals into `grouped` (as one serialized state row) and start over."""
        if self.rows == 0:
            return
        cols: list[Column] = []
        for a, call in enumerate(self.calls):
            has = np.array([self.has[a]])
            if call.name in ("min", "max"):
                t = call.type_arg
                assert t is not None
                float_kind = call.kind in (K_MIN_FLOAT, K_MAX_FLOAT)
                value = self.fvals[a] if float_kind else self.extremes[a]
                cols.append(Column(t, np.array([value]).astype(t.numpy_dtype), has))
            if call.name in ("sum", "avg"):
                if call.kind == K_SUM_FLOAT:
                    cols.append(Column(DOUBLE, np.array([self.fvals[a]], np.float64), has))
                else:
                    total = self.totals[a]
                    wide = not -(2 ** 63) <= total < 2 ** 63
                    data = np.array([total], object if wide else np.int64)
                    cols.append(Column(LARGEINT if wide else BIGINT, data, has))
            if call.name in ("count", "avg"):
                cols.append(Column(BIGINT, np.array([self.counts[a]], np.int64)))
        grouped.merge_batch(Batch(state_names(self.plan), tuple(cols)))
        fresh = FusedGlobalAggregate(self.plan, self.calls, self._ops, self._starts,
                                     self._constants, self._int_columns, self._float_columns)
        self.__dict__.update(fresh.__dict__)


def _matrix(batch: Batch, names: list[str], dtype: type[np.generic], n: int
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(values k x n as `dtype`, validity rows of the columns with NULLs, each column's
    validity row or -1, whether each column is stored 64 bits wide)."""
    values: np.ndarray = np.empty((len(names), n), dtype)
    vidx = np.full(len(names), -1, np.int64)
    wide = np.zeros(len(names), np.bool_)
    masks: list[np.ndarray] = []
    for j, name in enumerate(names):
        col = batch.column(name)
        values[j] = col.data
        wide[j] = col.data.dtype.itemsize >= 8
        if col.validity is not None and not col.validity.all():
            vidx[j] = len(masks)
            masks.append(col.validity)
    valid = np.array(masks, np.bool_) if masks else np.ones((0, n), np.bool_)
    return values, valid, vidx, wide


class FusedGroupedAggregate:
    """Per-group accumulators of a GROUP BY folded by the fused kernel.

    Group ids are the grouped state's (`GroupedState.batch_group_ids`: its table and key
    columns), so `flush_into` merges the accumulators into that state row for row, without
    hashing the keys again. Rows are (aggregates x groups) arrays that grow with the table;
    exact int64 sums move into Python ints (`_spill`) when their bound would reach 2^62.
    """

    def __init__(self, plan: AggregateExprs, compiled: _Compiled) -> None:
        self.plan = plan
        self._c = compiled
        self._kinds = np.array([c.kind for c in compiled.calls], np.int64)
        self._int_sums = np.flatnonzero(self._kinds == K_SUM_INT).tolist()
        self._reset(0)

    def _reset(self, cap: int) -> None:
        k = len(self._c.calls)
        self.isums = np.zeros((k, cap), np.int64)
        self.fvals = np.zeros((k, cap), np.float64)
        self.counts = np.zeros((k, cap), np.int64)
        self.bounds = np.zeros(k, np.float64)
        self.spills: dict[int, np.ndarray] = {}  # aggregate -> exact sums moved out (objects)
        self.groups = 0

    @staticmethod
    def of(plan: AggregateExprs) -> FusedGroupedAggregate | None:
        """The fused path for `plan` (with GROUP BY), or None when it does not fit."""
        if not plan.group_by:
            return None
        c = _compile(plan)
        if c is None:
            return None
        for call in c.calls:  # MIN / MAX states keep the argument's own integer type
            if call.kind in (K_MIN_INT, K_MAX_INT):
                assert call.type_arg is not None
                if np.dtype(call.type_arg.numpy_dtype).kind != "i":
                    return None
        return FusedGroupedAggregate(plan, c)

    def _grow(self, groups: int) -> None:
        cap = self.isums.shape[1]
        if groups > cap:
            new = max(groups, 2 * cap, 16)
            for name in ("isums", "fvals", "counts"):
                old = getattr(self, name)
                arr = np.zeros((old.shape[0], new), old.dtype)
                arr[:, :cap] = old
                setattr(self, name, arr)
            for a, spill in self.spills.items():
                grown = np.zeros(new, object)
                grown[:] = 0
                grown[: len(spill)] = spill
                self.spills[a] = grown
        self.groups = max(self.groups, groups)

    def _spill(self) -> None:
        """Move the exact int64 sums into Python ints and restart them (and their bounds)."""
        cap = self.isums.shape[1]
        for a in self._int_sums:
            spill = self.spills.get(a)
            if spill is None:
                spill = np.zeros(cap, object)
                spill[:] = 0
            self.spills[a] = spill + wide_objects(self.isums[a])
            self.isums[a] = 0
            self.bounds[a] = 0.0

    def sink(self, grouped: GroupedState, keys: list[Column], batch: Batch) -> int:
        """Fold `batch` (its key columns evaluated): the number of leading rows folded; the
        rest (an int64 bound was reached) must take the general path."""
        n = batch.num_rows
        if n == 0:
            return 0
        gids = grouped.batch_group_ids(keys, n)
        self._grow(grouped.groups)
        c = self._c
        ints, int_valid, int_vidx, int_wide = _matrix(batch, c.int_columns, np.int64, n)
        floats, float_valid, float_vidx, _ = _matrix(batch, c.float_columns, np.float64, n)
        safe, value_bounds = program_bounds(c.ops, c.starts, c.constants, _max_abs(ints))
        start = 0
        while True:
            status, done = grouped_aggregate(
                gids, start, c.ops, c.starts, self._kinds, c.constants, safe, value_bounds,
                ints, int_valid, int_vidx, int_wide, floats, float_valid, float_vidx,
                self.isums, self.fvals, self.counts, self.bounds)
            if status != SPILL:
                return done
            self._spill()
            start = done

    def nbytes(self) -> int:
        arrays = (self.isums, self.fvals, self.counts)
        return int(sum(a.nbytes for a in arrays) + 8 * sum(len(s) for s in self.spills.values()))

    def flush_into(self, grouped: GroupedState) -> None:
        """Merge the accumulators into `grouped` (whose groups 0.. they are) and start over."""
        g = self.groups
        if g == 0:
            return
        cols: list[Column] = []
        for a, call in enumerate(self._c.calls):
            has = self.counts[a, :g] > 0
            if call.name in ("min", "max"):
                t = call.type_arg
                assert t is not None
                float_kind = call.kind in (K_MIN_FLOAT, K_MAX_FLOAT)
                value = self.fvals[a, :g] if float_kind else self.isums[a, :g]
                cols.append(Column(t, value.astype(t.numpy_dtype), has))
            if call.name in ("sum", "avg"):
                if call.kind == K_SUM_FLOAT:
                    cols.append(Column(DOUBLE, self.fvals[a, :g].copy(), has))
                elif a in self.spills:
                    total = self.spills[a][:g] + wide_objects(self.isums[a, :g])
                    cols.append(Column(LARGEINT, total, has))
                else:
                    cols.append(Column(BIGINT, self.isums[a, :g].copy(), has))
            if call.name in ("count", "avg"):
                cols.append(Column(BIGINT, self.counts[a, :g].copy()))
        grouped.merge_aligned(cols)
        self._reset(0)


def _max_abs(ints: np.ndarray) -> list[int]:
    """The largest |value| of every row of an int64 matrix (0 for no columns)."""
    if ints.shape[1] == 0:
        return [0] * ints.shape[0]
    lows, highs = ints.min(axis=1).tolist(), ints.max(axis=1).tolist()
    return [max(-lo, hi) for lo, hi in zip(lows, highs)]


def program_bounds(ops: np.ndarray, starts: np.ndarray, constants: np.ndarray,
                   column_bounds: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(safe, value bound) per aggregate program, by interval arithmetic on exact integers
    from the columns' largest |value| (NULL rows' placeholders included, so the bounds only
    get looser): safe when no intermediate can reach 2^62, which lets the kernel skip the
    per-row overflow checks of that program."""
    k = len(starts) - 1
    safe = np.zeros(k, np.bool_)
    value_bounds = np.zeros(k, np.float64)
    limit = 2 ** 62
    for a in range(k):
        stack: list[int] = []
        ok = True
        for op, arg in ops[starts[a]: starts[a + 1]].tolist():
            if op == OP_FCOL:
                ok = False
                break
            if op == OP_COL:
                stack.append(column_bounds[arg])
            elif op == OP_CONST:
                stack.append(abs(int(constants[arg])))
            elif op == OP_SCALE:
                stack.append(stack.pop() * 10 ** arg)
            elif op != OP_NEG:
                r, left = stack.pop(), stack.pop()
                stack.append(left * r if op == OP_MUL else left + r)
            if stack[-1] >= limit:
                ok = False
                break
        if ok and stack:
            safe[a] = True
            value_bounds[a] = float(stack[-1])
    return safe, value_bounds
