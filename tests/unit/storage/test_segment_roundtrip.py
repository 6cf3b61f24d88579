"""Segment round trip: whatever a sorted Batch holds (every type, NULLs, empty strings, extremes,
NaN / -0.0) is read back identical, through `read_segment` and `SegmentReader.read`, across many
pages and many short-key blocks."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from segment_data import (
    KEY_MENU,
    TYPE_MENU,
    batch_rows,
    canon_rows,
    make_batch,
    random_values,
    sort_key,
    value_strategy,
)

import storage.indexes.short_key as short_key
import storage.segment.writer as writer
from storage import types as T
from storage.batch import Batch, Column
from storage.scan_stats import ScanStats
from storage.segment import SegmentInfo, SegmentReader, read_segment, write_segment
from storage.segment.footer import MAGIC


def check_round_trip(
    path: Path, batch: Batch, keys: list[str], short_keys: int, batch_size: int
) -> None:
    info = write_segment(path, batch, keys, short_keys)
    assert info == SegmentInfo(batch.num_rows, path.stat().st_size)
    assert not path.with_name(path.name + ".tmp").exists()
    expected = canon_rows(batch.rows())
    names = [n.upper() for n in batch.names]  # names match case-insensitively
    whole = read_segment(path, names, list(batch.types))
    assert whole.names == tuple(names) and whole.types == batch.types
    assert canon_rows(whole.rows()) == expected
    types = {n.lower(): t for n, t in zip(batch.names, batch.types)}
    stats = ScanStats()
    with SegmentReader(path, types) as reader:
        assert reader.num_rows == batch.num_rows
        batches = list(reader.read(list(batch.names), stats=stats, batch_size=batch_size))
    assert all(0 < b.num_rows <= batch_size for b in batches)
    assert batch_rows(batches) == expected
    assert stats.rows_total == stats.rows_returned == batch.num_rows
    # Any subset, any order, repeated columns.
    if batch.names:
        pick = [batch.names[-1], batch.names[0], batch.names[-1]]
        with SegmentReader(path, types) as reader:
            got = batch_rows(list(reader.read(pick, batch_size=batch_size)))
        assert got == canon_rows(batch.select(pick).rows())


@st.composite
def sorted_table(draw: st.DrawFn) -> tuple[Batch, list[str], int]:
    ncols = draw(st.integers(1, 5))
    types = [draw(st.sampled_from(TYPE_MENU)) for _ in range(ncols)]
    nkeys = draw(st.integers(0, 3))
    key_types = [draw(st.sampled_from(KEY_MENU)) for _ in range(nkeys)]
    all_types = key_types + types
    names = [f"k{i}" for i in range(nkeys)] + [f"c{i}" for i in range(ncols)]
    null_rate = draw(st.sampled_from([0.0, 0.3, 1.0]))
    rows = draw(
        st.lists(
            st.tuples(
                *[
                    st.one_of(st.none(), value_strategy(t))
                    if null_rate and draw(st.booleans())
                    else value_strategy(t)
                    for t in all_types
                ]
            ),
            max_size=60,
        )
    )
    if null_rate == 1.0:
        rows = [tuple(None for _ in r) for r in rows]
    rows.sort(key=lambda r: sort_key(r, range(nkeys)))
    return make_batch(names, all_types, rows), names[:nkeys], draw(st.integers(0, 3))


@settings(max_examples=150, deadline=None)
@given(
    table=sorted_table(),
    page_size=st.sampled_from([48, 200, 65536]),
    interval=st.sampled_from([1, 3, 1024]),
    batch_size=st.integers(1, 70),
)
def test_round_trip_small_pages(
    table: tuple[Batch, list[str], int], page_size: int, interval: int, batch_size: int
) -> None:
    batch, keys, short_keys = table
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as d:
        mp.setattr(writer, "PAGE_SIZE", page_size)  # many pages from few rows
        mp.setattr(short_key, "SHORT_KEY_INTERVAL", interval)  # many short-key blocks
        check_round_trip(Path(d) / "s.seg", batch, keys, short_keys, batch_size)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1025, 30000))
def test_round_trip_large_batches(seed: int, n: int) -> None:
    """Real page size and short-key interval: > 64 KiB columns, > 1024 rows."""
    rng = np.random.default_rng(seed)
    key_types = [KEY_MENU[i] for i in rng.choice(len(KEY_MENU), 2, replace=False)]
    types = (
        key_types
        + [TYPE_MENU[i] for i in rng.choice(len(TYPE_MENU), 4, replace=False)]
        + [T.BIGINT]
    )
    null_fracs = [float(rng.choice([0.0, 0.05, 0.5])) for _ in types]
    columns = [random_values(rng, t, n, f) for t, f in zip(types, null_fracs)]
    rows = sorted(zip(*columns), key=lambda r: sort_key(r, [0, 1]))
    names = [f"col{i}" for i in range(len(types))]
    batch = make_batch(names, types, rows)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "big.seg"
        check_round_trip(path, batch, names[:2], 2, int(rng.integers(1000, 70000)))
        stats = ScanStats()
        with SegmentReader(path, {}) as reader:
            list(reader.read(["col6"], stats=stats))
        assert stats.pages_read >= (8 * n) // writer.PAGE_SIZE  # BIGINT: 8192 rows per page


def test_round_trip_empty_batch(tmp_path: Path) -> None:
    batch = make_batch(["k", "s"], [T.INT, T.STRING], [])
    check_round_trip(tmp_path / "e.seg", batch, ["k"], 1, 10)


def test_huge_string_values_get_their_own_pages(tmp_path: Path) -> None:
    values = ["x" * 200_000, "", None, "y" * 70_000, "é" * 10] * 3
    batch = Batch(("s",), (Column.from_physical(T.STRING, values),))
    check_round_trip(tmp_path / "h.seg", batch, [], 0, 4)
    stats = ScanStats()
    with SegmentReader(tmp_path / "h.seg", {"s": T.STRING}) as r:
        list(r.read(["s"], stats=stats))
    assert stats.pages_read >= 6


def test_file_starts_and_ends_with_magic(tmp_path: Path) -> None:
    batch = make_batch(["k"], [T.BIGINT], [(i,) for i in range(5000)])
    write_segment(tmp_path / "m.seg", batch, ["k"], 1)
    raw = (tmp_path / "m.seg").read_bytes()
    assert raw[:8] == MAGIC and raw[-8:] == MAGIC


def test_sorted_int_keys_compress_well(tmp_path: Path) -> None:
    """FOR on sorted keys and RLE on constant columns: far below 8 bytes per value."""
    n = 100_000
    batch = Batch(
        ("k", "c"),
        (
            Column(T.BIGINT, np.arange(n, dtype=np.int64) + 10**12),
            Column(T.BIGINT, np.full(n, 7, np.int64)),
        ),
    )
    info = write_segment(tmp_path / "c.seg", batch, ["k"], 1)
    assert info.size < n * 16 / 4


def test_reader_converts_to_requested_types(tmp_path: Path) -> None:
    batch = make_batch(
        ["i", "d", "s"],
        [T.INT, T.decimal(9, 2), T.varchar(10)],
        [(None, -5, None), (1, 150, "ab"), (2**31 - 1, 0, "")],
    )
    write_segment(tmp_path / "t.seg", batch, ["i"], 1)
    out = read_segment(tmp_path / "t.seg", ["i", "d", "s"], [T.BIGINT, T.decimal(12, 4), T.STRING])
    assert out.rows() == [(None, -500, None), (1, 15000, "ab"), (2**31 - 1, 0, "")]
    assert out.columns[0].data.dtype == np.int64


def test_unsorted_batch_is_rejected(tmp_path: Path) -> None:
    batch = make_batch(["k", "v"], [T.INT, T.INT], [(2, 0), (1, 0)])
    with pytest.raises(ValueError, match="not sorted"):
        write_segment(tmp_path / "u.seg", batch, ["k"], 1)
    assert not (tmp_path / "u.seg").exists() and not (tmp_path / "u.seg.tmp").exists()
    write_segment(tmp_path / "u.seg", batch, ["v"], 1)  # sorted by v (all equal): fine
