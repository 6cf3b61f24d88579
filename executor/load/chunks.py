"""Reading a load's body a block at a time: the byte counter and the line-aligned blocks.

`line_blocks` cuts the stream into blocks of whole lines for any line delimiter (`\\n`,
`\\r\\n`, `|||`, `\\x02`, ...): each read block is searched for the last delimiter with
`bytes.rfind` (C speed) and the partial line is carried into the next block, so memory stays
bounded by the block size plus the longest line.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import BinaryIO

READ_BLOCK = 1 << 20  # bytes read per block (pyarrow's default block_size)


class ForwardStream:
    """The file-like surface pyarrow's readers need from a forward-only byte source:
    subclasses implement `read(n)`."""

    closed = False

    def read(self, n: int = -1) -> bytes:
        raise NotImplementedError

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True


class CountedStream(ForwardStream):
    """A file-like view of `raw` that counts the bytes read and the time spent waiting."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self.nbytes = 0
        self.wait_s = 0.0

    def read(self, n: int = -1) -> bytes:
        start = time.perf_counter()
        data = self._raw.read(READ_BLOCK if n is None or n < 0 else n)
        self.wait_s += time.perf_counter() - start
        self.nbytes += len(data)
        return data


def read_blocks(stream: BinaryIO) -> Iterator[bytes]:
    """The stream's bytes, a block at a time, until EOF."""
    while True:
        block = stream.read(READ_BLOCK)
        if not block:
            return
        yield bytes(block)


def line_blocks(stream: BinaryIO, delimiter: bytes) -> Iterator[bytes]:
    """Blocks of whole lines, the last delimiter of each block cut off; the final line
    needs no delimiter. Split a block on `delimiter` to get its lines."""
    carry = b""
    for block in read_blocks(stream):
        buf = carry + block if carry else block
        # a delimiter may straddle the previous block's end: rfind over the joined buffer
        cut = buf.rfind(delimiter)
        if cut < 0:
            carry = buf
            continue
        carry = buf[cut + len(delimiter):]
        yield buf[:cut]
    if carry:
        yield carry
