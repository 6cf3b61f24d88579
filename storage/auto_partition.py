"""AUTO PARTITION: the partitions a load creates for rows no partition takes (Doris 2.1).

`missing_partitions` computes, from the rows a table's router left unplaced, the partitions
Doris would create: for AUTO RANGE (date_trunc(col, unit)) one `[date_trunc(v), next unit
start)` per distinct truncated value, named `p` + the lower bound as `yyyyMMddHHmmss`; for
AUTO LIST one partition per distinct value tuple, named `p` + each value followed by its
length, with characters other than letters and digits written as hex code points (Doris
`PartitionExprUtil`).

`AutoPartitions` (one per engine) hands the load the PartitionMeta and tablets of each such
partition without publishing them: they become visible only with the load's publish
(storage/txn.py `publish`), in the same catalog transaction, so a failed load leaves no new
partition. Two running loads that need the same partition get the same ids (reserved under
the catalog lock, refcounted until both finish): the first to publish adds the partition,
the second only writes to it, and if the first fails the second still adds it.
Upstream: Doris `PartitionExprUtil.getNonExistPartitionAddClause`, BE `VRowDistribution`.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from storage.batch import Batch
from storage.catalog.meta import (
    MaterializedIndexMeta,
    PartitionMeta,
    PartitionType,
    TableMeta,
    TabletMeta,
)
from storage.engine import StorageEngine
from storage.errors import DorisError
from storage.per_engine import PerEngine
from storage.types import TypeKind

MAX_LIST_NAME_LENGTH = 50


@dataclass(frozen=True, slots=True)
class NewPartition:
    """A partition a load needs: its name and bounds (RANGE) or value tuple (LIST)."""

    name: str
    lower: tuple[str, ...] | None = None
    upper: tuple[str, ...] | None = None
    values: tuple[tuple[str | None, ...], ...] = ()


def trunc_bounds(value: dt.date | dt.datetime, unit: str) -> tuple[dt.datetime, dt.datetime]:
    """[date_trunc(value, unit), start of the next unit) as datetimes."""
    if not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    if unit == "year":
        lo = dt.datetime(value.year, 1, 1)
        return lo, lo.replace(year=lo.year + 1)
    if unit in ("quarter", "month"):
        months = 3 if unit == "quarter" else 1
        first = (value.month - 1) // months * months + 1
        lo = dt.datetime(value.year, first, 1)
        nxt = lo.month - 1 + months
        return lo, dt.datetime(lo.year + nxt // 12, nxt % 12 + 1, 1)
    if unit == "week":  # weeks start on Monday (Doris date_trunc)
        lo = dt.datetime(value.year, value.month, value.day) - dt.timedelta(days=value.weekday())
        return lo, lo + dt.timedelta(days=7)
    step = {"day": dt.timedelta(days=1), "hour": dt.timedelta(hours=1),
            "minute": dt.timedelta(minutes=1), "second": dt.timedelta(seconds=1)}[unit]
    fields = {"day": 3, "hour": 4, "minute": 5, "second": 6}[unit]
    parts = (value.year, value.month, value.day, value.hour, value.minute, value.second)
    lo = dt.datetime(*parts[:fields])  # type: ignore[arg-type]
    return lo, lo + step


def trunc_starts(physical: np.ndarray, is_date: bool, unit: str) -> np.ndarray:
    """date_trunc of DATE (days since 1970-01-01) or DATETIME (microseconds) physical values,
    as microseconds since 1970-01-01; `trunc_bounds` is the per-value reference."""
    moments = physical.astype(np.int64).astype("datetime64[D]" if is_date else "datetime64[us]")
    if unit == "quarter":
        months = moments.astype("datetime64[M]").astype(np.int64)
        out = (months - months % 3).astype("datetime64[M]")  # 1970-01 is month 0, a Q1 start
    elif unit == "week":
        days = moments.astype("datetime64[D]").astype(np.int64)
        out = (days - (days + 3) % 7).astype("datetime64[D]")  # 1970-01-01 was a Thursday
    else:
        step = {"year": "Y", "month": "M", "day": "D", "hour": "h", "minute": "m",
                "second": "s"}[unit]
        out = moments.astype(f"datetime64[{step}]")
    return out.astype("datetime64[us]").astype(np.int64)


def _utf16_units(text: str) -> list[int]:
    """The string as Java sees it: UTF-16 code units (a character past U+FFFF is two)."""
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i:i + 2], "little") for i in range(0, len(data), 2)]


def java_length(text: str) -> int:
    """Java's String.length(): UTF-16 code units (Doris appends it to each LIST value)."""
    return len(_utf16_units(text))


