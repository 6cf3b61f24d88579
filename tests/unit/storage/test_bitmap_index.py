"""Bitmap index (storage/indexes/bitmap_index.py): every lookup equals the exact predicate
evaluation on random data of every supported type, reads stay lazy (a point lookup touches one
dictionary page and one bitmap page), segments without indexes read as before, and damaged
index pages raise an error naming the file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from segment_data import random_values

from storage import types as T
from storage.batch import Batch, Column
from storage.errors import ShaleError
from storage.indexes import bitmap_index as bi
from storage.indexes.spec import SegmentIndexSpec
from storage.indexes.zone_map import index_value
from storage.predicates import ColumnPredicate, evaluate
from storage.scan_stats import ScanStats
from storage.segment import SegmentReader, write_segment
from storage.segment.footer import read_footer

TYPES = [T.BOOLEAN, T.TINYINT, T.INT, T.BIGINT, T.LARGEINT, T.decimal(9, 2),
         T.decimal(38, 6), T.DATE, T.datetime(6), T.varchar(32), T.STRING, T.char(8)]
OPS = ["=", "!=", "<", "<=", ">", ">=", "in", "not_in", "is_null", "is_not_null"]


@pytest.fixture()
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many dictionary and bitmap pages even for small columns."""
    monkeypatch.setattr(bi, "DICT_PAGE_BYTES", 64)
    monkeypatch.setattr(bi, "BITMAP_PAGE_BYTES", 96)
    monkeypatch.setattr(bi, "ROARING_MIN_ROWS", 4)


def write(path: Path, values: Column, **spec: frozenset[str]) -> dict[str, T.DataType]:
    n = len(values)
    batch = Batch(("k", "c"), (Column(T.BIGINT, np.arange(n)), values))
    write_segment(path, batch, ["k"], 1, indexes=SegmentIndexSpec(**spec))
    return dict(zip(batch.names, batch.types))


def rows_of(bitmap: object) -> list[int]:
    return sorted(int(x) for x in bitmap)  # type: ignore[attr-defined]


def check_all_ops(reader: SegmentReader, col: Column, rng: np.random.Generator) -> None:
    info = reader.column("c")
    index = reader.bitmap_index(info)
    assert index is not None
    present = [v for v in col.to_pylist() if v is not None]
    pool = present[:5] + [present[int(i)] for i in rng.integers(0, len(present), 3)] \
        if present else []
    for op in OPS:
        candidates: list[tuple[object, ...]] = []
        if op in ("is_null", "is_not_null"):
            candidates = [()]
        elif op in ("in", "not_in"):
            candidates = [tuple(pool[:3]), (), tuple(pool[-2:])]
        else:
            candidates = [(v,) for v in pool[:4]]
        for values in candidates:
            pred = ColumnPredicate("c", op, values)
            want = np.flatnonzero(evaluate(pred, col)).tolist()
            index_values = [index_value(info.stored, info.layout, v) for v in values]
            assert rows_of(index.lookup(op, index_values)) == want, (info.stored, op, values)


@pytest.mark.parametrize("dtype", TYPES, ids=[t.sql() for t in TYPES])
def test_lookups_equal_exact_evaluation(tmp_path: Path, small_pages: None,
                                        dtype: T.DataType) -> None:
    rng = np.random.default_rng(hash(dtype.sql()) % 2**32)
    for n, null_frac in ((1, 0.0), (300, 0.2), (2000, 0.0)):
        col = Column.from_physical(dtype, random_values(rng, dtype, n, null_frac))
        types = write(tmp_path / "s.seg", col, bitmap_columns=frozenset({"c"}))
        with SegmentReader(tmp_path / "s.seg", types) as reader:
            check_all_ops(reader, col, rng)


@settings(max_examples=30, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.text(alphabet="ab\x00é日🙂", max_size=4)),
                       min_size=1, max_size=60),
       probe=st.text(alphabet="ab\x00é日🙂", max_size=4))
def test_string_lookups_with_unicode_and_nul(tmp_path_factory: pytest.TempPathFactory,
                                             values: list[str | None], probe: str) -> None:
    path = tmp_path_factory.mktemp("bm") / "s.seg"
    col = Column.from_physical(T.STRING, values)
    types = write(path, col, bitmap_columns=frozenset({"c"}))
    with SegmentReader(path, types) as reader:
        info = reader.column("c")
        index = reader.bitmap_index(info)
        assert index is not None
        for op in ("=", "!=", "<", "<=", ">", ">="):
            want = np.flatnonzero(evaluate(ColumnPredicate("c", op, (probe,)), col)).tolist()
            assert rows_of(index.lookup(op, [probe.encode()])) == want, op


