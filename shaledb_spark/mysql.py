"""MySQL-protocol connections to the frontend (pymysql, imported on first use): the driver's
DDL and SHOW LOAD of the writer, and the reads that do not go through Flight SQL."""

from __future__ import annotations

from typing import Any

from shaledb_spark import rest
from shaledb_spark.options import ConnectorOptions

_connection_class: Any = None


def _connection() -> Any:
    """pymysql's Connection whose default TLS context (PREFERRED mode: TLS when the server
    offers it, as ShaleDB's MySQL port does) is built once per process: pymysql builds one
    per connect, loading the system's CA certificates (~30 ms of CPU, paid by each write
    task's check after its precommit). The same settings, so the same handshake."""
    global _connection_class
    if _connection_class is None:
        import pymysql.connections

        class Connection(pymysql.connections.Connection):
            _default_ctx: Any = None

            def _create_ssl_ctx(self, sslp: Any) -> Any:
                if sslp != {}:
                    return super()._create_ssl_ctx(sslp)
                cls = type(self)
                if cls._default_ctx is None:
                    cls._default_ctx = super()._create_ssl_ctx(sslp)
                return cls._default_ctx

        _connection_class = Connection
    return _connection_class


def connect(opts: ConnectorOptions) -> Any:
    return _connection()(host=opts.host, port=rest.query_port(opts), user=opts.user,
                         password=opts.password, database=opts.db, autocommit=True,
                         charset="utf8mb4")


def unreachable(error: BaseException) -> bool:
    """`connect` failed because the MySQL port cannot be reached (pymysql's 2003)."""
    import pymysql

    return isinstance(error, pymysql.err.OperationalError) and error.args[:1] == (2003,)
