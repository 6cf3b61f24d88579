"""executor/load/prefetch.py: a body parsed on its own thread gives the load thread the same
batches, filtered-row reasons (in stream order, before the batch they were found with), errors
and counts as reading it on the load thread; a load that stops early stops the producer."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from executor.load.prefetch import parsed_ahead
from executor.load.spec import LoadStats

# a block: (rows, reasons the reader records while reading it)
blocks_strategy = st.lists(st.tuples(st.integers(0, 5), st.lists(st.text(max_size=3),
                                                                   max_size=3)), max_size=12)


def _reader(blocks: list[tuple[int, list[str]]], fail_at: int | None = None):
    def open_batches(stats: LoadStats) -> Iterator[pa.RecordBatch]:
        for i, (rows, reasons) in enumerate(blocks):
            for r in reasons:
                stats.skipped_rows += 1
                stats.filtered(f"{i}:{r}")
            if i == fail_at:
                raise pa.ArrowInvalid(f"bad block {i}")
            yield pa.record_batch([pa.array(range(rows))], names=["k"])
    return open_batches


def _consume(open_batches, stats: LoadStats, log: list[str], depth: int) -> list[int]:
    """The load thread's side: the reasons conversion records after each batch are logged
    next to the reader's, as the sequential load interleaves them."""
    sizes = []
    for rb in open_batches if depth == 0 else parsed_ahead(open_batches, stats, depth):
        sizes.append(rb.num_rows)
        stats.filtered(f"convert {len(sizes)}")
    log.extend(stats.error_rows)
    return sizes


@settings(max_examples=60, deadline=None)
@given(blocks_strategy, st.integers(1, 4), st.one_of(st.none(), st.integers(0, 11)))
def test_same_batches_reasons_and_errors_as_sequential(blocks, depth, fail_at) -> None:
    results = []
    for d in (0, depth):
        stats, log = LoadStats(), []
        source = _reader(blocks, fail_at)
        try:
            sizes = _consume(source(stats) if d == 0 else source, stats, log, d)
            error = None
        except pa.ArrowInvalid as e:
            sizes, error = None, str(e)
            log.extend(stats.error_rows)
        results.append((sizes, error, log, stats.skipped_rows, stats.filtered_rows))
    assert results[0] == results[1]


def test_stopping_early_stops_the_producer() -> None:
    produced = []
    release = threading.Event()

    def endless(stats: LoadStats) -> Iterator[pa.RecordBatch]:
        try:
            while True:
                produced.append(1)
                yield pa.record_batch([pa.array([1])], names=["k"])
        finally:
            release.set()

    it = parsed_ahead(endless, LoadStats(), depth=2)
    assert next(it).num_rows == 1
    it.close()
    assert release.wait(10)  # the producer closed its reader
    count = len(produced)
    assert count <= 2 + 2  # at most depth blocks ahead, plus the one handed over, plus one
    with pytest.raises(StopIteration):
        next(it)
