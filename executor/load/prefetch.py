"""Work ahead of the load thread: parsing a load's body on a thread of its own, a few blocks
ahead (`parsed_ahead`), and preparing parsed batches for insertion on worker threads
(`prepared_ahead`).

pyarrow's readers parse a block (split fields, build string columns) without the GIL, but a
streaming reader parses one block after another on the thread that asks for it: in a Stream
Load that thread then converts, routes and splits the block by tablet, so parsing (about a
quarter of a CSV load's CPU) and the rest took turns on one core (docs/performance.md, branch
load13). `parsed_ahead` runs the reader on a producer thread that keeps up to `depth` parsed
blocks queued, so the second core parses while the load thread works on earlier blocks.

What the readers record stays as it was read sequentially: the rows a reader filters (wrong
column count, bad JSON) are counted in a recorder of the producer's own and handed to the
load's `LoadStats` with the block they were found before, so the error log lists them in file
order among the rows conversion filters; an error of the reader (a cut upload, a timeout
waiting for the body, a corrupt file) is raised by the load thread at that point of the
stream. When the load thread stops early (an error, a timeout, a filter ratio exceeded) the
producer stops after its current block: a read blocked on the body ends when the server stops
reading the upload (server/stream_load.py BodyReader.stop) or at the load's timeout.

`prepared_ahead` runs a function (conversion, routing and the split by tablet) over the
batches on `workers` threads, several batches at once, and hands the results back in input
order: the caller inserts them into the memtables in file order (UNIQUE's last row wins, a
DUPLICATE memtable's in-order check) while the next batches are prepared. The numpy, pyarrow
and numba work of preparing mostly runs without the GIL, so two preparing threads use the
second core that a single load thread left idle (docs/performance.md, branch pipe15).
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

import pyarrow as pa

from executor.load.spec import LoadStats, StatsRecord

T = TypeVar("T")
R = TypeVar("R")


_BLOCK, _END, _ERROR = 0, 1, 2


def parsed_ahead(open_batches: Callable[[LoadStats], Iterator[pa.RecordBatch]],
                 stats: LoadStats | StatsRecord, depth: int = 4) -> Iterator[pa.RecordBatch]:
    """The batches of `open_batches(recorder)`, read on a producer thread up to `depth`
    batches ahead; the recorder's filtered rows are added to `stats` in stream order."""
    record = StatsRecord()
    handoff: queue.Queue[tuple[int, object, StatsRecord]] = queue.Queue(depth)
    stop = threading.Event()

    def put(item: tuple[int, object, StatsRecord]) -> bool:
        while not stop.is_set():
            try:
                handoff.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        batches = open_batches(record)  # type: ignore[arg-type]  # the surface readers use
        try:
            for rb in batches:
                if not put((_BLOCK, rb, record.handed_over())):
                    return
            put((_END, None, record.handed_over()))
        except BaseException as e:  # noqa: BLE001  # raised by the load thread instead
            put((_ERROR, e, record.handed_over()))
        finally:
            close = getattr(batches, "close", None)
            if close is not None:
                close()

    producer = threading.Thread(target=produce, name="load-parse", daemon=True)
    producer.start()
    try:
        while True:
            kind, value, recorded = handoff.get()
            recorded.apply_to(stats)
            if kind == _BLOCK:
                yield value
            elif kind == _END:
                return
            else:
                assert isinstance(value, BaseException)
                raise value
    finally:
        stop.set()
        while True:  # unblock a producer waiting for room
            try:
                handoff.get_nowait()
            except queue.Empty:
                break


@contextmanager
def prepared_ahead(prepare: Callable[[T], R], items: Iterable[T], workers: int = 2,
                   ahead: int = 2) -> Iterator[Iterator[R]]:
    """`prepare(item)` of each item, run on `workers` threads up to `workers + ahead` items
    ahead of the consumer, yielded in input order; an item's exception is raised where its
    result would have been. `items` is iterated on the consumer's thread (as it asks for
    results). Leaving the block (the load is over, failed or stopped early) cancels what has
    not started and waits for what runs, so nothing is still preparing afterwards (a
    preparing thread may reserve auto partitions the load's abort must then release)."""
    pool = ThreadPoolExecutor(workers, thread_name_prefix="load-prepare")
    results = _in_order(pool, prepare, iter(items), workers + ahead)
    try:
        yield results
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        results.close()  # and so `items` (e.g. stops the parsing thread of `parsed_ahead`)


def _in_order(pool: ThreadPoolExecutor, prepare: Callable[[T], R], items: Iterator[T],
              window: int) -> Generator[R, None, None]:
    running: deque[Future[R]] = deque()
    exhausted = False
    try:
        while True:
            while not exhausted and len(running) < window:
                try:
                    item = next(items)
                except StopIteration:
                    exhausted = True
                except BaseException as e:  # noqa: BLE001  # raised after the earlier items
                    failed: Future[R] = Future()
                    failed.set_exception(e)
                    running.append(failed)
                    exhausted = True
                else:
                    running.append(pool.submit(prepare, item))
            if not running:
                return
            yield running.popleft().result()
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()
