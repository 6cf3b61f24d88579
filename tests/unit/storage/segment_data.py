"""Test data for segment tests: random typed rows (hypothesis or numpy-seeded), sorted by keys
the way rowsets sort them (NULL first, then value order), and row comparison helpers."""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Sequence

import numpy as np
from hypothesis import strategies as st

from storage import types as T
from storage.batch import Batch, Column

TYPE_MENU: list[T.DataType] = [
    T.BOOLEAN,
    T.TINYINT,
    T.SMALLINT,
    T.INT,
    T.BIGINT,
    T.LARGEINT,
    T.FLOAT,
    T.DOUBLE,
    T.decimal(9, 2),
    T.decimal(18, 3),
    T.decimal(38, 6),
    T.DATE,
    T.datetime(6),
    T.varchar(32),
    T.STRING,
    T.char(8),
    T.DataType(T.TypeKind.HLL),
]
KEY_MENU = [t for t in TYPE_MENU if not t.is_float and t.kind not in T.BLOB_KINDS]

# Strings past 64 bytes exercise the truncated / rounded-up string zone map bounds.
EDGE_TEXT = [
    "",
    "a",
    "ab",
    "a\x00",
    "a\x00b",
    "\x00",
    "é",
    "日本語",
    "🙂",
    "z" * 50,
    "Z",
    "ab" * 30,
    "ab" * 40,
    "ab" * 39 + "ac",
    "é" * 40,
    "ab" * 32 + "\x00",
]


def value_strategy(dtype: T.DataType) -> st.SearchStrategy[object]:
    """Physical values of one type, edges included (no NULL)."""
    k = dtype.kind
    if k in T.BLOB_KINDS:
        return st.binary(max_size=10)
    if dtype.is_string:
        limit = dtype.length if k is not T.TypeKind.STRING else 80
        fits = [s for s in EDGE_TEXT if len(s.encode("utf-8")) <= limit]
        return st.one_of(st.sampled_from(fits), st.text(max_size=min(12, limit // 4)))
    if k is T.TypeKind.FLOAT:
        return st.floats(width=32)
    if k is T.TypeKind.DOUBLE:
        return st.one_of(
            st.sampled_from([0.0, -0.0, float("nan"), float("inf"), float("-inf")]), st.floats()
        )
    if k is T.TypeKind.BOOLEAN:
        return st.integers(0, 1)
    if k is T.TypeKind.DATE:
        return st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31)).map(T.date_to_days)
    if k is T.TypeKind.DATETIME:
        return st.datetimes(dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31)).map(
            T.datetime_to_micros
        )
    lo, hi = dtype.int_range()
    return st.one_of(st.sampled_from([lo, hi, 0, -1, 1]), st.integers(lo, hi), st.integers(-5, 5))


def random_values(
    rng: np.random.Generator, dtype: T.DataType, n: int, null_frac: float
) -> list[object]:
    """n physical values of `dtype` from numpy (fast for large batches), some NULL."""
    k = dtype.kind
    clustered = rng.random() < 0.5  # few distinct values -> runs, dictionaries, narrow FOR
    if k in T.BLOB_KINDS or dtype.is_string:
        alphabet = ["a", "b", "é", "\x00", "日", "z", "🙂", "Q"]
        limit = dtype.length if k in (T.TypeKind.CHAR, T.TypeKind.VARCHAR) else 60
        pool_size = 20 if clustered else n
        pool = []
        for _ in range(min(pool_size, n) or 1):
            s = "".join(rng.choice(alphabet, size=int(rng.integers(0, 12))).tolist())
            while len(s.encode("utf-8")) > limit:
                s = s[:-1]
            pool.append(s.encode("utf-8") if k in T.BLOB_KINDS else s)
        values: list[object] = [pool[i] for i in rng.integers(0, len(pool), n).tolist()]
    elif dtype.is_float:
        arr = rng.normal(0, 1e6, n) if not clustered else rng.integers(-3, 3, n).astype(np.float64)
        if k is T.TypeKind.FLOAT:
            arr = arr.astype(np.float32)
        specials = rng.random(n) < 0.02
        arr[specials] = rng.choice([np.nan, np.inf, -np.inf, -0.0], int(specials.sum()))
        values = arr.tolist()
    elif k is T.TypeKind.BOOLEAN:
        values = rng.integers(0, 2, n).tolist()
    else:
        if k is T.TypeKind.DATE:
            lo, hi = -719162, 2932896
        elif k is T.TypeKind.DATETIME:
            lo, hi = -(2**62), 2**62
        else:
            lo, hi = dtype.int_range()
        if clustered:
            base = int(rng.integers(-1000, 1000))
            values = [max(lo, min(hi, base + int(v))) for v in rng.integers(0, 50, n)]
        else:
            span = hi - lo
            values = [lo + int(x * span) for x in rng.random(n).tolist()]
            for i in rng.integers(0, n, min(n, 3)).tolist():
                values[i] = [lo, hi, 0][i % 3]
    nulls = rng.random(n) < null_frac
    return [None if m else v for v, m in zip(values, nulls.tolist())]


def sort_key(row: Sequence[object], key_idx: Sequence[int]) -> tuple[object, ...]:
    """Rowset order: per key column NULL first, then value (str order == UTF-8 byte order)."""
    return tuple((0, 0) if row[i] is None else (1, row[i]) for i in key_idx)


def make_batch(
    names: Sequence[str], types: Sequence[T.DataType], rows: Sequence[Sequence[object]]
) -> Batch:
    cols = [Column.from_physical(t, [r[i] for r in rows]) for i, t in enumerate(types)]
    return Batch(tuple(names), tuple(cols))


def canon(v: object) -> object:
    """Floats by their bits (NaN == NaN, -0.0 != 0.0), everything else as is."""
    return struct.pack("<d", v) if isinstance(v, float) else v


def canon_rows(rows: Sequence[Sequence[object]]) -> list[tuple[object, ...]]:
    return [tuple(canon(v) for v in r) for r in rows]


def batch_rows(batches: Sequence[Batch]) -> list[tuple[object, ...]]:
    return canon_rows([r for b in batches for r in b.rows()])
