"""Window operator: computes window functions over all of its input (a pipeline breaker).

For each window call the input is ordered by (partition keys, order keys) with the sort-key
machinery of executor/keys.py; partition and peer-group boundaries come from comparing adjacent
sorted keys, and every function is evaluated vectorised over the sorted rows:
ranking functions from partition/peer starts, LAG/LEAD by shifted indices, frame aggregates from
per-row frame bounds [lo, hi): COUNT/SUM/AVG by prefix sums, MIN/MAX by a running maximum over
order-preserving value codes (frames anchored at a partition end) or a sparse table (bounded
frames), FIRST_VALUE/LAST_VALUE by taking row lo / hi-1. Results are scattered back to input
order and appended as new columns; output row order is the input's.
Upstream: DuckDB `PhysicalWindow` (segment tree), Doris `VAnalyticEvalNode`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import replace

import numpy as np

from executor.compile import compile_column
from executor.keys import column_codes, lexsort_indices, sort_key
from executor.memory import BufferedInput
from executor.operator import ExecContext, Operator, SinkOperator, chunks
from executor.window_aggregates import frame_aggregate
from sql.binder.expressions import Expr, Literal, WindowCall, WindowFrame
from sql.functions.aggregate import _avg_final, _sum_final
from sql.functions.vector import Vec, object_array
from storage.batch import Batch, Column
from storage.types import BIGINT, DOUBLE


class Window(BufferedInput, SinkOperator):
    memory_node = "Window"

    def __init__(self, windows: tuple[tuple[str, Expr], ...], child: Operator) -> None:
        super().__init__(child)
        self.windows = windows  # (output name, WindowCall)
        self._init_buffer()

    def open(self, ctx: ExecContext) -> None:
        super().open(ctx)
        self._fns: dict[Expr, Callable[[Batch], Column]] = {}
        for _, w in self.windows:
            assert isinstance(w, WindowCall)
            for e in (*w.args, *w.partition_by, *(o for o, _, _ in w.order_by)):
                if e not in self._fns:
                    self._fns[e] = compile_column(e, ctx.cancel)

    def finalize(self) -> Iterator[Batch]:
        batches = self.take_buffered()
        if not batches:
            return
        data = Batch.concat(batches)
        cache: dict[Expr, Column] = {}

        def col(e: Expr) -> Column:
            if e not in cache:
                cache[e] = self._fns[e](data)
            return cache[e]

        names, cols = list(data.names), list(data.columns)
        layouts: dict[tuple[object, ...], _Layout] = {}  # windows sharing PARTITION/ORDER BY
        for name, w in self.windows:
            assert isinstance(w, WindowCall)
            self.ctx.check_cancelled()
            names.append(name)
            cols.append(evaluate(w, col, data.num_rows, layouts, self.ctx.cancel))
        yield from chunks(Batch(tuple(names), tuple(cols)), self.ctx.batch_size)


# ---- layout of one window's sorted rows ------------------------------------------------------
class _Layout:
    """Sorted order plus, per sorted row, its partition [pstart, pend) and peer [qstart, qend)."""

    def __init__(self, w: WindowCall, col: Callable[[Expr], Column], n: int) -> None:
        pkeys = [sort_key(col(p), False, True) for p in w.partition_by]
        okeys = [sort_key(col(o), d, nf) for o, d, nf in w.order_by]
        keys = pkeys + okeys
        self.order = lexsort_indices(keys) if keys else np.arange(n, dtype=np.int64)
        self.n = n
        idx = np.arange(n, dtype=np.int64)
        self.idx = idx
        self.part_id, self.pstart, self.pend = _runs([k[self.order] for k in pkeys], n)
        self.peer_id, self.qstart, self.qend = _runs([k[self.order] for k in keys], n)

    def sorted_col(self, c: Column) -> Column:
        return c.take(self.order)


def _runs(keys: list[np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(run id, run start, run end) per row for runs of equal `keys` (already sorted)."""
    new = np.zeros(n, np.bool_)
    if n:
        new[0] = True
    for k in keys:
        new[1:] |= k[1:] != k[:-1]
    starts = np.flatnonzero(new)
    run = np.cumsum(new) - 1
    ends = np.append(starts[1:], n)
    return run, starts[run], ends[run]


def evaluate(w: WindowCall, col: Callable[[Expr], Column], n: int,
             layouts: dict[tuple[object, ...], _Layout] | None = None,
             cancel: threading.Event | None = None) -> Column:
    """One window call's result column, in input row order."""
    spec = (w.partition_by, w.order_by)
    lay = layouts.get(spec) if layouts is not None else None
    if lay is None:
        lay = _Layout(w, col, n)
        if layouts is not None:
            layouts[spec] = lay
    out = _sorted_result(w, lay, col, cancel)
    inverse = np.empty(n, np.int64)
    inverse[lay.order] = np.arange(n, dtype=np.int64)
    return out.take(inverse)


def _int_column(values: np.ndarray) -> Column:
    return Column(BIGINT, values.astype(np.int64))


_NATIVE = frozenset({"first_value", "last_value", "count", "min", "max", "sum", "avg"})


