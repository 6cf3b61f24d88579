"""The MySQL listener: accepts sockets, refuses those over qe_max_connection, runs connections.

Replaces mysql-mimic's `MysqlServer._client_connected_cb`, which sends `Too many connections`
but then leaves the socket open (it returns before its `writer.close()`), has no connection
limit of its own (its `LocalControl` never refuses), and lets any error escape as an
"unhandled exception in client_connected_cb" traceback. Here a connection over the limit gets
MySQL's 1040 error packet in place of the greeting and is closed, as mysqld and Doris
(qe_max_connection, default 1024) do; every connection, however it ends, is unregistered and
its socket closed.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from mysql_mimic import MysqlServer
from mysql_mimic.stream import MysqlStream

from server.connection import ShaleConnection
from server.packets import ER_CON_COUNT_ERROR
from server.results import error_packet

logger = logging.getLogger(__name__)


class ShaleMysqlServer(MysqlServer):
    def __init__(self, *, max_connections: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_connections = max_connections

    def connection_count(self) -> int:
        return self.control.count()  # app.SequentialControl

    async def _client_connected_cb(self, reader: Any, writer: Any) -> None:
        stream = MysqlStream(reader, writer)
        connection_id = None
        try:
            if self.connection_count() >= self.max_connections:
                await stream.write(error_packet(self.capabilities, ER_CON_COUNT_ERROR, "08004",
                                                "Too many connections"))
                return
            connection = ShaleConnection(
                stream=stream, session=self.session_factory(), control=self.control,
                server_capabilities=self.capabilities, identity_provider=self.identity_provider,
                ssl=self.ssl,
            )
            connection_id = await self.control.add(connection)
            connection.connection_id = connection_id
            await connection.start()
        except (ConnectionError, OSError):
            pass  # the client went away: nothing to report
        except Exception:
            logger.exception("connection %s failed", connection_id)
        finally:
            if connection_id is not None:
                await self.control.remove(connection_id)
            with contextlib.suppress(Exception):
                writer.close()
