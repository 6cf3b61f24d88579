"""Segment scans with predicates: exactly the rows `storage.predicates.evaluate` selects, and the
short key / zone map indexes really skip rows, pages and segments (checked on ScanStats)."""

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
    sort_key,
    value_strategy,
)

import storage.indexes.short_key as short_key
import storage.segment.writer as writer
from storage import types as T
from storage.batch import Batch, Column
from storage.predicates import ColumnPredicate, evaluate
from storage.scan_stats import ScanStats
from storage.segment import SegmentReader, write_segment

RANGE_OPS = ("<", "<=", ">", ">=")
ALL_OPS = ("=", "!=", "in", "not_in", "is_null", "is_not_null") + RANGE_OPS


def expected_rows(
    batch: Batch, columns: list[str], preds: list[ColumnPredicate]
) -> list[tuple[object, ...]]:
    mask = np.ones(batch.num_rows, np.bool_)
    for p in preds:
        mask &= evaluate(p, batch.column(p.column.lower()))
    return canon_rows(batch.filter(mask).select(columns).rows())


def scan(
    path: Path,
    batch: Batch,
    columns: list[str],
    preds: list[ColumnPredicate],
    batch_size: int = 65536,
) -> tuple[list[tuple[object, ...]], ScanStats]:
    stats = ScanStats()
    types = {n.lower(): t for n, t in zip(batch.names, batch.types)}
    with SegmentReader(path, types, tablet_id=7) as reader:
        got = batch_rows(list(reader.read(columns, preds, stats=stats, batch_size=batch_size)))
    assert stats.rows_total == (
        stats.rows_skipped_short_key
        + stats.rows_skipped_zone_map
        + stats.rows_skipped_bitmap_index
        + stats.rows_skipped_bloom_filter
        + stats.rows_filtered_predicate
        + stats.rows_returned
    )
    assert stats.rows_returned == len(got)
    return got, stats


def odd_values(dtype: T.DataType) -> st.SearchStrategy[object]:
    """Constants of another type than the column: evaluate's numpy casts decide, not indexes."""
    if dtype.is_varlen:
        return st.sampled_from([5, b"a"])
    if dtype.is_float:
        return st.sampled_from([0, 1, -3, 2**70])
    return st.sampled_from([0.5, -1.5, float("nan"), float("inf"), 1e300, True])


@st.composite
def predicate(
    draw: st.DrawFn, names: list[str], types: list[T.DataType], pools: list[list[object]]
) -> ColumnPredicate:
    i = draw(st.integers(0, len(names) - 1))
    t = types[i]
    ops = (
        ALL_OPS
        if t.kind not in T.BLOB_KINDS
        else ("=", "!=", "in", "not_in", "is_null", "is_not_null")
    )
    op = draw(st.sampled_from(ops))
    name = draw(st.sampled_from([names[i], names[i].upper()]))
    if op in ("is_null", "is_not_null"):
        return ColumnPredicate(name, op)
    in_pool = st.sampled_from(pools[i]) if pools[i] else value_strategy(t)
    comparable = st.one_of(in_pool, value_strategy(t))
    if op in ("=", "!=") or (op in RANGE_OPS and not t.is_varlen):
        comparable = st.one_of(comparable, odd_values(t))
    if op in ("in", "not_in"):
        return ColumnPredicate(
            name,
            op,
            tuple(
                draw(
                    st.lists(
                        comparable.filter(
                            lambda v: (
                                not (t.is_varlen and isinstance(v, int))
                                and not (not t.is_float and isinstance(v, float) and v != v)
                            )
                        ),
                        max_size=7,
                    )
                )
            ),
        )
    return ColumnPredicate(name, op, (draw(comparable),))


