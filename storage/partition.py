"""Partition routing: which partition of a table each row belongs to.

RANGE partitions hold `[lower, upper)` (lower None = the type minimum, upper None = MAXVALUE)
and compare multi-column keys lexicographically, a bound with fewer values than columns being
padded with the minimum (Doris `PartitionKey`). LIST partitions hold explicit value tuples.
NULL partition values sort lowest, so they land in the partition that starts at the minimum.
An unpartitioned table has a single partition that takes every row.
Upstream: Doris `RangePartitionItem` / `ListPartitionItem`, BE `VOlapTablePartitionParam`.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from functools import total_ordering
from typing import overload

import numpy as np

from storage.batch import Batch
from storage.catalog.meta import PartitionMeta, PartitionType, TableMeta
from storage.types import DataType


@total_ordering
class _Min:
    """Sorts below every value (NULL and missing trailing bound values)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Min)

    def __lt__(self, other: object) -> bool:
        return not isinstance(other, _Min)

    def __hash__(self) -> int:
        return 0


MIN = _Min()


@total_ordering
class _Key:
    """A partition key tuple where each element is a physical value or MIN."""

    __slots__ = ("items",)

    def __init__(self, items: tuple[object, ...]) -> None:
        self.items = items

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and self.items == other.items

    def __lt__(self, other: _Key) -> bool:
        for a, b in zip(self.items, other.items):
            if a == b:
                continue
            if isinstance(a, _Min):
                return True
            if isinstance(b, _Min):
                return False
            return a < b  # type: ignore[operator]
        return False

    def __hash__(self) -> int:
        return hash(self.items)


def _int_item(value: object) -> int:
    """A partition bound's value of an integer column (TypeError for any other)."""
    if isinstance(value, (int, np.integer)):
        return int(value)
    raise TypeError(f"not an integer partition bound: {value!r}")


@overload
def bound_key(types: Sequence[DataType], texts: Sequence[str]) -> _Key: ...
@overload
def bound_key(types: Sequence[DataType], texts: Sequence[str] | None) -> _Key | None: ...
def bound_key(types: Sequence[DataType], texts: Sequence[str] | None) -> _Key | None:
    """Physical key of a bound text tuple; None stays None (MIN lower / MAXVALUE upper)."""
    if texts is None:
        return None
    items: list[object] = [t.to_physical(v) for t, v in zip(types, texts)]
    items += [MIN] * (len(types) - len(items))
    return _Key(tuple(items))


def key_of(values: Sequence[object]) -> _Key:
    """Key of physical partition values (None = NULL, which sorts lowest)."""
    return _Key(tuple(MIN if v is None else v for v in values))


