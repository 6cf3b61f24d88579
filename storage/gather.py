"""Gather kernel for var-len columns (offsets + bytes): rows `indices` of a column, in order.

The numpy formulation (repeat + ramp + fancy index, `gather_varlen_reference`) allocates
several arrays per byte; the numba loop copies each row's bytes once. Used by `Column.take`,
the hot path of join output, late materialisation and the per-tablet split of a load batch.

Rows are copied in whole 8-byte chunks: a fixed 8-byte body compiles to one load and one store,
where a byte loop of the row's own length costs a mispredicted branch per row (short strings of
mixed lengths, e.g. '1-URGENT' / 'MAIL'). A chunk may run past the row's end; the bytes it
over-writes belong to the next rows, which are copied afterwards, so the output is exact. Rows
whose chunks would read past the source or write past the output (the last few) use the byte loop.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _gather(offsets, data, indices):  # type: ignore[no-untyped-def]
    n = indices.shape[0]
    out_offsets = np.empty(n + 1, np.int64)
    out_offsets[0] = 0
    total = 0
    for k in range(n):
        i = indices[k]
        total += offsets[i + 1] - offsets[i]
        out_offsets[k + 1] = total
    out = np.empty(total, np.uint8)
    size = data.shape[0]
    for k in range(n):
        i = indices[k]
        a = offsets[i]
        pos = out_offsets[k]
        length = out_offsets[k + 1] - pos  # sequential, where offsets[i + 1] is a random read
        span = ((length + 7) >> 3) << 3
        if a + span <= size and pos + span <= total:
            for c in range(0, span, 8):
                for j in range(8):
                    out[pos + c + j] = data[a + c + j]
        else:
            for j in range(length):
                out[pos + j] = data[a + j]
    return out_offsets, out


def gather_varlen(offsets: np.ndarray, data: np.ndarray,
                  indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, bytes) of rows `indices` (int64) of a var-len column."""
    return _gather(offsets.astype(np.int64, copy=False), data, indices)


def gather_varlen_reference(offsets: np.ndarray, data: np.ndarray,
                            indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    starts = offsets[:-1][indices]
    lengths = offsets[1:][indices] - starts
    out_offsets = np.zeros(len(indices) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    if len(indices) == 0:
        return out_offsets, np.zeros(0, np.uint8)
    row_of_byte = np.repeat(np.arange(len(indices)), lengths)
    ramp = np.arange(out_offsets[-1]) - out_offsets[:-1][row_of_byte]
    return out_offsets, data[starts[row_of_byte] + ramp]