@st.composite
def scenario(draw: st.DrawFn) -> tuple[Batch, list[str], int, list[ColumnPredicate], list[str]]:
    key_types = [draw(st.sampled_from(KEY_MENU)) for _ in range(draw(st.integers(1, 3)))]
    value_types = [draw(st.sampled_from(TYPE_MENU)) for _ in range(draw(st.integers(1, 3)))]
    types = key_types + value_types
    names = [f"k{i}" for i in range(len(key_types))] + [f"v{i}" for i in range(len(value_types))]
    pools = [draw(st.lists(value_strategy(t), min_size=1, max_size=6)) for t in types]
    null_ok = [draw(st.booleans()) for _ in types]
    n = draw(st.integers(0, 250))
    rows = [
        tuple(
            draw(st.sampled_from(pool + ([None] if ok else []))) for pool, ok in zip(pools, null_ok)
        )
        for _ in range(n)
    ]
    rows.sort(key=lambda r: sort_key(r, range(len(key_types))))
    preds = draw(st.lists(predicate(names, types, pools), max_size=4))
    columns = draw(st.lists(st.sampled_from(names), min_size=1, max_size=4))
    return (
        make_batch(names, types, rows),
        names[: len(key_types)],
        draw(st.integers(1, 3)),
        preds,
        columns,
    )


@settings(max_examples=300, deadline=None)
@given(
    case=scenario(),
    page_size=st.sampled_from([40, 300, 65536]),
    interval=st.sampled_from([1, 4, 1024]),
    max_ranges=st.sampled_from([2, 256]),
    batch_size=st.integers(1, 300),
)
def test_predicate_scans_equal_full_read_and_evaluate(
    case: tuple, page_size: int, interval: int, max_ranges: int, batch_size: int
) -> None:
    batch, keys, short_keys, preds, columns = case
    try:
        expected = expected_rows(batch, columns, preds)
    except TypeError:  # evaluate itself cannot compare (e.g. str < bytes): not a scan question
        return
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as d:
        mp.setattr(writer, "PAGE_SIZE", page_size)
        mp.setattr(short_key, "SHORT_KEY_INTERVAL", interval)
        mp.setattr(short_key, "MAX_KEY_RANGES", max_ranges)
        path = Path(d) / "p.seg"
        write_segment(path, batch, keys, short_keys)
        got, _ = scan(path, batch, columns, preds, batch_size)
    assert got == expected