class PartitionRouter:
    """Maps rows of a full-schema Batch to indexes into `partitions` (-1: no partition)."""

    def __init__(self, table: TableMeta, partitions: Sequence[PartitionMeta]) -> None:
        self.table = table
        self.partitions = list(partitions)
        self.columns = table.partition_info.columns
        self.types = [table.column(c).type for c in self.columns]
        ptype = table.partition_info.type
        self.kind = ptype
        if ptype is PartitionType.RANGE:
            order = sorted(
                range(len(self.partitions)),
                key=lambda i: bound_key(self.types, self.partitions[i].upper) or _Key((_Inf(),)),
            )
            self._order = order
            self._lowers = [bound_key(self.types, self.partitions[i].lower) for i in order]
            self._uppers = [bound_key(self.types, self.partitions[i].upper) for i in order]
            self._numeric = self._numeric_bounds()
        elif ptype is PartitionType.LIST:
            self._values: dict[tuple[object, ...], int] = {}
            for i, p in enumerate(self.partitions):
                for tup in p.list_values:
                    key = tuple(t.to_physical(v) for t, v in zip(self.types, tup))
                    self._values[key] = i

    def _numeric_bounds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool] | None:
        """For one integer-physical range column (INT, BIGINT, DATE, DATETIME, ...): the
        sorted finite uppers, the lowers (lowest int64 for MIN), the partition index per
        position and whether a MAXVALUE partition ends the list; None otherwise."""
        if len(self.types) != 1 or self.types[0].is_string or not self.partitions:
            return None
        if np.dtype(self.types[0].numpy_dtype).kind not in "iu":
            return None
        low = np.iinfo(np.int64).min
        try:
            uppers = [_int_item(u.items[0]) for u in self._uppers if u is not None]
            lowers = [low if lo is None or isinstance(lo.items[0], _Min)
                      else _int_item(lo.items[0]) for lo in self._lowers]
        except TypeError:
            return None
        return (np.asarray(uppers, dtype=np.int64), np.asarray(lowers, dtype=np.int64),
                np.asarray(self._order, dtype=np.int64), self._uppers[-1] is None)

    def _route_numeric(self, batch: Batch) -> np.ndarray:
        """`route` for one integer column, vectorised: a binary search of each value among the
        partition uppers, then the lower bound check (ranges may leave gaps)."""
        uppers, lowers, order, has_max = self._numeric  # type: ignore[misc]
        col = batch.column(self.columns[0])
        values = np.asarray(col.data, dtype=np.int64)
        pos = np.searchsorted(uppers, values, side="right")  # first partition whose upper > v
        if col.validity is not None:
            pos[~col.validity] = 0  # NULL sorts lowest: the first partition, if it starts at MIN
        npart = len(uppers) + (1 if has_max else 0)
        inside = pos < npart
        safe = np.minimum(pos, npart - 1)
        if col.validity is not None:
            above = np.where(col.validity, values >= lowers[safe],
                             lowers[safe] == np.iinfo(np.int64).min)
        else:
            above = values >= lowers[safe]
        return np.where(inside & above, order[safe], -1)

    def route(self, batch: Batch) -> np.ndarray:
        n = batch.num_rows
        if self.kind is PartitionType.UNPARTITIONED:
            return np.zeros(n, dtype=np.int64) if self.partitions else np.full(n, -1, np.int64)
        if self.kind is PartitionType.RANGE and self._numeric is not None:
            return self._route_numeric(batch)
        return self.route_rows(batch)

    def route_rows(self, batch: Batch) -> np.ndarray:
        """`route` one row at a time over Python values: any key type and column count (and
        the reference the vectorised path is tested against)."""
        n = batch.num_rows
        if self.kind is PartitionType.UNPARTITIONED:
            return np.zeros(n, dtype=np.int64) if self.partitions else np.full(n, -1, np.int64)
        cols = [batch.column(c).to_pylist() for c in self.columns]
        out = np.full(n, -1, dtype=np.int64)
        if self.kind is PartitionType.LIST:
            for r in range(n):
                out[r] = self._values.get(tuple(c[r] for c in cols), -1)
            return out
        uppers = self._uppers
        finite = [u for u in uppers if u is not None]
        for r in range(n):
            key = _Key(tuple(MIN if c[r] is None else c[r] for c in cols))
            pos = bisect.bisect_right(finite, key)  # first partition whose upper > key
            if pos >= len(uppers):
                continue
            lower = self._lowers[pos]
            if lower is None or not key < lower:
                out[r] = self._order[pos]
        return out


    def overlapping(self, lower: Sequence[str], upper: Sequence[str]) -> PartitionMeta | None:
        """A RANGE partition intersecting [lower, upper) (bound texts), if any (the bounds
        are parsed once, here: an AUTO load checks every range it creates)."""
        lo, hi = bound_key(self.types, lower), bound_key(self.types, upper)
        assert lo is not None and hi is not None
        for pos, i in enumerate(self._order):
            p_lo, p_hi = self._lowers[pos], self._uppers[pos]
            if (p_hi is None or lo < p_hi) and (p_lo is None or p_lo < hi):
                return self.partitions[i]
        return None

    def describe_misses(self, batch: Batch, rows: Sequence[int]) -> list[str]:
        """For rows no partition takes: the partitions nearest to each row's key, so a user
        sees at once whether the table lacks today's partition (the error Doris users meet
        after a dynamic partition scheduler silently stopped) or the value is simply wrong."""
        if not self.partitions:
            return ["the table has no partitions"] * len(rows)
        if self.kind is not PartitionType.RANGE:
            names = ", ".join(p.name for p in self.partitions[:5])
            more = ", ..." if len(self.partitions) > 5 else ""
            return [f"no partition lists this value (partitions: {names}{more})"] * len(rows)
        cols = [batch.column(c).to_pylist() for c in self.columns]
        out = []
        for r in rows:
            key = _Key(tuple(MIN if c[r] is None else c[r] for c in cols))
            below = above = None
            for pos, i in enumerate(self._order):
                upper, lower = self._uppers[pos], self._lowers[pos]
                if upper is not None and not key < upper:
                    below = i  # ends at or before the key; the last such is the nearest
                elif lower is not None and key < lower and above is None:
                    above = i
            parts = []
            if below is not None:
                parts.append(f"{self._span(below)} below")
            if above is not None:
                parts.append(f"{self._span(above)} above")
            out.append("nearest partitions: " + ", ".join(parts))
        return out

    def _span(self, index: int) -> str:
        p = self.partitions[index]
        lower = ", ".join(p.lower) if p.lower is not None else "MIN"
        upper = ", ".join(p.upper) if p.upper is not None else "MAXVALUE"
        return f"{p.name} [{lower}, {upper})"


@total_ordering
class _Inf:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Inf)

    def __lt__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return 1
