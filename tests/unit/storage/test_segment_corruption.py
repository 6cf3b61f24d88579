"""Damaged segment files: reading raises ShaleError 1105 naming the file (and tablet), and never
returns wrong data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from segment_data import batch_rows, canon_rows

from storage import types as T
from storage.batch import Batch, Column
from storage.errors import ShaleError
from storage.predicates import ColumnPredicate
from storage.segment import SegmentReader, read_segment, write_segment
from storage.segment.footer import TRAILER

TYPES = {"k": T.BIGINT, "s": T.STRING, "d": T.DOUBLE, "l": T.LARGEINT}


def make(n: int) -> Batch:
    rng = np.random.default_rng(n)
    k = np.sort(rng.integers(0, 10**6, n))
    s = [f"v{int(x) % 97}" if x % 5 else None for x in k]
    d = rng.normal(size=n)
    large = np.empty(n, dtype=object)
    large[:] = [int(x) * 2**70 for x in k]
    return Batch(
        ("k", "s", "d", "l"),
        (
            Column(T.BIGINT, k),
            Column.from_physical(T.STRING, s),
            Column(T.DOUBLE, d),
            Column(T.LARGEINT, large),
        ),
    )


@pytest.fixture()
def segment(tmp_path: Path) -> tuple[Path, Batch, bytes]:
    batch = make(20_000)
    path = tmp_path / "c.seg"
    write_segment(path, batch, ["k"], 1)
    return path, batch, path.read_bytes()


def read_all(path: Path, preds: list[ColumnPredicate] | None = None) -> list[tuple[object, ...]]:
    with SegmentReader(path, TYPES, tablet_id=10086) as r:
        return batch_rows(list(r.read(list(TYPES), preds or [])))


def assert_corrupt(path: Path, preds: list[ColumnPredicate] | None = None) -> ShaleError:
    with pytest.raises(ShaleError) as info:
        read_all(path, preds)
    err = info.value
    assert err.code == 1105
    assert err.message.startswith(
        f"errCode = 2, detailMessage = Corrupted segment file {path} of tablet 10086: "
    )
    return err


def data_page_offset(path: Path, column: str) -> tuple[int, int]:
    with SegmentReader(path, TYPES) as r:
        info = r.column(column)
        ordinal = r.ordinal(info)
        return int(ordinal.offsets[1]), int(ordinal.sizes[1])


@pytest.mark.parametrize("column", ["k", "s", "d", "l"])
def test_flipped_byte_in_a_data_page(segment: tuple[Path, Batch, bytes], column: str) -> None:
    path, _, raw = segment
    offset, size = data_page_offset(path, column)
    for pos in (offset, offset + 7, offset + size // 2, offset + size - 1):
        broken = bytearray(raw)
        broken[pos] ^= 0x10
        path.write_bytes(bytes(broken))
        assert "data page 1 of column" in assert_corrupt(path).message or pos < offset + 24


def test_flipped_byte_in_the_footer(segment: tuple[Path, Batch, bytes]) -> None:
    path, _, raw = segment
    footer_len = int.from_bytes(raw[-TRAILER.size : -TRAILER.size + 4], "little")
    start = len(raw) - TRAILER.size - footer_len
    for pos in (
        start,
        start + footer_len // 2,
        len(raw) - TRAILER.size - 1,
        len(raw) - 12,
        len(raw) - 1,
    ):
        broken = bytearray(raw)
        broken[pos] ^= 0x01
        path.write_bytes(bytes(broken))
        assert_corrupt(path)


@pytest.mark.parametrize("keep", [0, 1, 15, 16, 100, 0.5, -1, -16, -17])
def test_truncated_file(segment: tuple[Path, Batch, bytes], keep: float) -> None:
    path, _, raw = segment
    cut = (
        int(len(raw) * keep)
        if isinstance(keep, float)
        else (keep if keep >= 0 else len(raw) + keep)
    )
    path.write_bytes(raw[:cut])
    assert_corrupt(path)


def test_missing_file_and_reader_without_tablet(tmp_path: Path) -> None:
    with pytest.raises(ShaleError, match=r"Corrupted segment file .*nope.seg: cannot open"):
        SegmentReader(tmp_path / "nope.seg", TYPES)
    (tmp_path / "junk.seg").write_bytes(b"not a segment at all, just some bytes...")
    with pytest.raises(ShaleError) as info:
        read_segment(tmp_path / "junk.seg", ["k"], [T.BIGINT])
    assert f"Corrupted segment file {tmp_path / 'junk.seg'}: " in info.value.message
    assert "of tablet" not in info.value.message


def test_index_pages_are_checked_when_used(segment: tuple[Path, Batch, bytes]) -> None:
    path, batch, raw = segment
    with SegmentReader(path, TYPES) as r:
        zm = r.column("d").footer.zone_map
        sk = r.footer.short_key
    assert sk is not None
    for pointer, preds in (
        (zm, [ColumnPredicate("d", ">", (0.5,))]),
        (sk.page, [ColumnPredicate("k", "=", (int(batch.columns[0].data[777]),))]),
    ):
        broken = bytearray(raw)
        broken[pointer.offset + pointer.size // 2] ^= 0x04
        path.write_bytes(bytes(broken))
        assert_corrupt(path, preds)


def test_any_flipped_byte_never_returns_wrong_data(tmp_path: Path) -> None:
    """Flip every byte of a small file in turn: each read either raises ShaleError or returns the
    original rows (bytes of index pages a scan does not use may go unnoticed)."""
    batch = make(300)
    path = tmp_path / "small.seg"
    write_segment(path, batch, ["k"], 1)
    raw = path.read_bytes()
    expected = canon_rows(batch.rows())
    pred = [ColumnPredicate("k", ">=", (int(batch.columns[0].data[100]),))]
    expected_pred = [r for r in expected if r[0] >= batch.columns[0].data[100]]
    detected = 0
    for pos in range(len(raw)):
        broken = bytearray(raw)
        broken[pos] ^= 0xA5
        path.write_bytes(bytes(broken))
        for preds, want in (([], expected), (pred, expected_pred)):
            try:
                got = read_all(path, preds)
            except ShaleError as e:
                assert "Corrupted segment file" in e.message
                detected += 1
                continue
            assert got == want, f"wrong data after flipping byte {pos}"
    assert detected >= len(raw)  # the unfiltered full read catches every byte it depends on


@settings(max_examples=40, deadline=None)
@given(pos=st.integers(0, 10**9), bit=st.integers(0, 7))
def test_random_bit_flips_in_a_larger_file(
    tmp_path_factory: pytest.TempPathFactory, pos: int, bit: int
) -> None:
    path = tmp_path_factory.mktemp("flip") / "f.seg"
    batch = make(5000)
    write_segment(path, batch, ["k"], 1)
    raw = bytearray(path.read_bytes())
    raw[pos % len(raw)] ^= 1 << bit
    path.write_bytes(bytes(raw))
    try:
        got = read_all(path)
    except ShaleError:
        return
    assert got == canon_rows(batch.rows())


def test_flipped_bytes_in_index_pages_never_return_wrong_data(tmp_path: Path) -> None:
    """Every byte of the bitmap index and bloom filter pages of a small indexed segment, flipped
    in turn: scans whose predicates those indexes serve either raise ShaleError naming the file
    or return the right rows."""
    from storage.indexes.spec import SegmentIndexSpec
    
    batch = make(1500)
    path = tmp_path / "idx.seg"
    write_segment(path, batch, ["k"], 1,
                  indexes=SegmentIndexSpec(frozenset({"s", "l"}), frozenset({"s", "k"})))
    raw = path.read_bytes()
    with SegmentReader(path, TYPES) as r:
        regions = []
        for name in ("s", "l"):
            info = r.column(name)
            index = r.bitmap_index(info)
            assert index is not None and info.footer.bitmap_index is not None
            regions.append(info.footer.bitmap_index)
            regions.extend(zip(index.index.dict_offset.tolist(), index.index.dict_size.tolist()))
            regions.extend(zip(index.index.bm_offset.tolist(), index.index.bm_size.tolist()))
        for name in ("s", "k"):
            pointer = r.column(name).footer.bloom_filter
            assert pointer is not None
            regions.append(pointer)
    spans = [(p.offset, p.size) if hasattr(p, "offset") else p for p in regions]
    k = batch.columns[0].data
    queries = [
        [ColumnPredicate("s", "=", ("v3",)), ColumnPredicate("l", "!=", (int(k[5]) * 2**70,))],
        [ColumnPredicate("s", "is_null")],
        [ColumnPredicate("k", "in", (int(k[7]), int(k[900]), -1))],
        [ColumnPredicate("l", "<", (int(k[300]) * 2**70,)), ColumnPredicate("s", ">=", ("v5",))],
    ]
    expected = [read_all(path, q) for q in queries]
    assert all(expected)
    detected = 0
    for offset, size in spans:
        for pos in range(offset, offset + size, max(1, size // 12)):
            broken = bytearray(raw)
            broken[pos] ^= 0x5A
            path.write_bytes(bytes(broken))
            for q, want in zip(queries, expected):
                try:
                    got = read_all(path, q)
                except ShaleError as e:
                    assert "Corrupted segment file" in e.message
                    detected += 1
                    continue
                assert got == want, f"wrong rows after flipping byte {pos}"
    assert detected > 0
