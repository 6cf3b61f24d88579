"""Partition definitions: turning `VALUES LESS THAN` / `[lo, hi)` / `IN (...)` into ranges.

Shared by CREATE TABLE and ALTER TABLE ADD PARTITION: computes each RANGE partition's
`[lower, upper)` (a LESS THAN partition starts at the largest existing upper bound below its
own, as Doris' `RangePartitionInfo` does), rejects overlaps and conflicting LIST values with
Doris' wording, and renders bounds the way SHOW PARTITIONS prints them
(`[types: [INT]; keys: [10]; ..types: [INT]; keys: [20]; )`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sql.errors import DorisError
from storage.catalog.meta import PartitionMeta
from storage.partition import bound_key
from storage.types import DataType, TypeError_, TypeKind

_TYPE_MIN_TEXT = {
    TypeKind.TINYINT: "-128",
    TypeKind.SMALLINT: "-32768",
    TypeKind.INT: "-2147483648",
    TypeKind.BIGINT: "-9223372036854775808",
    TypeKind.LARGEINT: "-170141183460469231731687303715884105728",
    TypeKind.DATE: "0000-01-01",
    TypeKind.DATETIME: "0000-01-01 00:00:00",
    TypeKind.BOOLEAN: "0",
}


@dataclass(frozen=True, slots=True)
class PartitionSpec:
    """One partition as written in DDL, before ids are assigned."""

    name: str
    kind: str  # "LESS_THAN" | "FIXED" | "IN"
    less_than: tuple[str, ...] | None = None  # None with kind LESS_THAN = MAXVALUE
    lower: tuple[str, ...] = ()
    upper: tuple[str, ...] = ()
    values: tuple[tuple[str | None, ...], ...] = ()  # None: the NULL value


def _check_arity(types: Sequence[DataType], values: Sequence[str | None]) -> None:
    if len(values) > len(types):
        raise DorisError(
            f"partition key desc list size[{len(values)}] is larger than "
            f"partition column size[{len(types)}]"
        )


def _check_value(t: DataType, v: str) -> str:
    try:
        t.to_physical(v)
    except TypeError_ as e:
        raise DorisError(f"Invalid partition value '{v}' for type {t.sql()}: {e}") from None
    return normalize_value(t, v)


def _check_bound(types: Sequence[DataType], values: Sequence[str]) -> tuple[str, ...]:
    """A RANGE bound's values, checked and normalised (a bound has no NULL)."""
    _check_arity(types, values)
    return tuple(_check_value(t, v) for t, v in zip(types, values))


def _check_list_values(types: Sequence[DataType], values: Sequence[str | None]
                       ) -> tuple[str | None, ...]:
    """One LIST partition value (a tuple for multi-column keys), checked and normalised; None
    is the NULL value (Doris' `pX` of AUTO LIST)."""
    _check_arity(types, values)
    return tuple(None if v is None else _check_value(t, v) for t, v in zip(types, values))


def normalize_value(t: DataType, text: str) -> str:
    """Canonical text of a partition value (dates as yyyy-MM-dd, ints without padding)."""
    return t.format_value(t.to_physical(text)) or ""


def range_text(types: Sequence[DataType], lower: tuple[str, ...] | None,
               upper: tuple[str, ...] | None) -> str:
    type_list = ", ".join(t.internal_sql() for t in types)

    def keys(values: tuple[str, ...] | None, is_upper: bool) -> str:
        if values is None:
            if is_upper:
                return "MAXVALUE"
            return ", ".join(_TYPE_MIN_TEXT.get(t.kind, "") for t in types)
        padded = list(values) + [_TYPE_MIN_TEXT.get(t.kind, "") for t in types[len(values):]]
        return ", ".join(padded)

    return (
        f"[types: [{type_list}]; keys: [{keys(lower, False)}]; "
        f"..types: [{type_list}]; keys: [{keys(upper, True)}]; )"
    )


def list_text(types: Sequence[DataType], values: tuple[tuple[str | None, ...], ...]) -> str:
    type_list = ", ".join(t.internal_sql() for t in types)
    return ", ".join(f"[types: [{type_list}]; keys: [{', '.join(_key_text(x) for x in v)}]; ]"
                     for v in values)


def _key_text(value: str | None) -> str:
    return "NULL" if value is None else value


def _overlaps(types: Sequence[DataType], a: PartitionMeta, lo: tuple[str, ...] | None,
              up: tuple[str, ...] | None) -> bool:
    a_lo, a_up = bound_key(types, a.lower), bound_key(types, a.upper)
    b_lo, b_up = bound_key(types, lo), bound_key(types, up)
    # [a_lo, a_up) and [b_lo, b_up) intersect iff a_lo < b_up and b_lo < a_up (None = infinite)
    first = a_lo is None or b_up is None or a_lo < b_up
    second = b_lo is None or a_up is None or b_lo < a_up
    return first and second


def resolve_range(
    types: Sequence[DataType], spec: PartitionSpec, existing: Sequence[PartitionMeta]
) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
    """[lower, upper) of a new RANGE partition given the partitions that already exist."""
    if spec.kind == "IN":
        raise DorisError(
            f"Invalid partition definition for RANGE partition [{spec.name}]: VALUES IN")
    if spec.kind == "LESS_THAN":
        upper = None if spec.less_than is None else _check_bound(types, spec.less_than)
        up_key = bound_key(types, upper)
        lower: tuple[str, ...] | None = None
        best = None
        for p in existing:
            p_up = bound_key(types, p.upper)
            if p_up is None:
                continue
            if (up_key is None or not up_key < p_up) and (best is None or best < p_up):
                best, lower = p_up, p.upper
        if lower is not None and up_key is not None and not bound_key(types, lower) < up_key:
            lower = None  # equal upper bounds: the overlap check below reports it
    else:
        if tuple(spec.lower) == tuple(_TYPE_MIN_TEXT.get(t.kind) for t in types[: len(spec.lower)]):
            spec = PartitionSpec(spec.name, spec.kind, lower=(), upper=spec.upper)
        lower = _check_bound(types, spec.lower) if spec.lower else None
        upper = None if spec.upper == ("MAXVALUE",) else _check_bound(types, spec.upper)
        lo_key, up_key = bound_key(types, lower), bound_key(types, upper)
        if lo_key is not None and up_key is not None and not lo_key < up_key:
            raise DorisError(
                "The lower values must smaller than upper values: "
                f"{range_text(types, lower, upper)}"
            )
    for p in existing:
        if _overlaps(types, p, lower, upper):
            raise DorisError(
                f"Range {range_text(types, lower, upper)} is intersected with range: "
                f"{range_text(types, p.lower, p.upper)}"
            )
    return lower, upper


def resolve_list(
    types: Sequence[DataType], spec: PartitionSpec, existing: Sequence[PartitionMeta]
) -> tuple[tuple[str | None, ...], ...]:
    if spec.kind != "IN":
        raise DorisError(f"Invalid partition definition for LIST partition [{spec.name}]")
    values = tuple(_check_list_values(types, v) for v in spec.values)
    for v in values:
        if len(v) != len(types):
            raise DorisError(
                f"partition key desc list size[{len(v)}] is not equal to "
                f"partition column size[{len(types)}]"
            )
    taken = {v: p.name for p in existing for v in p.list_values}
    seen: set[tuple[str | None, ...]] = set()
    for v in values:
        if v in taken or v in seen:
            key = ", ".join(_key_text(x) for x in v)  # a NULL value prints as NULL
            raise DorisError(
                f"The partition key[({key})] in partition item[{spec.name}] is conflict")
        seen.add(v)
    return values
