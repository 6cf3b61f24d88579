"""RowRanges: a sorted set of disjoint row-id intervals [start, stop) within one segment.

Doris `RowRanges`: the short key index produces them from key ranges, zone maps intersect them
with the rows of the pages they keep, and the scan walks them in windows of at most one batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np


class RowRanges:
    __slots__ = ("starts", "stops")

    def __init__(self, starts: np.ndarray, stops: np.ndarray) -> None:
        self.starts = starts  # int64, sorted, disjoint, non-adjacent, non-empty intervals
        self.stops = stops

    @staticmethod
    def full(n: int) -> RowRanges:
        if n <= 0:
            return RowRanges.of(())
        return RowRanges(np.array([0], np.int64), np.array([n], np.int64))

    @staticmethod
    def of(pairs: Iterable[tuple[int, int]]) -> RowRanges:
        """Normalize any intervals: drop empty ones, sort, merge overlapping and adjacent ones."""
        merged: list[list[int]] = []
        for a, b in sorted((int(a), int(b)) for a, b in pairs if b > a):
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        arr = np.asarray(merged, dtype=np.int64).reshape(-1, 2)
        return RowRanges(arr[:, 0].copy(), arr[:, 1].copy())

    @staticmethod
    def from_pages(starts: np.ndarray, stops: np.ndarray, keep: np.ndarray) -> RowRanges:
        """The rows of the kept pages (page row bounds `starts`/`stops`, contiguous pages)."""
        if not keep.any():
            return RowRanges.of(())
        k = keep.astype(np.int8)
        edges = np.diff(np.concatenate(([0], k, [0])))
        first = np.flatnonzero(edges == 1)  # first kept page of each run
        last = np.flatnonzero(edges == -1) - 1  # last kept page of each run
        return RowRanges(starts[first].astype(np.int64), stops[last].astype(np.int64))

    @property
    def count(self) -> int:
        if len(self.starts) == 1:  # the usual case, asked per segment and per window
            return int(self.stops[0]) - int(self.starts[0])
        return int((self.stops - self.starts).sum())

    def __len__(self) -> int:
        return len(self.starts)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, RowRanges)
            and np.array_equal(self.starts, other.starts)
            and np.array_equal(self.stops, other.stops)
        )

    def __repr__(self) -> str:
        return f"RowRanges({list(zip(self.starts.tolist(), self.stops.tolist()))})"

    def intersect(self, other: RowRanges) -> RowRanges:
        out: list[tuple[int, int]] = []
        a_s, a_e, b_s, b_e = (
            x.tolist() for x in (self.starts, self.stops, other.starts, other.stops)
        )
        i = j = 0
        while i < len(a_s) and j < len(b_s):
            lo, hi = max(a_s[i], b_s[j]), min(a_e[i], b_e[j])
            if hi > lo:
                out.append((lo, hi))
            if a_e[i] < b_e[j]:
                i += 1
            else:
                j += 1
        return RowRanges.of(out)

    def overlaps(self, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
        """Bool per interval [starts[k], stops[k]): does it share a row with these ranges?"""
        if len(self.starts) == 0:
            return np.zeros(len(starts), np.bool_)
        idx = np.searchsorted(self.starts, stops, side="left") - 1
        ok = idx >= 0
        return ok & (self.stops[np.maximum(idx, 0)] > starts)

    def row_ids(self) -> np.ndarray:
        if len(self.starts) == 1:
            return np.arange(self.starts[0], self.stops[0], dtype=np.int64)
        lengths = self.stops - self.starts
        base = np.repeat(self.starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
        return base + np.arange(int(lengths.sum()), dtype=np.int64)

    def take(self, positions: np.ndarray) -> np.ndarray:
        """The row ids at `positions` (0-based, into `row_ids()`): `row_ids()[positions]`
        without materialising every row id of a single range (a window of 64k rows)."""
        if len(self.starts) == 1:  # one pass (flatnonzero's positions are int64 already)
            return positions.astype(np.int64, copy=False) + int(self.starts[0])
        return self.row_ids()[positions]

    def windows(self, max_rows: int) -> Iterator[RowRanges]:
        """Consecutive pieces of at most `max_rows` rows each, in row order."""
        if len(self.starts) == 1:  # the common case: one range cut into whole windows
            a, b = int(self.starts[0]), int(self.stops[0])
            for lo in range(a, b, max_rows):
                yield RowRanges(np.array([lo], np.int64),
                                np.array([min(lo + max_rows, b)], np.int64))
            return
        starts: list[int] = []
        stops: list[int] = []
        room = max_rows
        for a, b in zip(self.starts.tolist(), self.stops.tolist()):
            while a < b:
                take = min(b - a, room)
                starts.append(a)
                stops.append(a + take)
                a += take
                room -= take
                if room == 0:
                    yield RowRanges(np.asarray(starts, np.int64), np.asarray(stops, np.int64))
                    starts, stops, room = [], [], max_rows
        if starts:
            yield RowRanges(np.asarray(starts, np.int64), np.asarray(stops, np.int64))


def sorted_span(data: np.ndarray, lo: tuple[int, bool] | None,
                hi: tuple[int, bool] | None) -> tuple[int, int]:
    """[start, stop) of the rows of sorted integer `data` inside the bounds ((value,
    inclusive), None: unbounded), by binary search. The constants are cast to the column's
    own dtype first (clamped to its range): numpy would otherwise convert the whole column
    to the constant's type (int32 -> int64, a copy of every row) for each search."""
    n = len(data)
    info = np.iinfo(data.dtype)
    start, stop = 0, n
    if lo is not None:
        v, inclusive = lo
        if v > info.max or (v == info.max and not inclusive):
            return 0, 0
        if v >= info.min:
            start = int(np.searchsorted(data, data.dtype.type(v),
                                        side="left" if inclusive else "right"))
    if hi is not None:
        v, inclusive = hi
        if v < info.min or (v == info.min and not inclusive):
            return 0, 0
        if v <= info.max:
            stop = int(np.searchsorted(data, data.dtype.type(v),
                                       side="right" if inclusive else "left"))
    return start, max(start, stop)
