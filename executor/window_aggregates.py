"""Any registry aggregate as a window function (COLLECT_LIST, PERCENTILE, COUNT_IF, BOOL_OR,
MAX_BY, GROUP_CONCAT, STDDEV, HISTOGRAM, ... OVER (..)), for the window operator
(executor/window.py), which keeps its own vectorised SUM/AVG/MIN/MAX/COUNT paths.

Rows that share a frame [lo, hi) share a result, so each distinct frame is aggregated once:
the frames' rows are gathered (a row in k frames is gathered k times) with the frame as the
group code, and the aggregate's own partial -> final functions (sql/functions) compute every
frame of a chunk in one call. A whole-partition frame touches each row once; a running frame
(UNBOUNDED PRECEDING .. CURRENT ROW) over a partition of m distinct peers gathers about m²/2
rows, done in chunks of at most `_GATHER_LIMIT` gathered rows to bound memory.
Upstream: Doris `VAnalyticEvalNode` (aggregate functions over frames).
"""

from __future__ import annotations

import numpy as np

from sql.binder.expressions import Literal, WindowCall
from sql.functions import AggregateFunction, aggregate_function
from sql.functions.vector import Vec
from storage.batch import Column

_GATHER_LIMIT = 1 << 20  # gathered rows per partial() call


def window_function(w: WindowCall) -> AggregateFunction:
    fn = aggregate_function(w.name)
    assert fn is not None, w.name
    if fn.bind is not None:  # constant arguments after the value (PERCENTILE's p, separators)
        fn = fn.bind(tuple(a.value if isinstance(a, Literal) else None for a in w.args[1:]))
    return fn


def frame_aggregate(w: WindowCall, values: Column, lo: np.ndarray, hi: np.ndarray) -> Column:
    """`w`'s aggregate over the sorted rows' frames [lo, hi), one value per sorted row."""
    fn = window_function(w)
    n = len(lo)
    vec = Vec.from_column(values)
    key = lo.astype(np.int64) * (n + 1) + hi.astype(np.int64)
    frames, frame_of_row = np.unique(key, return_inverse=True)
    flo, fhi = frames // (n + 1), frames % (n + 1)
    sizes = fhi - flo
    parts: list[Column] = []
    start = 0
    while start < len(frames):
        stop = _chunk_end(sizes, start)
        parts.append(_aggregate_frames(fn, w, vec, flo[start:stop], sizes[start:stop]))
        start = stop
    results = parts[0] if len(parts) == 1 else Column.concat(parts)
    return results.take(frame_of_row.reshape(-1))


def _chunk_end(sizes: np.ndarray, start: int) -> int:
    """The end of the chunk of frames from `start` gathering at most the limit (>= 1 frame)."""
    total = np.cumsum(sizes[start:])
    within = int(np.searchsorted(total, _GATHER_LIMIT, side="right"))
    return start + max(within, 1)


def _aggregate_frames(fn: AggregateFunction, w: WindowCall, vec: Vec, lo: np.ndarray,
                      sizes: np.ndarray) -> Column:
    frames = len(lo)
    total = int(sizes.sum())
    offsets = np.cumsum(sizes) - sizes
    rows = np.repeat(lo - offsets, sizes) + np.arange(total, dtype=np.int64)
    codes = np.repeat(np.arange(frames, dtype=np.int64), sizes)
    valid = None if vec.validity is None else vec.validity[rows]
    state = fn.partial(Vec(vec.type, vec.data[rows], valid), codes, frames)
    return fn.final(state, w.type).to_column().with_type(w.type)
