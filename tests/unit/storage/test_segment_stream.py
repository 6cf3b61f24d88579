"""SegmentStream (a segment encoded as its rows arrive) writes the same file, byte for byte, as
write_segment given all the rows at once: every type, NULLs, empty strings, unicode, pages cut
anywhere (small PAGE_SIZE), the rows split into pieces at random points (empty pieces too),
bloom filters; and the file reads back as the rows."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from segment_data import TYPE_MENU, canon_rows, make_batch, random_values, sort_key
from test_segment_roundtrip import sorted_table

from storage import types as T
from storage.batch import Batch
from storage.indexes import short_key
from storage.indexes.spec import NO_INDEXES, SegmentIndexSpec
from storage.segment import read_segment, write_segment, writer
from storage.segment.writer import SegmentStream


def streamed(path: Path, batch: Batch, keys: list[str], short_keys: int, cuts: list[int],
             indexes: SegmentIndexSpec = NO_INDEXES) -> None:
    stream = SegmentStream(batch.names, batch.types, keys, short_keys, indexes)
    bounds = [0, *sorted(min(c, batch.num_rows) for c in cuts), batch.num_rows]
    for lo, hi in itertools.pairwise(bounds):
        stream.append(batch.slice(lo, hi))
    info = stream.finish(path)
    assert info.num_rows == batch.num_rows and info.size == path.stat().st_size


def check_same_file(batch: Batch, keys: list[str], short_keys: int, cuts: list[int],
                    indexes: SegmentIndexSpec = NO_INDEXES) -> None:
    with tempfile.TemporaryDirectory() as d:
        whole, pieces = Path(d) / "whole.seg", Path(d) / "pieces.seg"
        write_segment(whole, batch, keys, short_keys, indexes)
        streamed(pieces, batch, keys, short_keys, cuts, indexes)
        assert pieces.read_bytes() == whole.read_bytes()
        back = read_segment(pieces, list(batch.names), list(batch.types))
        assert canon_rows(back.rows()) == canon_rows(batch.rows())


@settings(max_examples=150, deadline=None)
@given(table=sorted_table(), page_size=st.sampled_from([48, 200, 65536]),
       interval=st.sampled_from([1, 3, 1024]), data=st.data())
def test_pieces_write_the_same_bytes(table: tuple[Batch, list[str], int], page_size: int,
                                     interval: int, data: st.DataObject) -> None:
    batch, keys, short_keys = table
    cuts = data.draw(st.lists(st.integers(0, max(batch.num_rows, 1)), max_size=6))
    bloom = data.draw(st.sets(st.sampled_from(batch.names)))
    indexes = SegmentIndexSpec(bloom_filter_columns=frozenset(n.lower() for n in bloom))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(writer, "PAGE_SIZE", page_size)  # many pages from few rows
        mp.setattr(short_key, "SHORT_KEY_INTERVAL", interval)
        check_same_file(batch, keys, short_keys, cuts, indexes)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1025, 40000))
def test_large_pieces_at_the_real_page_size(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    types = [T.BIGINT, T.varchar(32), T.DOUBLE, T.INT, T.DATE, T.STRING]
    names = [f"c{i}" for i in range(len(types))]
    columns = [random_values(rng, t, n, 0.0 if i == 0 else 0.1) for i, t in enumerate(types)]
    rows = sorted(zip(*columns), key=lambda r: sort_key(r, [0]))
    batch = make_batch(names, types, rows)
    cuts = sorted(rng.integers(0, n, int(rng.integers(1, 8))).tolist())
    check_same_file(batch, ["c0"], 1, cuts)


def test_no_rows_is_an_empty_segment() -> None:
    types = list(TYPE_MENU[:5])
    batch = make_batch([f"c{i}" for i in range(5)], types, [])
    check_same_file(batch, ["c0"], 1, [])
    with tempfile.TemporaryDirectory() as d:  # nothing appended at all
        path = Path(d) / "s.seg"
        SegmentStream(batch.names, batch.types, ["c0"], 1).finish(path)
        write_segment(Path(d) / "w.seg", batch, ["c0"], 1)
        assert path.read_bytes() == (Path(d) / "w.seg").read_bytes()


def test_unsorted_pieces_are_refused() -> None:
    batch = make_batch(["k"], [T.BIGINT], [(2,), (3,), (1,)])
    with tempfile.TemporaryDirectory() as d:
        stream = SegmentStream(batch.names, batch.types, ["k"], 1)
        stream.append(batch.slice(0, 2))
        stream.append(batch.slice(2, 3))
        with pytest.raises(ValueError, match="not sorted"):
            stream.finish(Path(d) / "s.seg")
        assert not list(Path(d).iterdir())


def test_bitmap_indexed_columns_are_not_streamed() -> None:
    spec = SegmentIndexSpec(bitmap_columns=frozenset({"k"}))
    assert not SegmentStream.supports(["k"], spec)
    with pytest.raises(ValueError):
        SegmentStream(["k"], [T.BIGINT], ["k"], 1, spec)