def format_partition_value(text: str) -> str:
    """Doris 2.1 `PartitionExprUtil.getFormatPartitionValue`: ASCII letters and digits kept,
    every other UTF-16 unit written as the hex of `codePointAt` there (a character past U+FFFF
    gives its code point, then its low surrogate); a leading '-' adds a '_' first."""
    units = _utf16_units(text)
    out = ["_"] if text.startswith("-") else []
    for i, unit in enumerate(units):
        ch = chr(unit)
        if ch.isascii() and ch.isalnum():
            out.append(ch)
            continue
        point = unit
        if 0xD800 <= unit <= 0xDBFF and i + 1 < len(units) and 0xDC00 <= units[i + 1] <= 0xDFFF:
            point = 0x10000 + ((unit - 0xD800) << 10) + (units[i + 1] - 0xDC00)
        out.append(format(point, "x"))
    return "".join(out)


def list_partition_name(values: Sequence[str | None], has_string_column: bool = True) -> str:
    """`p` + each value followed by its Java length (`X` for NULL), formatted; over 50
    characters fails the load when a partition column is a string (Doris 2.1)."""
    joined = "".join("X" if v is None else f"{v}{java_length(v)}" for v in values)
    name = "p" + format_partition_value(joined)
    if has_string_column and len(name) > MAX_LIST_NAME_LENGTH:
        raise DorisError("Partition name's length is over limit of 50. abort to create.")
    return name


def _bound_text(kind: TypeKind, moment: dt.datetime) -> str:
    return moment.date().isoformat() if kind is TypeKind.DATE \
        else moment.strftime("%Y-%m-%d %H:%M:%S")


def missing_partitions(table: TableMeta, batch: Batch, unplaced: np.ndarray) -> list[NewPartition]:
    """The partitions to create for the rows at `unplaced` (row indexes), in name order."""
    info = table.partition_info
    types = [table.column(c).type for c in info.columns]
    cols = [batch.column(c).filter(_mask(batch.num_rows, unplaced)) for c in info.columns]
    if info.type is PartitionType.RANGE:
        kind = types[0].kind
        data = np.asarray(cols[0].data)
        if cols[0].validity is not None:
            data = data[cols[0].validity]
        # truncate vectorised first: a load of a million distinct timestamps needs few ranges
        starts = np.unique(trunc_starts(data, kind is TypeKind.DATE, info.auto_unit or "day"))
        out: dict[str, NewPartition] = {}
        for start in starts.tolist():
            value = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(start))
            try:
                lo, hi = trunc_bounds(value, info.auto_unit or "day")
            except (ValueError, OverflowError):  # the next unit starts past 9999-12-31
                raise DorisError(f"Cannot create an auto partition for {value}: the range "
                                 "ends past the largest date") from None
            name = "p" + lo.strftime("%Y%m%d%H%M%S")
            out.setdefault(name, NewPartition(name, (_bound_text(kind, lo),),
                                              (_bound_text(kind, hi),)))
        return sorted(out.values(), key=lambda p: p.name)
    rows = set(zip(*(c.to_pylist() for c in cols)))
    parts: dict[str, NewPartition] = {}
    for row in rows:  # a NULL value gets its own partition too (named with X: `pX`)
        texts = tuple(t.format_value(t.to_physical(v)) for t, v in zip(types, row))
        name = list_partition_name(texts, any(t.is_string for t in types))
        parts.setdefault(name, NewPartition(name, values=(texts,)))
    return sorted(parts.values(), key=lambda p: p.name)


