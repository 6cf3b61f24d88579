"""server/stream_load.py `BodyReader`: the event loop reads a Stream Load body ahead of the
load thread into a bounded buffer. Over a real aiohttp StreamReader on a real event loop
thread: every byte arrives once and in order across pauses of the read-ahead (a tiny
PREFETCH_BYTES), reads fill `n` bytes until the end, and an error of the upload reaches the
load thread after the bytes that came before it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from aiohttp import streams
from aiohttp.base_protocol import BaseProtocol

from server import stream_load
from server.stream_load import BodyReader


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()


def on_loop(loop: asyncio.AbstractEventLoop, fn: Any) -> Any:
    async def call() -> Any:
        return fn()
    return asyncio.run_coroutine_threadsafe(call(), loop).result(10)


class ConnectedTransport(asyncio.ReadTransport):
    """What a connected socket's protocol needs here: aiohttp pauses and resumes it."""

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False


def started_reader(loop: asyncio.AbstractEventLoop) -> tuple[BodyReader, streams.StreamReader]:
    def make() -> streams.StreamReader:
        protocol = BaseProtocol(loop)
        protocol.connection_made(ConnectedTransport())
        return streams.StreamReader(protocol, 2**16, loop=loop)
    content = on_loop(loop, make)
    reader = BodyReader(SimpleNamespace(content=content), loop)  # type: ignore[arg-type]
    on_loop(loop, reader.start)
    return reader, content


def test_every_byte_once_in_order_across_read_ahead_pauses(
        loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_load, "PREFETCH_BYTES", 1000)
    reader, content = started_reader(loop)
    pieces = [bytes([i % 251]) * (300 + 37 * i) for i in range(40)]

    def feed() -> None:
        for p in pieces:
            content.feed_data(p)
        content.feed_eof()
    on_loop(loop, feed)
    got = []
    while block := reader.read(777):
        got.append(block)
    assert b"".join(got) == b"".join(pieces)
    assert all(len(b) == 777 for b in got[:-1])  # a read fills n bytes until the end
    assert reader.read(10) == b""
    on_loop(loop, reader.stop)


def test_an_upload_error_reaches_the_load_after_its_bytes(
        loop: asyncio.AbstractEventLoop) -> None:
    reader, content = started_reader(loop)

    def feed() -> None:
        content.feed_data(b"x" * 5000)
        content.set_exception(ConnectionResetError("client went away"))
    on_loop(loop, feed)
    assert reader.read(4000) == b"x" * 4000
    with pytest.raises(ConnectionResetError, match="client went away"):
        reader.read(4000)
    on_loop(loop, reader.stop)


def test_stop_wakes_a_waiting_load(loop: asyncio.AbstractEventLoop) -> None:
    reader, content = started_reader(loop)
    on_loop(loop, lambda: content.feed_data(b"abc"))
    assert reader.read(3) == b"abc"
    on_loop(loop, reader.stop)  # the handler gave up: a read never waits forever
    with pytest.raises(ConnectionResetError):
        reader.read(3)


@pytest.mark.parametrize("seed", range(6))
def test_reads_of_random_sizes_return_the_body_in_order(
        loop: asyncio.AbstractEventLoop, seed: int) -> None:
    # reads smaller, equal and larger than the received chunks, reads that end exactly at a
    # chunk's end after starting inside it, and 1-byte reads: the body, each byte once
    import random
    rng = random.Random(seed)
    reader, content = started_reader(loop)
    # under the fake stream's pause mark (128 KiB): all fed at once
    pieces = [rng.randbytes(rng.choice([1, 5, 64, 1000, 1500])) for _ in range(80)]

    def feed() -> None:
        for p in pieces:
            content.feed_data(p)
        content.feed_eof()
    on_loop(loop, feed)
    body, got = b"".join(pieces), bytearray()
    while True:
        n = rng.choice([1, 3, 64, 999, 1000, 4096, 10_000])
        block = reader.read(n)
        assert isinstance(block, bytes)
        assert len(block) == min(n, len(body) - len(got))  # n bytes until the end
        if not block:
            break
        got += block
    assert bytes(got) == body
    on_loop(loop, reader.stop)
