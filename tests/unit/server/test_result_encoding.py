"""Columnar text-row encoding (executor/kernels/text_protocol.py and float_text.py,
server/text_encoding.py) vs references.

Each numba kernel is compared with a pure-Python reference written here from the formatting
rules (storage/types.py); the whole encoder is compared byte for byte, with hypothesis, with the
per-row path (`server.results.encode_rows`) framed by a reference packet writer.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from executor.kernels import float_text as float_kernels
from executor.kernels import text_protocol as kernels
from server.results import encode_rows
from server.text_encoding import column_text, encode_batch
from storage.batch import Batch, Column
from storage.types import (
    BIGINT,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LARGEINT,
    NULL,
    SMALLINT,
    STRING,
    TINYINT,
    DataType,
    datetime,
    decimal,
    format_decimal,
    format_float,
    varchar,
)

MAX = 0xFFFFFF
NO_DEADLINE = settings(deadline=None)  # first calls load numba kernels from the cache


# ---- references -----------------------------------------------------------------------------
def ref_lenenc(n: int) -> bytes:
    if n < 251:
        return bytes([n])
    if n < 2**16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 2**24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def ref_payload(values: list[bytes | None]) -> bytes:
    return b"".join(b"\xfb" if v is None else ref_lenenc(len(v)) + v for v in values)


def ref_frame(payloads: list[bytes], seq: int) -> tuple[bytes, int]:
    """MySQL packets: split at 0xFFFFFF, an empty packet after an exact multiple; seq mod 256."""
    out = bytearray()
    for p in payloads:
        while True:
            part, p = p[:MAX], p[MAX:]
            out += len(part).to_bytes(3, "little") + bytes([seq]) + part
            seq = (seq + 1) % 256
            if len(part) < MAX:
                break
    return bytes(out), seq


def ref_date(days: int) -> str:
    return (dt.date(1970, 1, 1) + dt.timedelta(days=days)).isoformat()


def ref_datetime(micros: int, scale: int) -> str:
    d = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=micros)
    text = f"{d.year:04d}-{d.month:02d}-{d.day:02d} {d.hour:02d}:{d.minute:02d}:{d.second:02d}"
    return text + ("." + f"{d.microsecond:06d}"[:scale] if scale else "")


def texts(offsets: np.ndarray, data: np.ndarray) -> list[str]:
    raw = data.tobytes()
    return [raw[offsets[i]: offsets[i + 1]].decode() for i in range(len(offsets) - 1)]


def joined(chunks: list) -> bytes:
    return b"".join(bytes(c) for c in chunks)


# ---- kernels --------------------------------------------------------------------------------
INT64_EDGES = [0, 1, -1, 9, 10, -10, 99, 100, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)]


@NO_DEADLINE
@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=50))
def test_int_text(values: list[int]) -> None:
    values = values + INT64_EDGES
    assert texts(*kernels.int_text(np.array(values, np.int64))) == [str(v) for v in values]


@NO_DEADLINE
@given(st.lists(st.integers(-(10**18) + 1, 10**18 - 1), max_size=50), st.integers(0, 18))
def test_decimal_text(values: list[int], scale: int) -> None:
    values = values + [0, 1, -1, 10**18 - 1, -(10**18) + 1]
    got = texts(*kernels.decimal_text(np.array(values, np.int64), scale))
    assert got == [format_decimal(v, scale) for v in values]


def test_date_text_whole_range() -> None:
    days = np.arange(-719528, 2932897, dtype=np.int32)  # 0000-01-01 .. 9999-12-31
    offsets, data, ok = kernels.date_text(days)
    assert ok
    assert texts(offsets, data) == days.astype("datetime64[D]").astype(str).tolist()
    assert [ref_date(int(d)) for d in days[366::1000]] == texts(offsets, data)[366::1000]
    assert not kernels.date_text(np.array([-719529], np.int32))[2]
    assert not kernels.date_text(np.array([2932897], np.int32))[2]


@NO_DEADLINE
@given(st.lists(st.integers(-62135596800 * 10**6, 253402300799999999), max_size=50),
       st.integers(0, 6))
def test_datetime_text(values: list[int], scale: int) -> None:
    values = values + [0, -1, 1, 86_400_000_000 - 1, -86_400_000_000]
    offsets, data, ok = kernels.datetime_text(np.array(values, np.int64), scale)
    assert ok
    assert texts(offsets, data) == [ref_datetime(v, scale) for v in values]


FLOAT_EDGES = [
    0.0, -0.0, 0.1, 0.5, 1.0, 2.0, -7.25e-07, 1e-05, 0.0001, 1e15, 1e16, 123.456, 1e22, 1e23,
    5e-324, 1.7976931348623157e308, 0.30000000000000004, 9.999999999999999e22, 1e-7, 12345e-10,
    float("nan"), float("inf"), float("-inf"), 100.0, 1234567890123456.0, 123456789012345.0,
]


@NO_DEADLINE
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=60))
def test_double_text(values: list[float]) -> None:
    values = values + FLOAT_EDGES
    offsets, data, fallback = float_kernels.double_text(np.array(values, np.float64))
    got = texts(offsets, data)
    skipped = set(fallback.tolist())
    for i, v in enumerate(values):
        if i in skipped:
            assert got[i] == ""
        else:
            assert got[i] == format_float(v), v


@NO_DEADLINE
@given(st.lists(st.floats(width=32), max_size=60))
def test_float_text(values: list[float]) -> None:
    edges = [v for v in FLOAT_EDGES if not 3e38 < abs(v) < np.inf]  # those float32 can hold
    arr = np.array(values + edges, np.float32)
    powers = np.array([2.0**e for e in range(-149, 128)], np.float32)
    arr = np.concatenate([arr, powers, -np.nextafter(powers, np.float32(0)),
                          np.nextafter(powers, np.float32(np.inf))])
    offsets, data, fallback = float_kernels.float_text(arr)
    got = texts(offsets, data)
    skipped = set(fallback.tolist())
    for i, v in enumerate(arr.tolist()):
        assert got[i] == ("" if i in skipped else format_float(v, single=True)), v


def test_float_text_typical_values_take_the_kernel() -> None:
    rng = np.random.default_rng(4)
    values = np.concatenate([np.round(rng.standard_normal(20_000) * 1000, 2),
                             rng.standard_normal(20_000)]).astype(np.float32)
    offsets, data, fallback = float_kernels.float_text(values)
    assert len(fallback) < 100  # only exact ties and float32 midpoints
    skipped = set(fallback.tolist())
    ref = [format_float(v, single=True) for v in values.tolist()]
    assert [t for i, t in enumerate(texts(offsets, data)) if i not in skipped] == [
        t for i, t in enumerate(ref) if i not in skipped]


def test_double_text_short_values_take_the_kernel() -> None:
    values = np.round(np.random.default_rng(3).standard_normal(10_000) * 1000, 2)
    offsets, data, fallback = float_kernels.double_text(values)
    assert len(fallback) == 0
    assert texts(offsets, data) == [format_float(v) for v in values.tolist()]


def test_splice_text() -> None:
    offsets, data = kernels.int_text(np.array([1, 22, 333, 4444], np.int64))
    rep_offsets = np.array([0, 1, 3], np.int64)
    rep_data = np.frombuffer(b"abc", np.uint8)
    out = kernels.splice_text(offsets, data, np.array([0, 2], np.int64), rep_offsets, rep_data)
    assert texts(*out) == ["a", "22", "bc", "4444"]


def test_frame_rows_matches_reference_and_wraps_seq() -> None:
    rng = np.random.default_rng(7)
    n = 700
    cols = [[bytes(rng.integers(97, 123, int(k)).astype(np.uint8)) for k in rng.integers(0, 300, n)]
            for _ in range(3)]
    nulls = rng.random((3, n)) < 0.2
    offsets = np.zeros((3, n + 1), np.int64)
    flat = b""
    for c, col in enumerate(cols):
        offsets[c, 0] = len(flat)
        for i, v in enumerate(col):
            offsets[c, i + 1] = offsets[c, i] + len(v)
        flat += b"".join(col)
    data = np.frombuffer(flat, np.uint8)
    lengths = kernels.payload_lengths(offsets, nulls.view(np.uint8))
    payloads = [ref_payload([None if nulls[c, i] else cols[c][i] for c in range(3)]) for i in range(n)]
    assert lengths.tolist() == [len(p) for p in payloads]
    buf, seq = kernels.frame_rows(offsets, data, nulls.view(np.uint8), lengths, 0, n, 250)
    assert (buf.tobytes(), seq) == ref_frame(payloads, 250)
    buf, seq = kernels.frame_rows(offsets, data, nulls.view(np.uint8), lengths, 10, 20, 0)
    assert (buf.tobytes(), seq) == ref_frame(payloads[10:20], 0)


@pytest.mark.parametrize("size", [MAX - 2, MAX - 1, MAX + 5, 2 * MAX - 1])
def test_oversized_rows_are_split(size: int) -> None:
    # One column: payload = lenenc prefix (4 bytes) + text; sizes around the 16 MB boundary.
    text = "x" * (size - 4)
    values = ["a", text, None, "", text]
    col = Column.from_physical(STRING, values)
    batch = Batch(("s", "i"), (col, Column.from_physical(INT, [1, None, 3, 4, 5])))
    chunks, seq = encode_batch(batch, 200)
    assert (joined(chunks), seq) == ref_frame(encode_rows(batch), 200)


# ---- whole batches against the per-row path -------------------------------------------------
TYPES: list[DataType] = [
    BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, LARGEINT, FLOAT, DOUBLE, decimal(9, 2),
    decimal(18, 0), decimal(18, 18), decimal(38, 10), DATE, datetime(0), datetime(3),
    datetime(6), varchar(20), STRING, NULL,
]


def _values(dtype: DataType) -> st.SearchStrategy:
    k = dtype.kind.value
    if dtype.kind.name in ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "LARGEINT"):
        lo, hi = dtype.int_range()
        return st.integers(lo, hi)
    if dtype.is_decimal:
        return st.integers(-(10**dtype.precision) + 1, 10**dtype.precision - 1)
    if k == "FLOAT":
        return st.floats(width=32)
    if k == "DOUBLE":
        return st.floats() | st.decimals(-10**6, 10**6, places=3).map(float)
    if k == "DATE":
        return st.integers(-719528, 2932896)
    if k == "DATETIME":
        return st.integers(-62167219200 * 10**6, 253402300799999999).map(
            lambda v: v - v % 10 ** (6 - dtype.scale))
    if k == "NULL":
        return st.none()
    return st.text(max_size=30)  # includes "" and non-ASCII


@st.composite
def batches(draw: st.DrawFn) -> Batch:
    n = draw(st.integers(1, 40))
    types = draw(st.lists(st.sampled_from(TYPES), min_size=1, max_size=6))
    cols = []
    for t in types:
        vals = draw(st.lists(st.none() | _values(t), min_size=n, max_size=n))
        if t.kind.name != "NULL" and draw(st.booleans()):
            vals = [v if v is not None else draw(_values(t)) for v in vals]  # no validity mask
        cols.append(Column.from_physical(t, vals))
    return Batch(tuple(f"c{i}" for i in range(len(cols))), tuple(cols))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches(), st.integers(0, 255))
def test_encode_batch_matches_per_row_path(batch: Batch, seq: int) -> None:
    chunks, next_seq = encode_batch(batch, seq)
    assert (joined(chunks), next_seq) == ref_frame(encode_rows(batch), seq)


def test_sliced_columns_and_many_rows() -> None:
    n = 70_000
    rng = np.random.default_rng(11)
    strings = Column.from_physical(varchar(20), [f"v{i}" if i % 7 else "" for i in range(n)])
    validity = rng.random(n) > 0.1
    batch = Batch(("a", "b", "c", "d"), (
        Column(INT, rng.integers(-(2**31), 2**31, n).astype(np.int32), validity),
        Column(BIGINT, rng.integers(-(2**63), 2**63 - 1, n)),
        Column(DOUBLE, np.concatenate([rng.standard_normal(n // 2), np.round(rng.random(n - n // 2), 3)])),
        strings,
    )).slice(123, 60_123)  # string offsets no longer start at 0 in the parent
    chunks, seq = encode_batch(batch, 17)
    assert (joined(chunks), seq) == ref_frame(encode_rows(batch), 17)


def test_column_text_zero_copy_for_strings() -> None:
    col = Column.from_physical(varchar(5), ["ab", None, ""])
    offsets, data = column_text(col)
    assert offsets is col.offsets and data is col.data


def test_out_of_range_years_fall_back_to_the_per_row_path() -> None:
    batch = Batch(("d", "t"), (
        Column(DATE, np.array([0, -800_000, 3_000_000], np.int32)),
        Column(datetime(2), np.array([0, -800_000 * 86_400 * 10**6, 1], np.int64)),
    ))
    chunks, seq = encode_batch(batch, 0)
    assert (joined(chunks), seq) == ref_frame(encode_rows(batch), 0)


def test_batch_feed_slices_and_keeps_the_sequence() -> None:
    from server.connection import FIRST_ROWS, MAX_ROWS, BatchFeed

    n = MAX_ROWS + FIRST_ROWS + 10
    big = Batch(("k",), (Column(BIGINT, np.arange(n, dtype=np.int64)),))
    small = Batch(("k",), (Column(BIGINT, np.arange(5, dtype=np.int64)),))
    feed = BatchFeed(iter([small.slice(0, 0), big, small]))
    out, rows, seq = [], [], 3
    step = feed.next_encoded(seq, FIRST_ROWS)
    while step is not None:
        chunks, count, seq = step
        out += chunks
        rows.append(count)
        step = feed.next_encoded(seq)
    assert rows == [FIRST_ROWS, MAX_ROWS, 10, 5]
    assert (joined(out), seq) == ref_frame(encode_rows(big) + encode_rows(small), 3)


def test_batch_feed_look_ahead_knows_a_small_result_is_complete() -> None:
    """The first step of a small result pulls the next batch: the feed is done at once, with
    every row delivered in order; a large first batch is sliced and never looked past."""
    from server.connection import FIRST_ROWS, BatchFeed

    def col(values: np.ndarray) -> Batch:
        return Batch(("k",), (Column(BIGINT, values.astype(np.int64)),))

    feed = BatchFeed(iter([col(np.arange(3)), col(np.arange(0)), col(np.arange(3, 5))]))
    chunks, count, seq = feed.next_encoded(1, FIRST_ROWS, True)
    assert count == 3 and not feed.done  # a second batch was pulled and is still to send
    more, count2, seq = feed.next_encoded(seq, FIRST_ROWS, True)
    assert count2 == 2 and feed.done
    assert feed.next_encoded(seq) is None
    assert (joined(chunks + more), seq) == ref_frame(encode_rows(col(np.arange(5))), 1)

    one = BatchFeed(iter([col(np.arange(7))]))
    assert one.next_encoded(0, FIRST_ROWS, True)[1] == 7 and one.done
    pulled: list[int] = []

    def lazy() -> Iterator[Batch]:
        pulled.append(1)
        yield col(np.arange(FIRST_ROWS + 1))
        pulled.append(2)
        yield col(np.arange(2))

    big = BatchFeed(lazy())
    assert big.next_encoded(0, FIRST_ROWS, True)[1] == FIRST_ROWS
    assert pulled == [1] and not big.done


def test_double_fallback_values_match_format_float() -> None:
    values = FLOAT_EDGES + np.random.default_rng(5).standard_normal(500).tolist() + [
        1234567890123456.0, 12345678901234567.0, 1e-30, 3.3e-310, -1e300 / 7]
    batch = Batch(("d",), (Column.from_physical(DOUBLE, values),))
    chunks, seq = encode_batch(batch, 9)
    assert (joined(chunks), seq) == ref_frame(encode_rows(batch), 9)


def test_warm_up_loads_every_encoding_kernel() -> None:
    """A fresh process: after warm_up (called by the server before it listens) no encoding
    kernel is left to load on a client's first result."""
    probe = (
        "from executor.kernels import float_text as float_kernels\n"
        "from executor.kernels import text_protocol as kernels\n"
        "from server import text_encoding\n"
        "names = ['int_text', 'decimal_text', 'date_text', 'datetime_text', 'payload_lengths',"
        " 'frame_rows']\n"
        "dispatchers = [getattr(kernels, n) for n in names]"
        " + [float_kernels.double_text, float_kernels.float_text]\n"
        "assert not any(d.signatures for d in dispatchers)\n"
        "text_encoding.warm_up()\n"
        "print(sorted(d.__name__ for d in dispatchers if not d.signatures))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300, check=False, cwd=Path(__file__).resolve().parents[3])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