def _mask(n: int, rows: np.ndarray) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    mask[rows] = True
    return mask


@dataclass
class _Reserved:
    partition: PartitionMeta
    tablets: tuple[TabletMeta, ...]
    holders: int = 0


@dataclass
class AutoPartitions:
    """Partitions reserved by running loads and not published yet, per (table id, name).
    Every method is called under the catalog lock."""

    engine: StorageEngine
    _reserved: dict[tuple[int, str], _Reserved] = field(default_factory=dict)

    @staticmethod
    def of(engine: StorageEngine) -> AutoPartitions:
        return _AUTO(engine)

    def reserve(self, table: TableMeta, need: NewPartition,
                indexes: Sequence[MaterializedIndexMeta]
                ) -> tuple[PartitionMeta, tuple[TabletMeta, ...], bool]:
        """The partition `need` names and its tablets: the catalog's if another load published
        it meanwhile (created=False), else the one reserved for the running loads (created
        with fresh ids on first use). The caller releases what it reserved (`release`)."""
        catalog = self.engine.catalog
        key = (table.table_id, need.name.lower())
        for p in catalog.partitions(table.table_id):
            if p.name.lower() == key[1]:
                return p, tuple(catalog.tablets(table.table_id, partition_id=p.partition_id)), \
                    False
        held = self._reserved.get(key)
        if held is None:
            held = self._reserved[key] = _Reserved(*self._new(table, need, indexes))
        held.holders += 1
        return held.partition, held.tablets, True

    def release(self, table_id: int, names: Sequence[str]) -> None:
        for name in names:
            key = (table_id, name.lower())
            held = self._reserved.get(key)
            if held is not None:
                held.holders -= 1
                if held.holders <= 0:
                    del self._reserved[key]

    def _new(self, table: TableMeta, need: NewPartition,
             indexes: Sequence[MaterializedIndexMeta]
             ) -> tuple[PartitionMeta, tuple[TabletMeta, ...]]:
        catalog = self.engine.catalog
        buckets = table.distribution.buckets
        existing = catalog.partitions(table.table_id)
        replicas = existing[0].replication_num if existing else int(
            table.property("replication_num") or 1)
        ids = catalog.next_ids(1 + buckets * len(indexes))
        part = PartitionMeta(
            partition_id=ids[0], table_id=table.table_id, name=need.name, buckets=buckets,
            lower=need.lower, upper=need.upper, list_values=need.values, visible_version=1,
            visible_version_time=time.time(), replication_num=replicas)
        group = catalog.colocate_group(table.colocate_group_id) \
            if table.colocate_group_id is not None else None
        tablet_ids = iter(ids[1:])
        tablets = []
        for index in indexes:
            placement = ([group.backends_per_bucket[b][0] for b in range(buckets)]
                         if group is not None else self.engine.pick_backends(buckets))
            tablets += [TabletMeta(next(tablet_ids), table.table_id, part.partition_id,
                                   index.index_id, seq, placement[seq])
                        for seq in range(buckets)]
        return part, tuple(tablets)


_AUTO: PerEngine[AutoPartitions] = PerEngine(AutoPartitions)


def auto_placeable(table: TableMeta, batch: Batch, part_idx: np.ndarray) -> np.ndarray | None:
    """Rows a load into `table` places by creating their partition (every row of an AUTO
    LIST table, NULLs in `pX`; a RANGE row without NULL key); None for a table without AUTO
    PARTITION. For paths that filter unplaced rows before the load routes them (group commit):
    the partitions the unplaced rows (part_idx -1) need are computed here too, so a value no
    partition can be created for (a LIST name over 50 characters, a range past 9999) fails
    this statement alone, not the shared load."""
    if not table.partition_info.auto:
        return None
    missing_partitions(table, batch, np.flatnonzero(part_idx < 0))
    mask = np.ones(batch.num_rows, dtype=bool)
    if table.partition_info.type is PartitionType.LIST:
        return mask
    for name in table.partition_info.columns:
        validity = batch.column(name).validity
        if validity is not None:
            mask &= validity
    return mask
