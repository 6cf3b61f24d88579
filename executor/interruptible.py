"""Interruptible evaluation of per-row scalar functions: KILL QUERY and query_timeout reach a
function call in the middle of a batch, not only between batches.

Operators check the cancel token between batches (executor/operator.py), but one batch is up to
64K rows, and many scalar functions (string, regex, date functions) loop over rows in Python:
a slow function makes one batch take minutes. `call_in_chunks` evaluates such a call on slices
of the batch and checks the token between slices. Slices are sized by measured time, not rows:
the first slice is small; each next one is sized so it takes about `CHECK_INTERVAL_S`, so a cheap
vectorised function still runs in one or two calls per batch while a slow one is checked
every ~50 ms. A single row cannot be interrupted (one RE2 match is linear in its input anyway).

Functions whose value depends on the whole batch (RAND's seeded sequence) opt out with
`ScalarFunction.row_independent = False`. Upstream analogue: Doris checks
`RuntimeState::is_cancelled()` inside long-running expression loops.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np

from sql.errors import QueryCancelled
from sql.functions import EvalEnv
from sql.functions.vector import Vec

CHECK_INTERVAL_S = 0.05
FIRST_SLICE_ROWS = 1024
MIN_SLICE_ROWS = 64

Impl = Callable[[list[Vec], EvalEnv], Vec]


def _slice(v: Vec, start: int, stop: int) -> Vec:
    return Vec(v.type, v.data[start:stop], None if v.validity is None else v.validity[start:stop])


def _concat(parts: list[Vec]) -> Vec:
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    datas = [p.data for p in parts]
    if any(d.dtype == np.dtype(object) for d in datas) and not all(
            d.dtype == np.dtype(object) for d in datas):
        datas = [d.astype(object) for d in datas]
    data = np.concatenate(datas)
    if all(p.validity is None for p in parts):
        valid = None
    else:
        valid = np.concatenate([np.ones(len(p), np.bool_) if p.validity is None
                                else np.asarray(p.validity, np.bool_) for p in parts])
    return Vec(first.type, data, valid)


def call_in_chunks(impl: Impl, args: list[Vec], n: int,
                   cancel: threading.Event | None) -> Vec:
    """`impl(args)` over `n` rows, checking `cancel` between time-sized slices."""
    if cancel is None or n <= FIRST_SLICE_ROWS or not args:
        return impl(args, EvalEnv(n, cancel))
    parts: list[Vec] = []
    start, size = 0, FIRST_SLICE_ROWS
    while start < n:
        if cancel.is_set():
            raise QueryCancelled()
        stop = min(n, start + size)
        t0 = time.perf_counter()
        parts.append(impl([_slice(a, start, stop) for a in args], EvalEnv(stop - start, cancel)))
        spent = time.perf_counter() - t0
        rows = stop - start
        start = stop
        # rows that take about CHECK_INTERVAL_S at the rate just measured
        size = n if spent <= 0 else max(MIN_SLICE_ROWS, int(rows * CHECK_INTERVAL_S / spent))
    if cancel.is_set():
        raise QueryCancelled()
    return _concat(parts)
