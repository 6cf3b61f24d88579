"""Reading MySQL packets off the socket under a size limit and timeouts.

mysql-mimic 3.0.5's `MysqlStream.read` (compiled) appends every 16 MB chunk of a packet until
the client stops, with no limit and no timeout: 384 MB sent before login grew the server by as
much (docs/mysql-mimic-fixes.md). `read_packet` reads the same framing (4-byte header: 3-byte
length, sequence id; a payload of exactly 0xFFFFFF bytes continues in the next packet) but
checks each header's length against the limit *before* reading the payload, so a packet over
`max_allowed_packet` costs no memory: it is MySQL's 1153 error and the connection ends. The
first header waits up to `idle_timeout` (wait_timeout between commands), every later read up to
`read_timeout` (net_read_timeout), so a client trickling a packet byte by byte cannot hold a
connection forever either. Writing stays with mysql-mimic's stream (its framing is fast).
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


async def _read_exactly(reader: asyncio.StreamReader, n: int, timeout: float | None) -> bytes:
    try:
        # asyncio.timeout schedules one timer; wait_for would wrap every read in a new Task
        async with asyncio.timeout(timeout):
            return await reader.readexactly(n)
    except asyncio.IncompleteReadError:
        raise ConnectionClosed() from None


async def read_packet(stream: Any, limit: int, idle_timeout: float | None,
                      read_timeout: float | None) -> bytes:
    """One logical packet's payload; raises PacketTooLarge, PacketsOutOfOrder, IdleTimeout
    (nothing arrived within `idle_timeout`), TimeoutError (a started packet stalled) or
    ConnectionClosed."""
    limit = max(limit, MIN_ALLOWED_PACKET)
    reader = stream.reader
    parts: list[bytes] = []
    total = 0
    first = True
    while True:
        try:
            header = await _read_exactly(reader, 4, idle_timeout if first else read_timeout)
        except TimeoutError:
            if first:
                raise IdleTimeout() from None
            raise
        first = False
        length = int.from_bytes(header[:3], "little")
        if header[3] != next(stream.seq):
            raise PacketsOutOfOrder()
        total += length
        if total > limit:
            raise PacketTooLarge()
        if length:
            parts.append(await _read_exactly(reader, length, read_timeout))
        if length < MAX_CHUNK:
            return parts[0] if len(parts) == 1 else b"".join(parts)


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
