"""Reading MySQL packets off the socket under a size limit and timeouts.

mysql-mimic 3.0.5's `MysqlStream.read` (compiled) appends every 16 MB chunk of a packet until
the client stops, with no limit and no timeout: 384 MB sent before login grew the server by as
much (docs/mysql-mimic-fixes.md). `read_packet` reads the same framing (4-byte header: 3-byte
length, sequence id; a payload of exactly 0xFFFFFF bytes continues in the next packet) but
checks each header's length against the limit *before* reading the payload, so a packet over
`max_allowed_packet` costs no memory: it is MySQL's 1153 error and the connection ends. The
first header waits up to `idle_timeout` (wait_timeout between commands), every chunk after it up
to `read_timeout` (net_read_timeout), so a client trickling a packet byte by byte cannot hold a
connection forever either; the deadlines cost no timer per packet (`Deadline`). Writing stays
with mysql-mimic's stream (its framing is fast).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from mysql_mimic.stream import ConnectionClosed

from server.packets import ER_NET_PACKET_TOO_LARGE, MalformedPacket

MAX_CHUNK = 0xFFFFFF
MIN_ALLOWED_PACKET = 1024  # MySQL's lower bound for max_allowed_packet
ER_NET_PACKETS_OUT_OF_ORDER = 1156
# After an error that ends the connection, unread input is discarded for at most this long
# (and this many bytes) so that closing does not reset the socket before the client has read
# the error packet (a close with unread data sends TCP RST, which can discard it).
LINGER_SECONDS = 2.0
LINGER_BYTES = 64 * 1024 * 1024


class PacketTooLarge(MalformedPacket):
    def __init__(self) -> None:
        super().__init__("Got a packet bigger than 'max_allowed_packet' bytes",
                         ER_NET_PACKET_TOO_LARGE, "08S01")


class PacketsOutOfOrder(MalformedPacket):
    def __init__(self) -> None:
        super().__init__("Got packets out of order", ER_NET_PACKETS_OUT_OF_ORDER, "08S01")


class IdleTimeout(Exception):
    """No packet started within the idle timeout."""


class Deadline:
    """A deadline on a StreamReader, moved on every packet without touching the event loop's
    timer heap: one timer stays armed and, when it fires early (the deadline moved on), re-arms
    itself for the new one; when the deadline has passed, the reader's pending read raises
    `make_error()`. A per-read asyncio.timeout would add and cancel a timer for every packet."""

    def __init__(self, reader: asyncio.StreamReader, make_error: type[Exception]) -> None:
        self._reader = reader
        self._make_error = make_error
        self._loop = asyncio.get_running_loop()
        self._when: float | None = None
        self._timer: asyncio.TimerHandle | None = None

    def start(self, seconds: float | None) -> None:
        if seconds is None:
            self._when = None
            return
        self._when = self._loop.time() + seconds
        if self._timer is not None and self._timer.when() > self._when:
            self._timer.cancel()  # a shorter timeout than the armed one (SET wait_timeout)
            self._timer = None
        if self._timer is None:
            self._timer = self._loop.call_at(self._when, self._fire)

    def stop(self) -> None:
        self._when = None

    def cancel(self) -> None:
        self._when = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        self._timer = None
        if self._when is None:
            return
        if self._loop.time() < self._when:
            self._timer = self._loop.call_at(self._when, self._fire)
            return
        self._when = None
        self._reader.set_exception(self._make_error())


class PacketInput:
    """Reads a connection's packets: `read` frames them under a size limit and two deadlines
    (idle until a packet starts, then read_timeout for each chunk)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._idle = Deadline(stream.reader, IdleTimeout)
        self._stalled = Deadline(stream.reader, TimeoutError)

    def close(self) -> None:
        self._idle.cancel()
        self._stalled.cancel()

    async def read(self, limit: int, idle_timeout: float | None,
                   read_timeout: float | None) -> bytes:
        """One logical packet's payload; raises PacketTooLarge, PacketsOutOfOrder,
        IdleTimeout (nothing arrived within `idle_timeout`), TimeoutError (a started packet
        stalled for `read_timeout`) or ConnectionClosed."""
        limit = max(limit, MIN_ALLOWED_PACKET)
        reader = self._stream.reader
        parts: list[bytes] = []
        total = 0
        self._idle.start(idle_timeout)
        try:
            header = await reader.readexactly(4)
            self._idle.stop()
            while True:
                self._stalled.start(read_timeout)
                length = int.from_bytes(header[:3], "little")
                if header[3] != next(self._stream.seq):
                    raise PacketsOutOfOrder()
                total += length
                if total > limit:
                    raise PacketTooLarge()
                if length:
                    parts.append(await reader.readexactly(length))
                if length < MAX_CHUNK:
                    return parts[0] if len(parts) == 1 else b"".join(parts)
                header = await reader.readexactly(4)
        except asyncio.IncompleteReadError:
            raise ConnectionClosed() from None
        finally:
            self._idle.stop()
            self._stalled.stop()


async def linger_and_close(stream: Any) -> None:
    """Half-close after a fatal error packet, discard what the client still sends for a
    bounded time, so the error packet reaches it; the caller closes the socket."""
    writer = stream.writer
    with contextlib.suppress(Exception):
        await stream.drain()
        if writer.can_write_eof():
            writer.write_eof()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LINGER_SECONDS
    discarded = 0
    with contextlib.suppress(Exception):
        while discarded < LINGER_BYTES:
            left = deadline - loop.time()
            if left <= 0:
                break
            chunk = await asyncio.wait_for(stream.reader.read(65536), left)
            if not chunk:
                break
            discarded += len(chunk)
