"""Ordinal index: for one column, which data page holds which rows and where it is in the file.

Seed 003 section 3 (Doris `OrdinalIndexWriter/Reader`): one entry per data page with the page's
first row (ordinal), its file offset and its stored size. Other indexes and the scan name pages by
number and rows by row id; only this index knows byte positions. Stored as one ORDINAL index page:
int64 first_rows[n], int64 offsets[n], int64 sizes[n].
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(slots=True)
class OrdinalIndexBuilder:
    first_rows: list[int] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)

    def add(self, first_row: int, offset: int, size: int) -> None:
        self.first_rows.append(first_row)
        self.offsets.append(offset)
        self.sizes.append(size)

    def finish(self) -> bytes:
        return b"".join(
            np.asarray(a, dtype=np.int64).tobytes()
            for a in (self.first_rows, self.offsets, self.sizes)
        )


@dataclass(frozen=True, slots=True, eq=False)
class OrdinalIndex:
    first_rows: np.ndarray  # int64, strictly increasing, first is 0
    offsets: np.ndarray  # int64 file offsets of the pages
    sizes: np.ndarray  # int64 stored sizes of the pages (frame included)
    num_rows: int  # rows in the segment: the end of the last page

    @staticmethod
    def parse(body: bytes, num_pages: int, num_rows: int, data_end: int) -> OrdinalIndex:
        """Decode and validate (pages cover [0, num_rows) in order, inside the data region)."""
        if len(body) != 24 * num_pages:
            raise ValueError("ordinal index has the wrong size")
        arrays = np.frombuffer(body, dtype=np.int64).reshape(3, num_pages).copy()
        first_rows, offsets, sizes = arrays
        if num_pages == 0:
            if num_rows:
                raise ValueError("column has rows but no pages")
        elif (
            first_rows[0] != 0
            or np.any(np.diff(first_rows) <= 0)
            or first_rows[-1] >= num_rows
            or np.any(sizes <= 0)
            or np.any(offsets < 0)
            or np.any(offsets + sizes > data_end)
        ):
            raise ValueError("ordinal index entries are inconsistent")
        return OrdinalIndex(first_rows, offsets, sizes, num_rows)

    @property
    def num_pages(self) -> int:
        return len(self.first_rows)

    def page_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Row range [starts[p], stops[p]) of every page."""
        stops = np.append(self.first_rows[1:], self.num_rows)
        return self.first_rows, stops

    def page_rows(self, page: int) -> tuple[int, int]:
        stop = int(self.first_rows[page + 1]) if page + 1 < self.num_pages else self.num_rows
        return int(self.first_rows[page]), stop

    def page_of(self, rows: np.ndarray) -> np.ndarray:
        """Page number holding each row id."""
        return np.searchsorted(self.first_rows, rows, side="right") - 1

    def pages_between(self, start: int, stop: int) -> range:
        """Pages overlapping rows [start, stop) (stop > start)."""
        first = int(np.searchsorted(self.first_rows, start, side="right")) - 1
        last = int(np.searchsorted(self.first_rows, stop - 1, side="right")) - 1
        return range(first, last + 1)