def test_point_lookup_reads_one_dictionary_and_one_bitmap_page(tmp_path: Path) -> None:
    n = 200_000
    values = Column(T.BIGINT, (np.arange(n) * 7919) % 50_000)
    types = write(tmp_path / "p.seg", values, bitmap_columns=frozenset({"c"}))
    with SegmentReader(tmp_path / "p.seg", types) as reader:
        info = reader.column("c")
        stats = ScanStats()
        index = reader.bitmap_index(info, stats)
        assert index is not None
        meta_bytes = stats.bytes_read
        assert meta_bytes == info.footer.bitmap_index.size  # type: ignore[union-attr]
        assert len(index.index.dict_offset) > 10 and len(index.index.bm_offset) > 10
        rows = index.lookup("=", [12345])
        assert rows_of(rows) == np.flatnonzero(values.data == 12345).tolist()
        page_sizes = {int(s) for s in index.index.dict_size} | {int(s) for s in
                                                                index.index.bm_size}
        read = stats.bytes_read - meta_bytes
        assert read <= 2 * max(page_sizes)
        assert rows_of(index.lookup("=", [50_001])) == []


def test_segment_without_indexes_reads_as_before(tmp_path: Path) -> None:
    col = Column.from_physical(T.STRING, ["a", None, "b"] * 10)
    types = write(tmp_path / "n.seg", col)
    raw = (tmp_path / "n.seg").read_bytes()
    footer, _ = read_footer(raw)  # type: ignore[arg-type]
    assert all(c.bitmap_index is None and c.bloom_filter is None for c in footer.columns)
    assert b"bitmap_index" not in raw and b"bloom_filter" not in raw
    with SegmentReader(tmp_path / "n.seg", types) as reader:
        assert reader.bitmap_index(reader.column("c")) is None
        got = list(reader.read(["c"], [ColumnPredicate("c", "=", ("b",))]))
    assert sum(b.num_rows for b in got) == 10


def test_unsupported_types_get_no_index(tmp_path: Path) -> None:
    types = write(tmp_path / "f.seg", Column(T.DOUBLE, np.ones(5)),
                  bitmap_columns=frozenset({"c"}))
    with SegmentReader(tmp_path / "f.seg", types) as reader:
        assert reader.column("c").footer.bitmap_index is None


@pytest.mark.parametrize("part", ["index", "dict", "bitmap"])
def test_corrupt_bitmap_index_pages_name_the_file(tmp_path: Path, small_pages: None,
                                                  part: str) -> None:
    path = tmp_path / "c.seg"
    col = Column.from_physical(T.STRING, [f"v{i % 97}" for i in range(3000)])
    types = write(path, col, bitmap_columns=frozenset({"c"}))
    with SegmentReader(path, types) as reader:
        info = reader.column("c")
        index = reader.bitmap_index(info)
        assert index is not None
        pointer = info.footer.bitmap_index
        assert pointer is not None
        ordinal, exact = index.seek(b"v42")
        assert exact
        dict_page = int(np.searchsorted(index.index.dict_first, ordinal, side="right")) - 1
        bm_page = int(np.searchsorted(index.index.bm_first, ordinal, side="right")) - 1
        where = {"index": (pointer.offset, pointer.size),
                 "dict": (int(index.index.dict_offset[dict_page]),
                          int(index.index.dict_size[dict_page])),
                 "bitmap": (int(index.index.bm_offset[bm_page]),
                            int(index.index.bm_size[bm_page]))}[part]
    raw = path.read_bytes()
    for pos in (where[0] + 1, where[0] + where[1] // 2, where[0] + where[1] - 1):
        broken = bytearray(raw)
        broken[pos] ^= 0x08
        path.write_bytes(bytes(broken))
        with SegmentReader(path, types, tablet_id=77) as reader, \
                pytest.raises(ShaleError) as info_:
            index = reader.bitmap_index(reader.column("c"))
            assert index is not None
            index.lookup("=", [b"v42"])
        assert info_.value.message.startswith(
            f"errCode = 2, detailMessage = Corrupted segment file {path} of tablet 77: "
            "bitmap index")


def test_entries_reject_garbage() -> None:
    with pytest.raises(ValueError):
        bi.decode_entry(b"")
    with pytest.raises(ValueError):
        bi.decode_entry(b"\x07abc")
    with pytest.raises(ValueError):
        bi.decode_entry(b"\x00abc")
    with pytest.raises(ValueError):
        bi.decode_entry(b"\x00" + np.array([5, 3], "<u4").tobytes())
    with pytest.raises(ValueError):
        bi.decode_entry(b"\x01garbage-not-roaring")


def test_written_indexes_tell_what_the_segment_holds(tmp_path: Path) -> None:
    col = Column.from_physical(T.STRING, ["a", None, "b"] * 10)
    types = write(tmp_path / "w.seg", col)
    with SegmentReader(tmp_path / "w.seg", types) as reader:
        assert reader.written_indexes().empty
    batch = Batch(("k", "c", "d"), (Column(T.BIGINT, np.arange(30)), col,
                                    Column(T.DOUBLE, np.ones(30))))
    write_segment(tmp_path / "w.seg", batch, ["k"], 1, indexes=SegmentIndexSpec(
        frozenset({"c", "d"}), frozenset({"k", "d"}), 0.02))
    with SegmentReader(tmp_path / "w.seg", dict(zip(batch.names, batch.types))) as reader:
        # DOUBLE gets neither index
        assert reader.written_indexes() == SegmentIndexSpec(frozenset({"c"}), frozenset({"k"}),
                                                            0.02)
