"""SQLAlchemy (`mysql+pymysql://`) and pandas against a live server: connect (the dialect's
connect-time queries), `inspect(engine)` table/column listing parsed from SHOW CREATE TABLE,
has_table (DESCRIBE -> 1146), `pandas.read_sql`, and `DataFrame.to_sql`, which sends MySQL
DDL (BIGINT, TEXT, FLOAT(53), DATETIME, BOOL) and a multi-row INSERT."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mysql as sa_mysql


@pytest.fixture
def engine(server, db):
    eng = sa.create_engine(f"mysql+pymysql://root@127.0.0.1:{server.port}/{db}")
    yield eng
    eng.dispose()


def test_connect_and_query(engine) -> None:
    with engine.connect() as c:
        assert c.execute(sa.text("SELECT 1 + 1 AS two")).scalar_one() == 2
        assert c.dialect.server_version_info[:2] == (5, 7)


def test_inspector_lists_tables_and_columns(engine, db_conn) -> None:
    with db_conn.cursor() as cur:
        cur.execute(
            "CREATE TABLE events (dt DATE NOT NULL, user_id BIGINT NOT NULL, city VARCHAR(20), "
            "cost DECIMAL(10, 2) DEFAULT '0', n INT, flag BOOLEAN, f FLOAT, d DOUBLE, "
            "ts DATETIME(3), code CHAR(4), note STRING, small SMALLINT, tiny TINYINT) "
            "DUPLICATE KEY(dt, user_id) DISTRIBUTED BY HASH(user_id) BUCKETS 2")
        cur.execute("CREATE TABLE other (k INT) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
    insp = sa.inspect(engine)
    assert sorted(insp.get_table_names()) == ["events", "other"]
    assert insp.has_table("events") and not insp.has_table("nope")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.exc.SAWarning)  # Doris' DUPLICATE KEY / PROPERTIES lines
        cols = insp.get_columns("events")
    got = [(c["name"], type(c["type"]), c["nullable"]) for c in cols]
    assert got == [
        ("dt", sa_mysql.DATE, False), ("user_id", sa_mysql.BIGINT, False),
        ("city", sa_mysql.VARCHAR, True), ("cost", sa_mysql.DECIMAL, True),
        ("n", sa_mysql.INTEGER, True), ("flag", sa_mysql.BOOLEAN, True),
        ("f", sa_mysql.FLOAT, True), ("d", sa_mysql.DOUBLE, True),
        ("ts", sa_mysql.DATETIME, True), ("code", sa_mysql.CHAR, True),
        ("note", sa_mysql.TEXT, True), ("small", sa_mysql.SMALLINT, True),
        ("tiny", sa_mysql.TINYINT, True),
    ]
    by_name = {c["name"]: c for c in cols}
    assert by_name["city"]["type"].length == 20
    assert (by_name["cost"]["type"].precision, by_name["cost"]["type"].scale) == (10, 2)
    assert by_name["cost"]["default"] == "'0'"
    assert by_name["ts"]["type"].fsp == 3
    with pytest.raises(sa.exc.NoSuchTableError):
        insp.get_columns("nope")


def test_sqlalchemy_core_insert_and_select(engine, db_conn) -> None:
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE kv (k INT, v VARCHAR(30)) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 1")
    kv = sa.Table("kv", sa.MetaData(), autoload_with=engine)
    with engine.begin() as c:
        c.execute(kv.insert(), [{"k": i, "v": f"it's {i}"} for i in range(5)])
    with engine.connect() as c:
        rows = c.execute(sa.select(kv.c.k, kv.c.v).where(kv.c.k >= 3).order_by(kv.c.k)).all()
    assert rows == [(3, "it's 3"), (4, "it's 4")]


def _frame() -> pd.DataFrame:
    return pd.DataFrame({
        "id": np.arange(1, 6, dtype="int64"),
        "name": ["a", "b'quote", None, "ünï", "back\\slash"],
        "score": [1.5, -2.25, None, 1e300, 0.1],
        "ok": [True, False, True, False, True],
        "at": pd.to_datetime(["2024-01-01 10:00:00", "2024-02-29 23:59:59", None,
                              "1999-12-31 00:00:01", "2030-06-15 12:30:00"]),
    })


def test_pandas_to_sql_creates_table_from_mysql_ddl(engine, db_conn) -> None:
    df = _frame()
    df.to_sql("frame", engine, index=False)
    with db_conn.cursor() as cur:
        cur.execute("DESC frame")
        desc = [(r[0], r[1], r[3]) for r in cur.fetchall()]
        cur.execute("SHOW CREATE TABLE frame")
        create = cur.fetchone()[1]
    # BIGINT / TEXT / FLOAT(53) / BOOL / DATETIME mapped by sql/parser/mysql_ddl.py; no KEY or
    # DISTRIBUTED clause: a DUPLICATE table keyed on its first column, random distribution
    assert desc == [("id", "BIGINT", "true"), ("name", "TEXT", "false"),
                    ("score", "DOUBLE", "false"), ("ok", "BOOLEAN", "false"),
                    ("at", "DATETIME", "false")]
    assert "DUPLICATE KEY(`id`)" in create and "DISTRIBUTED BY RANDOM BUCKETS AUTO" in create
    back = pd.read_sql("SELECT * FROM frame ORDER BY id", engine)
    expected = df.copy()
    expected["ok"] = expected["ok"].astype("int64")  # BOOLEAN comes back as TINYINT 0/1
    pd.testing.assert_frame_equal(back, expected, check_dtype=False)


def test_pandas_to_sql_append_and_replace(engine) -> None:
    df = _frame()
    df.to_sql("frame2", engine, index=False)
    df.to_sql("frame2", engine, index=False, if_exists="append")
    assert pd.read_sql("SELECT count(*) AS n FROM frame2", engine)["n"].tolist() == [10]
    df.head(2).to_sql("frame2", engine, index=False, if_exists="replace")
    assert pd.read_sql("SELECT id FROM frame2 ORDER BY id", engine)["id"].tolist() == [1, 2]


def test_pandas_read_sql_with_params_and_zero_rows(engine) -> None:
    _frame().to_sql("frame3", engine, index=False)
    got = pd.read_sql(sa.text("SELECT id, name FROM frame3 WHERE name = :n"), engine,
                      params={"n": "b'quote"})
    assert got.to_dict("records") == [{"id": 2, "name": "b'quote"}]
    empty = pd.read_sql("SELECT id, score FROM frame3 WHERE 1 = 0", engine)
    assert list(empty.columns) == ["id", "score"] and len(empty) == 0
