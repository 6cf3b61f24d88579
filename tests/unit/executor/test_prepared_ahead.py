"""`prepared_ahead` (executor/load/prefetch.py): items prepared on worker threads come back in
input order whatever order the threads finish in; an item's error, or the item iterator's, is
raised after the results of the items before it; leaving early waits for what runs and starts
nothing more."""

from __future__ import annotations

import random
import threading
import time

import pytest

from executor.load.prefetch import prepared_ahead


def test_results_in_input_order_whatever_the_threads_finish_order() -> None:
    rng = random.Random(3)
    delays = [rng.uniform(0, 0.004) for _ in range(200)]
    seen_threads: set[str] = set()

    def prepare(i: int) -> int:
        time.sleep(delays[i])  # later items often finish first
        seen_threads.add(threading.current_thread().name)
        return i * i

    with prepared_ahead(prepare, range(200), workers=3) as results:
        assert list(results) == [i * i for i in range(200)]
    assert len(seen_threads) > 1  # the work really ran on several threads
    assert threading.current_thread().name not in seen_threads


def test_an_items_error_is_raised_after_the_items_before_it() -> None:
    def prepare(i: int) -> int:
        if i == 7:
            raise ValueError("bad item 7")
        time.sleep(0.001 * (i % 3))
        return i

    got: list[int] = []
    with pytest.raises(ValueError, match="bad item 7"):
        with prepared_ahead(prepare, range(20)) as results:
            for r in results:
                got.append(r)
    assert got == list(range(7))


def test_the_item_iterators_error_comes_after_the_items_it_gave() -> None:
    def items():
        yield from range(5)
        raise OSError("the upload was cut")

    got: list[int] = []
    with pytest.raises(OSError, match="the upload was cut"):
        with prepared_ahead(lambda i: i + 100, items()) as results:
            for r in results:
                got.append(r)
    assert got == [100, 101, 102, 103, 104]


def test_leaving_early_waits_for_running_work_and_starts_no_more() -> None:
    started: list[int] = []
    finished: list[int] = []
    closed = threading.Event()

    def items():
        try:
            yield from range(1000)
        finally:
            closed.set()

    def prepare(i: int) -> int:
        started.append(i)
        time.sleep(0.01)
        finished.append(i)
        return i

    with prepared_ahead(prepare, items(), workers=2, ahead=2) as results:
        for r in results:
            if r == 3:
                break
    # on leaving: nothing is still running, nothing new starts, the items were closed
    assert sorted(started) == sorted(finished)
    count = len(started)
    time.sleep(0.05)
    assert len(started) == count
    assert count <= 3 + 1 + 2 + 2  # the consumed items plus at most the window ahead
    assert closed.is_set()