def _sorted_result(w: WindowCall, lay: _Layout, col: Callable[[Expr], Column],
                   cancel: threading.Event | None = None) -> Column:
    name, idx = w.name, lay.idx
    if name == "row_number":
        return _int_column(idx - lay.pstart + 1)
    if name == "rank":
        return _int_column(lay.qstart - lay.pstart + 1)
    if name == "dense_rank":
        return _int_column(lay.peer_id - lay.peer_id[lay.pstart] + 1)
    size = lay.pend - lay.pstart
    if name == "percent_rank":
        rank = (lay.qstart - lay.pstart).astype(np.float64)
        den = np.maximum(size - 1, 1).astype(np.float64)
        return Column(DOUBLE, np.where(size > 1, rank / den, 0.0))
    if name == "cume_dist":
        return Column(DOUBLE, (lay.qend - lay.pstart) / size.astype(np.float64))
    if name == "ntile":
        b = int(w.args[0].value)  # type: ignore[attr-defined]
        j = idx - lay.pstart
        q, r = size // b, size % b
        big = r * (q + 1)
        tail = r + (j - big) // np.maximum(q, 1)
        return _int_column(np.where(j < big, j // (q + 1), tail) + 1)
    if name in ("lag", "lead"):
        return _lag_lead(w, lay, col)
    assert w.frame is not None
    lo, hi = _frame_bounds(w.frame, lay)
    nonempty = hi > lo
    if name not in _NATIVE:  # COLLECT_LIST, PERCENTILE, BOOL_OR, .. by the registry aggregate
        return frame_aggregate(w, lay.sorted_col(col(w.args[0])), lo, hi, cancel)
    if name in ("first_value", "last_value"):
        values = lay.sorted_col(col(w.args[0]))
        pick = np.where(nonempty, lo if name == "first_value" else hi - 1, 0)
        return _take_valid(values, pick, nonempty)
    if name == "count":
        if not w.args:
            return _int_column(np.where(nonempty, hi - lo, 0))
        valid = lay.sorted_col(col(w.args[0])).validity
        if valid is None:
            return _int_column(np.where(nonempty, hi - lo, 0))
        pre = _prefix(valid.astype(np.int64))
        return _int_column(np.where(nonempty, pre[hi] - pre[lo], 0))
    values = lay.sorted_col(col(w.args[0]))
    if name in ("min", "max"):
        return _min_max(w, values, lo, hi, lay)
    return _sum_avg(w, values, lo, hi, lay)


def _frame_bounds(f: WindowFrame, lay: _Layout) -> tuple[np.ndarray, np.ndarray]:
    """Per sorted row, the frame as [lo, hi) clamped into the row's partition."""
    idx, ps, pe = lay.idx, lay.pstart, lay.pend

    def bound(b: tuple[str, int], is_end: bool) -> np.ndarray:
        kind, k = b
        if kind == "unbounded_preceding":
            return ps
        if kind == "unbounded_following":
            return pe
        if kind == "current_row":
            if f.kind == "range":
                return lay.qend if is_end else lay.qstart
            return idx + 1 if is_end else idx
        off = -k if kind == "preceding" else k
        return idx + off + (1 if is_end else 0)

    lo = np.clip(bound(f.start, False), ps, pe)
    hi = np.clip(bound(f.end, True), ps, pe)
    return lo, np.maximum(hi, lo)


def _prefix(values: np.ndarray) -> np.ndarray:
    out = np.zeros(len(values) + 1, dtype=values.dtype)
    if values.dtype == np.dtype(object):
        out[0] = 0
    np.cumsum(values, out=out[1:])
    return out


def _take_valid(values: Column, pick: np.ndarray, ok: np.ndarray) -> Column:
    taken = values.take(pick)
    valid = ok if taken.validity is None else (taken.validity & ok)
    return replace(taken, validity=None if valid.all() else valid)


def _lag_lead(w: WindowCall, lay: _Layout, col: Callable[[Expr], Column]) -> Column:
    value, off_lit, default = w.args
    off = int(off_lit.value)  # type: ignore[attr-defined]
    src = lay.idx - off if w.name == "lag" else lay.idx + off
    inside = (src >= lay.pstart) & (src < lay.pend)
    vec = Vec.from_column(lay.sorted_col(col(value)))
    pick = np.where(inside, src, 0)
    data = vec.data[pick] if len(vec.data) else vec.data.copy()
    valid = inside.copy() if vec.validity is None else (vec.validity[pick] & inside)
    assert isinstance(default, Literal)
    if default.value is not None and not inside.all():
        data = data.copy()
        data[~inside] = default.value
        valid[~inside] = True
    return Vec(w.type, data, None if valid.all() else valid).to_column()


def _min_max(w: WindowCall, values: Column, lo: np.ndarray, hi: np.ndarray,
             lay: _Layout) -> Column:
    n = lay.n
    codes, card = column_codes(values)
    valid = values.validity if values.validity is not None else np.ones(n, np.bool_)
    cardv = card - 1 if values.validity is not None and not values.validity.all() else card
    if values.validity is not None and values.validity.all():
        cardv = card
    rep = np.zeros(max(card, 1), np.int64)
    rep[codes] = np.arange(n, dtype=np.int64)
    # key: larger = better; -1 = NULL (loses to every value)
    key = np.where(valid, codes if w.name == "max" else cardv - 1 - codes, -1).astype(np.int64)
    nonempty = hi > lo
    f = w.frame
    assert f is not None
    if f.start[0] == "unbounded_preceding":
        span = cardv + 1
        acc = np.maximum.accumulate(key + 1 + lay.part_id * span) - lay.part_id * span - 1
        best = np.where(nonempty, acc[np.maximum(hi - 1, 0)], -1)
    elif f.end[0] == "unbounded_following":
        span = cardv + 1
        rpart = lay.part_id[::-1]
        top = int(lay.part_id[-1]) if n else 0
        shifted = key[::-1] + 1 + (top - rpart) * span
        acc = (np.maximum.accumulate(shifted) - (top - rpart) * span - 1)[::-1]
        best = np.where(nonempty, acc[np.minimum(lo, n - 1)], -1)
    else:
        best = _sparse_max(key, lo, hi)
    found = best >= 0
    code = np.where(found, best if w.name == "max" else cardv - 1 - best, 0)
    pick = rep[code]
    return _take_valid(values, pick, found)


def _sparse_max(key: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """max(key[lo:hi]) per row (-1 for empty frames) with a sparse table of log2(width) levels."""
    length = hi - lo
    width = int(length.max()) if len(length) else 0
    if width == 0:
        return np.full(len(lo), -1, np.int64)
    levels = [key]
    while (1 << len(levels)) <= width:
        prev, step = levels[-1], 1 << (len(levels) - 1)
        nxt = prev.copy()
        nxt[:-step] = np.maximum(prev[:-step], prev[step:])
        levels.append(nxt)
    table = np.stack(levels)
    safe = np.maximum(length, 1)
    j = np.floor(np.log2(safe)).astype(np.int64)
    j = np.where((1 << (j + 1)) <= safe, j + 1, j)  # guard float rounding
    j = np.where((1 << j) > safe, j - 1, j)
    n = len(key)
    a = table[j, np.minimum(lo, n - 1)]
    b = table[j, np.clip(hi - (1 << j), 0, n - 1)]
    return np.where(length > 0, np.maximum(a, b), -1)


_LOCAL_CUMSUM_PARTITIONS = 4096


def _float_frame_sums(vals: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                      lay: _Layout) -> np.ndarray:
    """Float sums over [lo, hi) from partition-local running sums, so a running total adds up
    in row order as Doris does and does not inherit rounding from earlier partitions (falls
    back to one global prefix sum when there are very many partitions)."""
    starts = np.flatnonzero(lay.idx == lay.pstart)
    if len(starts) > _LOCAL_CUMSUM_PARTITIONS:
        pre = _prefix(vals)
        return pre[hi] - pre[lo]
    run = np.empty(len(vals), np.float64)  # run[i] = sum of vals[pstart..i]
    ends = np.append(starts[1:], len(vals))
    for a, b in zip(starts.tolist(), ends.tolist()):
        np.cumsum(vals[a:b], out=run[a:b])
    nonempty = hi > lo
    upto = np.where(nonempty, run[np.maximum(hi - 1, 0)], 0.0)
    before = np.where(nonempty & (lo > lay.pstart), run[np.maximum(lo - 1, 0)], 0.0)
    return upto - before


def _sum_avg(w: WindowCall, values: Column, lo: np.ndarray, hi: np.ndarray,
             lay: _Layout) -> Column:
    vec = Vec.from_column(values)
    t = vec.type
    valid = vec.validity if vec.validity is not None else np.ones(len(vec.data), np.bool_)
    data = vec.data
    if t.is_float or (not t.is_decimal and not t.is_integer and data.dtype.kind == "f"):
        vals = np.where(valid, data.astype(np.float64), 0.0)
    elif data.dtype == np.dtype(object):
        vals = object_array([int(x) if ok else 0 for x, ok in zip(data.tolist(), valid.tolist())])
    else:
        vals = np.where(valid, data.astype(np.int64), 0)
        if len(vals) and float(np.abs(vals).max()) * len(vals) >= 2.0**62:
            vals = object_array([int(x) for x in vals.tolist()])
    cnt_pre = _prefix(valid.astype(np.int64))
    if vals.dtype.kind == "f":
        sums = _float_frame_sums(vals, lo, hi, lay)
    else:
        pre = _prefix(vals)
        sums = pre[hi] - pre[lo]
    counts = cnt_pre[hi] - cnt_pre[lo]
    if w.name == "sum":
        return _sum_final((sums, counts > 0), w.type).to_column()
    if t.is_decimal:
        scale = np.full(len(sums), t.scale, np.int64)
        return _avg_final((sums, counts, scale), w.type).to_column()
    fsums = sums.astype(np.float64) if sums.dtype != np.dtype(object) else np.array(
        [float(x) for x in sums.tolist()], np.float64)
    return _avg_final((fsums, counts, np.zeros(len(sums), np.int64)), w.type).to_column()
