"""The `shaledb` writer's upload without Spark: `writer._ipc_chunks` is byte for byte the Arrow
IPC stream `pa.ipc.new_stream` writes, and `rest.put_chunked` delivers exactly those bytes with
chunked transfer encoding (decoded by a real HTTP server here), including a server that
answers before the body's end."""

from __future__ import annotations

import io
import random
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pyarrow as pa
import pytest

from shaledb_spark import rest
from shaledb_spark.writer import _ipc_chunks

WORDS = ["", "a", "ünïcødé", "日本語", "x" * 300, "line\nbreak"]


def _batches(rng: random.Random, n: int) -> list[pa.RecordBatch]:
    out = []
    for _ in range(n):
        rows = rng.choice([1, 7, 1000, 3000])
        ids = [None if rng.random() < 0.1 else rng.randint(-2**63, 2**63 - 1) for _ in range(rows)]
        names = [None if rng.random() < 0.1 else rng.choice(WORDS) for _ in range(rows)]
        tags = [None if rng.random() < 0.2 else
                [rng.choice(WORDS) for _ in range(rng.randint(0, 3))] for _ in range(rows)]
        rb = pa.record_batch({"id": pa.array(ids, pa.int64()),
                              "name": pa.array(names, pa.string()),
                              "tags": pa.array(tags, pa.list_(pa.string()))})
        # a sliced batch (offsets into its buffers), as a Spark batch may be
        out.append(rb.slice(1) if rows > 1 and rng.random() < 0.3 else rb)
    return out


def _reference(batches: list[pa.RecordBatch]) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, batches[0].schema) as writer:
        for rb in batches:
            writer.write_batch(rb)
    return sink.getvalue()


def _joined(chunks: Iterator[object]) -> bytes:
    return b"".join(bytes(memoryview(c)) for c in chunks)  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(5))
def test_ipc_chunks_are_the_ipc_stream(seed: int) -> None:
    batches = _batches(random.Random(seed), random.Random(seed).randint(1, 6))
    counter = [0]
    got = _joined(_ipc_chunks(batches[0], iter(batches[1:]), counter))
    assert got == _reference(batches)
    assert counter[0] == sum(rb.num_rows for rb in batches)
    back = pa.ipc.open_stream(got).read_all()
    assert back.equals(pa.Table.from_batches(batches))


class _Recorder(BaseHTTPRequestHandler):
    """Decodes a chunked PUT body and answers with its length; `refuse` answers at once."""

    bodies: ClassVar[list[bytes]] = []
    refuse = False

    def do_PUT(self) -> None:
        if type(self).refuse:
            self._answer(403, b'{"Status": "Fail", "Message": "no"}')
            self.close_connection = True
            return
        assert self.headers["Transfer-Encoding"] == "chunked"
        body = bytearray()
        while True:
            size = int(self.rfile.readline().strip(), 16)
            if size == 0:
                self.rfile.readline()
                break
            body += self.rfile.read(size)
            assert self.rfile.read(2) == b"\r\n"
        type(self).bodies.append(bytes(body))
        label = self.headers["label"].encode()
        self._answer(200, b'{"len": %d, "label": "%s"}' % (len(body), label))

    def _answer(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def http_server() -> Iterator[ThreadingHTTPServer]:
    _Recorder.bodies, _Recorder.refuse = [], False
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def test_put_chunked_delivers_the_stream(http_server: ThreadingHTTPServer) -> None:
    batches = _batches(random.Random(9), 5)
    chunks = list(_ipc_chunks(batches[0], iter(batches[1:]), [0]))
    port = http_server.server_address[1]
    # an empty chunk in the body is skipped (it would end the body)
    status, data = rest.put_chunked("127.0.0.1", port, "/api/db/t/_stream_load",
                                    {"label": "l1"}, [chunks[0], b"", *chunks[1:]])
    assert status == 200
    assert _Recorder.bodies == [_reference(batches)]
    assert rest._parsed(status, data, "x") == {"len": len(_reference(batches)), "label": "l1"}


def test_put_chunked_reads_an_early_refusal(http_server: ThreadingHTTPServer) -> None:
    _Recorder.refuse = True
    big = pa.py_buffer(b"x" * (8 << 20))  # more than the socket buffers hold
    status, data = rest.put_chunked("127.0.0.1", http_server.server_address[1], "/p",
                                    {"label": "l"}, iter([big] * 4))
    assert status == 403
    with pytest.raises(rest.ShaleDBError, match="403"):
        rest._parsed(status, data, "stream load")
