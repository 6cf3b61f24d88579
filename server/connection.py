"""ShaleConnection: mysql-mimic's Connection with our result streaming and error packets.

Overrides COM_QUERY and COM_INIT_DB handling so that: results stream batch by batch with a
socket drain after each (mysql-mimic buffers the whole result, LIBS.md 1.9). Each batch is
encoded and framed columnar in a worker thread (server/text_encoding.py), continuing the
stream's sequence counter (`stream.seq.value`), and its buffer goes straight to the transport;
the next batch is computed while the previous one drains. OK packets carry
Doris' info string; every `ShaleError` becomes an error packet with its own code and SQLSTATE;
KILL QUERY also sets the victim's cancel token so its worker thread stops. Prepared statements
(COM_STMT_*) come from the `PreparedStatements` mixin (server/prepared.py). Installed by
`app.py` as the class mysql-mimic's server instantiates (pinned mysql-mimic==3.0.5).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import numpy as np

from mysql_mimic import connection as mm_connection
from mysql_mimic import packets
from mysql_mimic.constants import KillKind
from mysql_mimic.errors import MysqlError

from server.commands import OkOutcome, Outcome, RowsOutcome, TextOutcome
from server.prepared import PreparedStatements
from server.results import column_definition, encode_python_rows, error_packet, ok_packet
from server.text_encoding import Chunk, encode_batch
from sql.errors import ErrorCode, ShaleError
from storage.batch import Batch
from storage.types import STRING

logger = logging.getLogger(__name__)


Encoded = tuple[list[Chunk], int, int]  # (packet buffers, rows, next sequence id)
FIRST_ROWS = 4096  # the first packet run is small so the client sees rows at once
MAX_ROWS = 65536  # rows framed per step: bounds the buffer whatever batch size the plan yields


class BatchFeed:
    """Pulls a query's batches (running it a step at a time) and frames them in slices."""

    def __init__(self, batches: Iterator[Batch]) -> None:
        self._batches = batches
        self._rest: Batch | None = None

    def next_encoded(self, seq: int, max_rows: int = MAX_ROWS) -> Encoded | None:
        """Frame up to `max_rows` rows from sequence id `seq`; None once the query is done."""
        batch = self._rest
        self._rest = None
        if batch is None:
            batch = next((b for b in self._batches if b.num_rows), None)
            if batch is None:
                return None
        if batch.num_rows > max_rows:
            self._rest = batch.slice(max_rows, batch.num_rows)
            batch = batch.slice(0, max_rows)
        chunks, next_seq = encode_batch(batch, seq)
        return chunks, batch.num_rows, next_seq


def _retrieve(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()  # an abandoned prefetch: its error is not reported twice


class ShaleConnection(PreparedStatements, mm_connection.Connection):
    async def authenticate(self, *args: Any, **kwargs: Any) -> None:
        database = self.session.database
        if database and not self.session.server.database_exists(database):
            await self.write_error(ShaleError(f"Unknown database '{database}'", ErrorCode.BAD_DB_ERROR))
            raise ConnectionAbortedError(f"unknown database {database}")
        await super().authenticate(*args, **kwargs)

    def kill(self, kind: KillKind = KillKind.CONNECTION) -> None:
        runner = getattr(self.session, "runner", None)
        if runner is not None:
            runner.cancel.set()
        super().kill(kind)

    async def write_error(self, error: ShaleError) -> None:
        await self.stream.write(error_packet(self.capabilities, error.code, error.sqlstate, error.message))

    async def handle_init_db(self, data: bytes) -> None:
        try:
            await self.session.use(packets.parse_com_init_db(self.client_charset, data))
        except ShaleError as e:
            await self.write_error(e)
            return
        await self.stream.write(self.ok())

    async def handle_query(self, data: bytes) -> None:
        com_query = packets.parse_com_query(
            capabilities=self.capabilities, client_charset=self.client_charset, data=data
        )
        try:
            outcome = await self.session.run_sql(com_query.sql)
            await self.write_outcome(outcome)
        except ShaleError as e:
            await self.write_error(e)
        except MysqlError:
            raise
        except asyncio.CancelledError:
            raise
        except ConnectionError:
            # The client went away mid-result: nothing to report to it; mysql-mimic's read loop
            # notices the closed socket and ends the connection.
            logger.info("client disconnected while receiving a result")
        except Exception as e:  # noqa: BLE001 - never let an internal error kill the connection
            logger.exception("internal error running %r", com_query.sql[:200])
            await self.write_error(ShaleError(f"errCode = 2, detailMessage = Internal error: {e}"))
        finally:
            self.session.statement_done()

    async def write_outcome(self, outcome: Outcome) -> None:
        if isinstance(outcome, OkOutcome):
            await self.stream.write(
                ok_packet(self.capabilities, self.status_flags, outcome.affected_rows, outcome.info)
            )
        elif isinstance(outcome, TextOutcome):
            await self.write_header(outcome.names, [STRING] * len(outcome.names))
            self.stream.write_many(encode_python_rows(outcome.rows))
            await self.write_end()
        else:
            await self.write_rows(outcome)

    async def write_header(self, names: list[str], types: list[Any]) -> None:
        header = [packets.make_column_count(capabilities=self.capabilities, column_count=len(names))]
        header += [column_definition(n, t, self.server_charset) for n, t in zip(names, types)]
        if not self.deprecate_eof():
            header.append(self.eof())
        self.stream.write_many(header)

    async def write_end(self) -> None:
        # The end-of-result OK (CLIENT_DEPRECATE_EOF) carries affected_rows=0 as MySQL sends it:
        # MariaDB Connector/J skips that field as a length-prefixed string, so a row count there
        # shifts its read of the status flags past the packet end (docs/mysql-mimic-fixes.md).
        await self.stream.write(self.ok_or_eof(affected_rows=0), drain=False)
        await self.stream.drain()

    def _header_packets(self, ncols: int) -> int:
        return 1 + ncols + (0 if self.deprecate_eof() else 1)

    async def write_rows(self, outcome: RowsOutcome) -> None:
        session = self.session
        stream = self.stream
        # The first step runs before the header so analysis/runtime errors give a clean ERR; its
        # rows are framed with the sequence id the header will leave.
        after_header = (stream.seq.value + self._header_packets(len(outcome.names))) & 0xFF
        feed = BatchFeed(outcome.batches)
        encoded = await session.in_worker(feed.next_encoded, after_header, FIRST_ROWS)
        await self.write_header(outcome.names, outcome.types)
        if stream.seq.value != after_header:  # pragma: no cover - mysql-mimic contract changed
            raise RuntimeError("result header used an unexpected number of packets")
        await stream.drain()  # the header goes out at once
        loop = asyncio.get_running_loop()
        pending: asyncio.Future[Encoded | None] | None = None
        try:
            while encoded is not None:
                chunks, _rows, seq = encoded
                stream.seq.value = seq
                # Compute and frame the next batch while this one drains (2 batches in memory).
                pending = loop.run_in_executor(session.server.pool, feed.next_encoded, seq)
                for chunk in chunks:
                    stream.writer.write(memoryview(chunk) if isinstance(chunk, np.ndarray) else chunk)
                await stream.writer.drain()
                try:
                    encoded = await pending
                except ShaleError as e:
                    pending = None
                    await self.write_error(e)  # mid-stream: ERR replaces the final OK/EOF
                    return
                pending = None
        finally:
            if pending is not None:  # client gone or query killed while a batch was prefetched
                pending.add_done_callback(_retrieve)
                pending.cancel()
        await self.write_end()
