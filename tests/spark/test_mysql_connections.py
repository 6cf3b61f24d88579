"""The connector's MySQL connections build pymysql's default TLS context once per process
(shaledb_spark/mysql.py) and still upgrade to TLS as pymysql's PREFERRED mode does: ShaleDB's
MySQL port offers TLS, so each connection runs over it, sharing the one context."""

from __future__ import annotations

from support.server import ServerProcess

from shaledb_spark import mysql
from shaledb_spark.options import parse_options


def test_connections_share_one_tls_context(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with ServerProcess(tmp_path / "data") as srv:
        with srv.connect() as c, c.cursor() as cur:
            cur.execute("CREATE DATABASE d")
            cur.execute("CREATE TABLE d.t (k INT) DISTRIBUTED BY HASH(k) BUCKETS 1 "
                        "PROPERTIES('replication_num'='1')")
        opts = parse_options({"fenodes": f"127.0.0.1:{srv.http_port}", "user": "root",
                              "password": "", "table": "d.t"})
        conns = [mysql.connect(opts) for _ in range(3)]
        try:
            assert all(c.ctx is conns[0].ctx for c in conns)
            for c in conns:
                with c.cursor() as cur:
                    cur.execute("SHOW STATUS LIKE 'Ssl_cipher'")
                    (_, cipher), = cur.fetchall()
                    assert cipher  # over TLS
                    cur.execute("SELECT 1")
                    assert cur.fetchall() == ((1,),)
        finally:
            for c in conns:
                c.close()
    # a connection asking for its own TLS settings gets its own context
    klass = mysql._connection()
    assert klass._create_ssl_ctx(object.__new__(klass), {"ca": None}) is not klass._default_ctx
