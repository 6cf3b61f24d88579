"""ShaleConnection: mysql-mimic's Connection with our result streaming and error packets.

Overrides COM_QUERY and COM_INIT_DB handling so that: results stream batch by batch with a
socket drain after each (mysql-mimic buffers the whole result, LIBS.md 1.9); OK packets carry
Doris' info string; every `ShaleError` becomes an error packet with its own code and SQLSTATE;
KILL QUERY also sets the victim's cancel token so its worker thread stops. Installed by
`app.py` as the class mysql-mimic's server instantiates (pinned mysql-mimic==3.0.5).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

from mysql_mimic import connection as mm_connection
from mysql_mimic import packets
from mysql_mimic.constants import KillKind
from mysql_mimic.errors import MysqlError

from server.commands import OkOutcome, Outcome, RowsOutcome, TextOutcome
from server.results import column_definition, encode_python_rows, encode_rows, error_packet, ok_packet
from sql.errors import ErrorCode, ShaleError
from storage.batch import Batch
from storage.types import STRING

logger = logging.getLogger(__name__)


def _next_encoded(batches: Iterator[Batch]) -> list[bytes] | None:
    """Pull the next batch (running the query a step) and encode it; None at the end."""
    for batch in batches:
        if batch.num_rows:
            return encode_rows(batch)
    return None


class ShaleConnection(mm_connection.Connection):
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
            await self.write_end(len(outcome.rows))
        else:
            await self.write_rows(outcome)

    async def write_header(self, names: list[str], types: list[Any]) -> None:
        header = [packets.make_column_count(capabilities=self.capabilities, column_count=len(names))]
        header += [column_definition(n, t, self.server_charset) for n, t in zip(names, types)]
        if not self.deprecate_eof():
            header.append(self.eof())
        self.stream.write_many(header)

    async def write_end(self, rows: int) -> None:
        await self.stream.write(self.ok_or_eof(affected_rows=rows), drain=False)
        await self.stream.drain()

    async def write_rows(self, outcome: RowsOutcome) -> None:
        session = self.session
        # Run the first step before the header so analysis/runtime errors give a clean ERR.
        first = await session.in_worker(_next_encoded, outcome.batches)
        await self.write_header(outcome.names, outcome.types)
        count = 0
        chunk = first
        while chunk is not None:
            self.stream.write_many(chunk)
            await self.stream.drain()
            count += len(chunk)
            try:
                chunk = await session.in_worker(_next_encoded, outcome.batches)
            except ShaleError as e:
                await self.write_error(e)  # mid-stream: ERR replaces the final OK/EOF
                return
        await self.write_end(count)
