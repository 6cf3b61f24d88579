"""Parsing a load's body on a thread of its own, a few blocks ahead of the load thread.

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
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa

from executor.load.spec import LoadStats


@dataclass
class _ParseRecord:
    """The LoadStats surface readers write (skipped_rows, filtered), kept per block."""

    skipped_rows: int = 0
    reasons: list[str] = field(default_factory=list)

    def filtered(self, reason: str) -> None:
        self.reasons.append(reason)

    def handed_over(self) -> tuple[int, list[str]]:
        """What was recorded since the last call, and start afresh."""
        out = (self.skipped_rows, self.reasons)
        self.skipped_rows, self.reasons = 0, []
        return out


_BLOCK, _END, _ERROR = 0, 1, 2


def parsed_ahead(open_batches: Callable[[LoadStats], Iterator[pa.RecordBatch]],
                 stats: LoadStats, depth: int = 4) -> Iterator[pa.RecordBatch]:
    """The batches of `open_batches(recorder)`, read on a producer thread up to `depth`
    batches ahead; the recorder's filtered rows are added to `stats` in stream order."""
    record = _ParseRecord()
    handoff: queue.Queue[tuple[int, object, tuple[int, list[str]]]] = queue.Queue(depth)
    stop = threading.Event()

    def put(item: tuple[int, object, tuple[int, list[str]]]) -> bool:
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
            kind, value, (skipped, reasons) = handoff.get()
            stats.skipped_rows += skipped
            for reason in reasons:
                stats.filtered(reason)
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
