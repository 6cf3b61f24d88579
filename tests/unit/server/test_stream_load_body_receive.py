"""server/stream_load.py `BodyReader` behind a real aiohttp server: the bytes a client sends
(with Content-Length or chunked transfer encoding, in odd piece sizes, across pauses of the
read-ahead) reach the load thread once and in order through aiohttp's parser, and an upload
cut short surfaces as an error in the load thread after the bytes that came before it.

The unit tests in test_stream_load_body_reader.py feed a StreamReader directly; these keep
the socket, the HTTP parser and the hand-off together, the path that a change to how the body
is received (read sizes, transport settings, the event loop) would alter."""

from __future__ import annotations

import asyncio
import hashlib
import queue
import random
import socket
import threading
from collections.abc import Iterator

import pytest
from aiohttp import web

from server import stream_load
from server.stream_load import BodyReader

READ_N = 7777  # an odd read size: blocks split across the received pieces


def read_all(reader: BodyReader) -> bytes:
    """The load thread's side: read `READ_N` at a time until the end, as pyarrow does."""
    blocks = []
    while block := reader.read(READ_N):
        blocks.append(block)
    assert all(len(b) == READ_N for b in blocks[:-1])  # a read fills n bytes until the end
    return b"".join(blocks)


class Server:
    """An aiohttp server on its own event loop thread whose one PUT handler reads the body
    through BodyReader on a worker thread; what each request got (the bytes or the error)
    goes to `results`."""

    def __init__(self) -> None:
        self.results: queue.Queue[bytes | BaseException] = queue.Queue()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self.port = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)

    async def _start(self) -> int:
        async def handler(request: web.Request) -> web.Response:
            reader = BodyReader(request, asyncio.get_running_loop())
            reader.start()
            try:
                data = await asyncio.to_thread(read_all, reader)
            except Exception as e:  # the test asserts on it; the client sees a 500
                self.results.put(e)
                raise
            finally:
                reader.stop()
            self.results.put(data)
            return web.Response(text=hashlib.sha256(data).hexdigest())

        app = web.Application()
        app.router.add_put("/load", handler)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        return int(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    # a small read-ahead so the pump pauses and resumes many times within one body
    monkeypatch.setattr(stream_load, "PREFETCH_BYTES", 100_000)
    srv = Server()
    yield srv
    srv.close()


def odd_pieces(data: bytes, rng: random.Random) -> list[bytes]:
    """`data` cut at random points: single bytes, a few bytes, and pieces of up to 300 KB."""
    out, i = [], 0
    while i < len(data):
        n = rng.choice([1, 2, 3, 17, 4095, 65537, 300_001])
        out.append(data[i:i + n])
        i += n
    return out


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # pieces leave as sent
    return sock


def response(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


@pytest.mark.parametrize("seed", [1, 2])
def test_a_content_length_body_in_odd_pieces_arrives_whole(server: Server, seed: int) -> None:
    rng = random.Random(seed)
    body = rng.randbytes(3_000_000)
    with connect(server.port) as sock:
        sock.sendall(b"PUT /load HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body))
        for piece in odd_pieces(body, rng):
            sock.sendall(piece)
        reply = response(sock)
    assert server.results.get(timeout=30) == body
    assert reply.startswith(b"HTTP/1.1 200")
    assert reply.endswith(hashlib.sha256(body).hexdigest().encode())


@pytest.mark.parametrize("seed", [3, 4])
def test_a_chunked_body_in_odd_chunks_arrives_whole(server: Server, seed: int) -> None:
    rng = random.Random(seed)
    body = rng.randbytes(2_000_000)
    with connect(server.port) as sock:
        sock.sendall(b"PUT /load HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        for piece in odd_pieces(body, rng):
            # the chunk framing and the data leave in separate sends: split mid-frame too
            sock.sendall(b"%x\r\n" % len(piece))
            sock.sendall(piece + b"\r\n")
        sock.sendall(b"0\r\n\r\n")
        reply = response(sock)
    assert server.results.get(timeout=30) == body
    assert reply.startswith(b"HTTP/1.1 200")


def test_an_empty_body_reads_as_the_end(server: Server) -> None:
    with connect(server.port) as sock:
        sock.sendall(b"PUT /load HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                     b"Content-Length: 0\r\n\r\n")
        reply = response(sock)
    assert server.results.get(timeout=30) == b""
    assert reply.startswith(b"HTTP/1.1 200")


def test_a_cut_upload_fails_the_load_thread_read(server: Server) -> None:
    sent = random.Random(5).randbytes(250_000)
    with connect(server.port) as sock:
        sock.sendall(b"PUT /load HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Length: %d\r\n\r\n" % (4 * len(sent)))
        sock.sendall(sent)
    # the client went away a quarter of the way in: the load thread's read raises instead
    # of waiting for bytes that never come (the Stream Load reports the failed load)
    result = server.results.get(timeout=30)
    assert not isinstance(result, bytes), f"read {len(result)} bytes of a cut upload"