# ---- deterministic: the indexes do their job -------------------------------------------------
N = 200_000


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Batch]:
    rng = np.random.default_rng(42)
    k = np.arange(N, dtype=np.int64) * 2 + 1_000_000  # sorted unique key
    cluster = (np.arange(N) // 20_000).astype(np.int32)  # clustered non-key column: 0..9
    value = rng.integers(-(10**9), 10**9, N)
    sparse_valid = np.ones(N, np.bool_)
    sparse_valid[50_000:90_000] = False  # NULLs only in one region
    s = np.array([f"name-{i // 1000:05d}" for i in range(N)], dtype=object)
    batch = Batch(
        ("k", "cluster", "value", "sparse", "s"),
        (
            Column(T.BIGINT, k),
            Column(T.INT, cluster),
            Column(T.BIGINT, value),
            Column(T.BIGINT, np.where(sparse_valid, value, 0), sparse_valid),
            Column.from_physical(T.varchar(20), s.tolist()),
        ),
    )
    path = tmp_path_factory.mktemp("big") / "big.seg"
    write_segment(path, batch, ["k"], 1)
    return path, batch


def total_pages(path: Path, batch: Batch, column: str) -> int:
    stats = ScanStats()
    scan(path, batch, [column], [])
    with SegmentReader(path, {}) as r:
        list(r.read([column], stats=stats))
    return stats.pages_read


def test_short_key_point_lookup_reads_one_block(big: tuple[Path, Batch]) -> None:
    path, batch = big
    cols = ["k", "value", "s"]
    pred = [ColumnPredicate("k", "=", (1_000_000 + 2 * 123_457,))]
    got, stats = scan(path, batch, cols, pred)
    assert got == expected_rows(batch, cols, pred) and len(got) == 1
    assert stats.rows_skipped_short_key == N - 1
    assert stats.pages_read <= 8  # a couple of key pages for the binary search + one per column
    assert stats.pages_read * 10 < total_pages(path, batch, "k") + total_pages(path, batch, "value")


def test_short_key_range_and_in(big: tuple[Path, Batch]) -> None:
    path, batch = big
    for preds in (
        [ColumnPredicate("k", ">=", (1_100_001,)), ColumnPredicate("k", "<", (1_100_500,))],
        [ColumnPredicate("k", "in", (1_000_000, 1_000_002, 1_399_998, 1_399_999, 5))],
        [ColumnPredicate("k", ">", (1_399_990,))],
        [ColumnPredicate("k", "<=", (1_000_004,)), ColumnPredicate("k", "is_not_null")],
    ):
        got, stats = scan(path, batch, ["k", "cluster"], preds)
        assert got == expected_rows(batch, ["k", "cluster"], preds)
        assert stats.rows_skipped_short_key > N - 2000
        assert stats.rows_filtered_predicate < 2100  # only the candidate blocks were evaluated


def test_zone_maps_skip_pages_of_clustered_column(big: tuple[Path, Batch]) -> None:
    path, batch = big
    for preds in (
        [ColumnPredicate("cluster", "=", (3,))],
        [ColumnPredicate("cluster", "in", (2, 3))],
        [ColumnPredicate("cluster", ">=", (8,))],
        [ColumnPredicate("sparse", "is_null")],
        [ColumnPredicate("s", "<", ("name-00010",))],
    ):
        got, stats = scan(path, batch, ["k", "value"], preds)
        assert got == expected_rows(batch, ["k", "value"], preds)
        assert stats.pages_skipped_zone_map > 0, preds
        assert stats.rows_skipped_zone_map >= N // 2, preds
        assert stats.rows_skipped_short_key == 0


def test_is_not_null_skips_all_null_pages(big: tuple[Path, Batch]) -> None:
    path, batch = big
    pred = [
        ColumnPredicate("sparse", "is_not_null"),
        ColumnPredicate("k", "<", (1_000_000 + 2 * 95_000,)),
    ]
    got, stats = scan(path, batch, ["value"], pred)
    assert got == expected_rows(batch, ["value"], pred)
    assert stats.pages_skipped_zone_map >= 3  # pages wholly inside rows 50_000..90_000


def test_segment_zone_map_skips_the_segment(big: tuple[Path, Batch]) -> None:
    path, batch = big
    for preds in (
        [ColumnPredicate("cluster", ">", (9,))],
        [ColumnPredicate("value", "<", (-(10**9) - 1,))],
        [ColumnPredicate("s", "=", ("zzz",))],
        [ColumnPredicate("k", "is_null")],
    ):
        got, stats = scan(path, batch, ["k", "value"], preds)
        assert got == []
        assert stats.segments_skipped == 1 and stats.segments_read == 0, preds
        assert stats.pages_read == 0


def test_non_indexable_constants_still_filter_exactly(big: tuple[Path, Batch]) -> None:
    path, batch = big
    for preds in (
        [ColumnPredicate("k", "=", (1_000_004.0,))],  # float constant on BIGINT key
        [ColumnPredicate("cluster", "<", (2.5,))],
        [ColumnPredicate("k", "in", (1_000_006.5, 1_000_008))],
    ):
        got, _ = scan(path, batch, ["k"], preds)
        assert got == expected_rows(batch, ["k"], preds)


def test_long_string_keys_are_truncated_but_exact(tmp_path: Path) -> None:
    """A DATE + VARCHAR prefix whose strings share 40 bytes: the 36-byte prefix cannot tell
    them apart, the scan must still return exactly the matching rows."""
    prefix = "p" * 40
    rows = sorted(
        ((d, f"{prefix}{i % 37:03d}", i) for d in range(5) for i in range(3000)),
        key=lambda r: (r[0], r[1]),
    )
    batch = make_batch(["d", "name", "i"], [T.DATE, T.varchar(64), T.INT], rows)
    path = tmp_path / "s.seg"
    write_segment(path, batch, ["d", "name"], 2)
    for preds in (
        [ColumnPredicate("d", "=", (3,)), ColumnPredicate("name", "=", (f"{prefix}017",))],
        [ColumnPredicate("d", "=", (2,)), ColumnPredicate("name", ">", (f"{prefix}030",))],
        [ColumnPredicate("d", "in", (1, 4)), ColumnPredicate("name", "<=", (prefix,))],
        [ColumnPredicate("d", ">=", (3,))],
    ):
        got, stats = scan(path, batch, ["d", "name", "i"], preds)
        assert got == expected_rows(batch, ["d", "name", "i"], preds)
        # at most two of the five dates are read (a predicate no row satisfies, like the
        # third, skips the segment by its zone map before the short key is searched)
        assert stats.rows_skipped_short_key + stats.rows_skipped_zone_map >= 9000


def test_short_key_on_nullable_key(tmp_path: Path) -> None:
    rows = [(None, i) for i in range(3000)] + [(v, v) for v in range(5000)]
    batch = make_batch(["k", "v"], [T.INT, T.INT], rows)
    path = tmp_path / "n.seg"
    write_segment(path, batch, ["k"], 1)
    for preds in (
        [ColumnPredicate("k", "is_null")],
        [ColumnPredicate("k", "<", (10,))],
        [ColumnPredicate("k", "is_not_null"), ColumnPredicate("k", "<=", (0,))],
    ):
        got, stats = scan(path, batch, ["k", "v"], preds)
        assert got == expected_rows(batch, ["k", "v"], preds)
        assert stats.rows_skipped_short_key > 4000


def test_scan_stats_add_and_as_dict() -> None:
    a, b = ScanStats(pages_read=2, rows_total=10), ScanStats(pages_read=3, bytes_read=7)
    a.add(b)
    assert a.as_dict()["pages_read"] == 5 and a.bytes_read == 7 and a.rows_total == 10
    assert set(a.as_dict()) >= {"segments_read", "segments_skipped", "rows_skipped_short_key"}


def test_predicates_on_columns_read_as_another_type(tmp_path: Path) -> None:
    """Indexes hold stored-type values: after INT -> BIGINT, VARCHAR(8) -> STRING or a DECIMAL
    scale change they must still prune exactly (or not at all)."""
    rows = [(i, f"s{i:05d}", i * 10) for i in range(20_000)]
    batch = make_batch(["k", "s", "d"], [T.INT, T.varchar(8), T.decimal(9, 1)], rows)
    path = tmp_path / "t.seg"
    write_segment(path, batch, ["k"], 1)
    wide = make_batch(
        ["k", "s", "d"],
        [T.BIGINT, T.STRING, T.decimal(12, 3)],
        [(k, s, d * 100) for k, s, d in rows],
    )
    for preds in (
        [ColumnPredicate("k", "=", (1234,))],
        [ColumnPredicate("k", "<", (2**40,))],
        [ColumnPredicate("k", ">", (2**40,))],
        [ColumnPredicate("s", ">=", ("s19990",))],
        [ColumnPredicate("d", "=", (5000,))],  # 5.000 at scale 3: the row with k = 5
        [ColumnPredicate("d", ">", (199_900_000,))],
    ):
        got, _ = scan(path, wide, ["k", "s", "d"], preds)
        assert got == expected_rows(wide, ["k", "s", "d"], preds), preds


def test_zone_maps_of_two_columns_exclude_everything(tmp_path: Path) -> None:
    """Regression: zone maps of a and b leave no rows; c's zone map must cope with that."""
    n = 50_000
    a = np.arange(n, dtype=np.int64)
    cols = (Column(T.BIGINT, a), Column(T.BIGINT, a[::-1].copy()), Column(T.BIGINT, a))
    batch = Batch(("a", "b", "c"), cols)
    path = tmp_path / "z.seg"
    write_segment(path, batch, [], 0)
    preds = [ColumnPredicate(c, "<", (100,)) for c in ("a", "b", "c")]
    got, stats = scan(path, batch, ["a"], preds)
    assert got == [] and stats.rows_skipped_zone_map == n and stats.pages_read == 0
