"""MySQL-protocol connections to the frontend (pymysql, imported on first use): the driver's
DDL and SHOW LOAD of the writer, and the reads that do not go through Flight SQL."""

from __future__ import annotations

from typing import Any

from shaledb_spark import rest
from shaledb_spark.options import ConnectorOptions


def connect(opts: ConnectorOptions) -> Any:
    import pymysql

    return pymysql.connect(host=opts.host, port=rest.query_port(opts), user=opts.user,
                           password=opts.password, database=opts.db, autocommit=True,
                           charset="utf8mb4")


def unreachable(error: BaseException) -> bool:
    """`connect` failed because the MySQL port cannot be reached (pymysql's 2003)."""
    import pymysql

    return isinstance(error, pymysql.err.OperationalError) and error.args[:1] == (2003,)
