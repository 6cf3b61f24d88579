"""Any registry aggregate as a window function (COLLECT_LIST, PERCENTILE, COUNT_IF, BOOL_OR,
MAX_BY, GROUP_CONCAT, STDDEV, HISTOGRAM, ... OVER (..)), for the window operator
(executor/window.py), which keeps its own vectorised SUM/AVG/MIN/MAX/COUNT paths.

Rows that share a frame [lo, hi) share a result, so each distinct frame is computed once, with
the aggregate's own partial -> merge -> final functions (sql/functions), all frames of the
window in one call each (see `frame_aggregate`). A whole-partition or running frame reads each
row once (plus log2(frames) merge rounds over the states); a sliding ROWS frame of width k
reads each row k times.
Upstream: Doris `VAnalyticEvalNode` (aggregate functions over frames).
"""

from __future__ import annotations

import threading

import numpy as np

from sql.binder.expressions import Literal, WindowCall
from sql.errors import QueryCancelled
from sql.functions import AggregateFunction, aggregate_function
from sql.functions.vector import Vec
from storage.batch import Column


def window_function(w: WindowCall) -> AggregateFunction:
    fn = aggregate_function(w.name)
    assert fn is not None, w.name
    if fn.bind is not None:  # constant arguments after the value (PERCENTILE's p, separators)
        fn = fn.bind(tuple(a.value if isinstance(a, Literal) else None for a in w.args[1:]))
    return fn


def frame_aggregate(w: WindowCall, values: Column, lo: np.ndarray, hi: np.ndarray,
                    cancel: threading.Event | None = None) -> Column:
    """`w`'s aggregate over the sorted rows' frames [lo, hi), one value per sorted row.

    Distinct frames that share a start are nested: [lo, h1) within [lo, h2) .. So each start's
    rows are cut into segments between consecutive ends, every segment is aggregated once
    (partial), and each frame's state is the merge of its start's segments up to it, by a
    Hillis-Steele prefix scan of `merge` (log2(frames per start) rounds, earlier segments
    first, so order-keeping aggregates like COLLECT_LIST keep row order). A running frame
    (UNBOUNDED PRECEDING .. CURRENT ROW) thus reads each row once, not once per frame."""
    fn = window_function(w)
    n = len(lo)
    vec = Vec.from_column(values)
    key = lo.astype(np.int64) * (n + 1) + hi.astype(np.int64)
    frames, frame_of_row = np.unique(key, return_inverse=True)  # sorted by (lo, hi)
    flo, fhi = frames // (n + 1), frames % (n + 1)
    count = len(frames)
    first = np.ones(count, np.bool_)
    first[1:] = flo[1:] != flo[:-1]
    group_start = np.maximum.accumulate(np.where(first, np.arange(count), 0))
    seg_lo = np.where(first, flo, np.concatenate(([0], fhi[:-1])))
    sizes = np.maximum(fhi - seg_lo, 0)
    offsets = np.cumsum(sizes) - sizes
    rows = np.repeat(seg_lo - offsets, sizes) + np.arange(int(sizes.sum()), dtype=np.int64)
    codes = np.repeat(np.arange(count, dtype=np.int64), sizes)
    valid = None if vec.validity is None else vec.validity[rows]
    state = fn.partial(Vec(vec.type, vec.data[rows], valid), codes, count)
    position = np.arange(count, dtype=np.int64)
    shift = 1
    while shift < count and (position - group_start >= shift).any():
        if cancel is not None and cancel.is_set():
            raise QueryCancelled()
        takes = np.flatnonzero(position - group_start >= shift)
        merged_codes = np.concatenate((takes, position))
        state = fn.merge(tuple(np.concatenate((a[takes - shift], a)) for a in state),
                         merged_codes, count)
        shift *= 2
    results = fn.final(state, w.type).to_column().with_type(w.type)
    return results.take(frame_of_row.reshape(-1))
