"""The INSERT ... VALUES fast path (executor/kernels/insert_values.py numba scanner, its regex
fallback executor/insert_values_scanner.py, executor/insert_fast.py) gives
exactly what the general path (sqlglot parse -> evaluate -> convert) gives.

Differential: hundreds of generated statements with every column type, NULLs, negative
numbers, exponents, MySQL escapes, doubled quotes and unicode go to two identical tables,
once as written (the scanner takes them) and once behind a leading comment (which the scanner
does not recognise, so the general path runs). Table contents, affected-row counts and error
packets must be equal; the server's `shaledb_insert_fast_path_total` counter proves which
statements the fast path took."""

from __future__ import annotations

import random
import re

import pymysql
import pytest
from support.http import scrape_metrics

COLUMNS = [
    ("c_bool", "BOOLEAN"), ("c_tiny", "TINYINT"), ("c_small", "SMALLINT"), ("c_int", "INT"),
    ("c_big", "BIGINT"), ("c_large", "LARGEINT"), ("c_float", "FLOAT"), ("c_double", "DOUBLE"),
    ("c_dec", "DECIMAL(12, 3)"), ("c_dec38", "DECIMAL(38, 10)"), ("c_date", "DATE"),
    ("c_dt", "DATETIME"), ("c_dt3", "DATETIME(3)"), ("c_char", "CHAR(8)"),
    ("c_vc", "VARCHAR(24)"), ("c_str", "STRING"),
]
NUMERIC = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "LARGEINT", "FLOAT", "DOUBLE",
           "DECIMAL(12, 3)", "DECIMAL(38, 10)"}
STRINGS = ["", "plain", "it''s", "it\\'s", 'dq"in', "back\\\\slash", "tab\\tnew\\nline",
           "\\0nul", "pct\\%und\\_", "ünïcødé ✓", "日本語", "emoji 😀", "\\Z", "\\q"]


def _value(rng: random.Random, ctype: str, nulls: bool = True) -> str:
    if nulls and rng.random() < 0.12:
        return rng.choice(["NULL", "null"])
    if nulls and ctype in NUMERIC and rng.random() < 0.15:
        # numbers sent as strings, as drivers format Decimal / str parameters
        return "'" + _value(rng, ctype, nulls=False) + "'"
    if ctype == "BOOLEAN":
        return rng.choice(["TRUE", "FALSE", "true", "0", "1"])
    if ctype in ("TINYINT", "SMALLINT", "INT", "BIGINT", "LARGEINT"):
        bits = {"TINYINT": 7, "SMALLINT": 15, "INT": 31, "BIGINT": 63, "LARGEINT": 127}[ctype]
        edge = rng.random() < 0.2
        v = rng.choice([-(2**bits), 2**bits - 1]) if edge else rng.randint(-(2 ** min(bits, 40)), 2 ** min(bits, 40))
        return str(v) if rng.random() < 0.9 else rng.choice(["007", "-0", "0"])
    if ctype in ("FLOAT", "DOUBLE"):
        return rng.choice([str(rng.randint(-1000, 1000)), f"{rng.uniform(-1e6, 1e6):.6f}",
                           f"{rng.uniform(-10, 10):.3e}", "-0.5", ".25", "1e300" if ctype == "DOUBLE" else "1e30",
                           repr(rng.uniform(-1e7, 1e7)), "1.e5", "-.5E-2", "123456789012345678901.5",
                           "0.1", "-0", "9007199254740993", "2.5E-300" if ctype == "DOUBLE" else "2.5E-30"])
    if ctype.startswith("DECIMAL(12"):
        return rng.choice([str(rng.randint(-999999999, 999999999)), f"{rng.uniform(-1e8, 1e8):.3f}",
                           f"{rng.uniform(-1e3, 1e3):.1f}", f"{rng.uniform(-1, 1):.5f}", "-0.0005",
                           "000123.4", "-0.000", ".5", "-7."])
    if ctype.startswith("DECIMAL(38"):
        return rng.choice([str(rng.randint(-10**27, 10**27)), f"{rng.randint(-10**20, 10**20)}.{rng.randint(0, 10**10 - 1):010d}"])
    if ctype == "DATE":
        if rng.random() < 0.05:  # calendar edges (invalid ones are errors, from the general path)
            return rng.choice(["'2024-02-29'", "'2000-02-29'", "'1970-01-01'", "'9999-12-31'", "'2023-02-29'"])
        return f"'{rng.randint(1000, 9999)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}'"
    if ctype.startswith("DATETIME"):
        frac = rng.choice(["", f".{rng.randint(0, 999999):06d}", f".{rng.randint(0, 9)}"])
        sep = rng.choice([" ", "T"])
        return (f"'{rng.randint(1900, 2100)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}{sep}"
                f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}{frac}'")
    text = rng.choice(STRINGS)
    if ctype == "CHAR(8)":
        text = rng.choice(["", "abc", "it''s", "ü", "12345678"])
    quote = rng.choice(["'", '"']) if "''" not in text and '"' not in text else "'"
    return f"{quote}{text}{quote}"


def _statement(rng: random.Random, table: str) -> str:
    cols = COLUMNS if rng.random() < 0.5 else rng.sample(COLUMNS, rng.randint(1, len(COLUMNS)))
    quote = rng.choice(["", "`"])  # Connector/J and Spark quote column names with backticks
    names = "" if cols is COLUMNS else " (" + ", ".join(f"{quote}{n}{quote}" for n, _t in cols) + ")"
    rows = [", ".join(_value(rng, t) for _n, t in cols) for _ in range(rng.randint(1, 40))]
    sep = rng.choice([",", ", ", ",\n  "])
    return f"INSERT INTO {table}{names} VALUES " + sep.join(f"({r})" for r in rows) + rng.choice(["", ";", " ;\n"])


def _fast_path_count(server) -> int:
    return int(scrape_metrics(server.http_port)["shaledb_insert_fast_path_total"])


def _run(cur, sql: str) -> tuple[str, object]:
    try:
        cur.execute(sql)
        return "ok", cur.rowcount
    except pymysql.MySQLError as e:
        # each failed INSERT writes its own error log: compare the messages without its name
        code, message = e.args
        return "error", (code, re.sub(r"file=error_log_\w+", "file=error_log", message))


def _contents(cur, table: str) -> list[tuple[object, ...]]:
    names = ", ".join(n for n, _t in COLUMNS)
    cur.execute(f"SELECT {names} FROM {table} ORDER BY {names}")
    return list(cur.fetchall())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fast_path_equals_general_path(server, db_conn, seed: int) -> None:
    cols = ", ".join(f"{n} {t}" for n, t in COLUMNS)
    rng = random.Random(seed)
    with db_conn.cursor() as cur:
        for t in ("fast", "slow"):
            cur.execute(f"CREATE TABLE {t} ({cols}) DUPLICATE KEY(c_bool) DISTRIBUTED BY RANDOM BUCKETS 2")
        before = _fast_path_count(server)
        taken = 0
        for _ in range(60):
            stmt = _statement(rng, "TARGET")
            fast = _run(cur, stmt.replace("INSERT INTO TARGET", "INSERT INTO fast", 1))
            slow = _run(cur, "/* general path */ " + stmt.replace("INSERT INTO TARGET", "INSERT INTO slow", 1))
            assert fast == slow, stmt[:500]
            taken += fast[0] == "ok"
        assert _contents(cur, "fast") == _contents(cur, "slow")
        # every statement that loaded was a plain-literal one the scanner took (the ones
        # that fail, e.g. out of range, are left to the general path for its error)
        assert taken >= 40 and _fast_path_count(server) - before == taken


@pytest.mark.parametrize("stmt", [
    "INSERT INTO t VALUES (1, 'a'), (2, concat('b', 'c'))",  # expression
    "INSERT INTO t VALUES (1, DEFAULT)",
    "INSERT INTO t (k) VALUES (1), (2)",
    "INSERT INTO t VALUES (300, 'too big for tinyint')",  # error from the general path
    "INSERT INTO t VALUES (NULL, 'null key')",  # NOT NULL violation
    "INSERT INTO t VALUES (1, 'abcdefghijk')",  # longer than VARCHAR(10)
    "INSERT INTO t VALUES (1)",  # wrong value count
    "INSERT INTO t VALUES (1, 'x'),",  # syntax error
    "INSERT INTO t VALUES (1, 'x') (2, 'y')",  # syntax error: no comma between rows
    "INSERT INTO t VALUES (+1, 'plus')",
    "INSERT INTO t VALUES ('7', 'quoted number')",
    "INSERT INTO t VALUES ('NULL', 'the text NULL')",
    "INSERT INTO t VALUES ('1.5', 'quoted decimal into tinyint')",
    "INSERT INTO t VALUES (' 7', 'quoted with a space')",
    "INSERT INTO t VALUES (1.0, 'decimal into tinyint')",
    "INSERT INTO t WITH LABEL lbl_x VALUES (1, 'label')",
    "INSERT INTO t VALUES (1, 'a') -- trailing comment",
])
def test_fallbacks_and_errors_match(db_conn, stmt: str) -> None:
    with db_conn.cursor() as cur:
        for t in ("t", "u"):
            cur.execute(f"CREATE TABLE {t} (k TINYINT NOT NULL, v VARCHAR(10) DEFAULT 'dflt') "
                        "DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
        fast = _run(cur, stmt)
        slow = _run(cur, "/* general */ " + stmt.replace("INSERT INTO t ", "INSERT INTO u ").replace("lbl_x", "lbl_y"))
        if fast[0] == "error":
            assert slow[0] == "error" and fast[1][0] == slow[1][0]
            assert fast[1][1].replace("lbl_x", "") == slow[1][1].replace("lbl_y", "").replace("`u`", "`t`").replace("[u]", "[t]")
        else:
            assert fast == slow
        assert _contents_kv(cur, "t") == _contents_kv(cur, "u")


def _contents_kv(cur, table: str) -> list[tuple[object, ...]]:
    cur.execute(f"SELECT k, v FROM {table} ORDER BY k, v")
    return list(cur.fetchall())


def test_qualified_names_and_column_lists(db_conn, db) -> None:
    with db_conn.cursor() as cur:
        cur.execute("CREATE TABLE `odd name` (a INT, `b c` VARCHAR(5), d DATE) "
                    "DUPLICATE KEY(a) DISTRIBUTED BY HASH(a) BUCKETS 1")
        cur.execute(f"INSERT INTO `{db}`.`odd name` (d, `b c`, a) VALUES ('2024-05-06', 'x', 1), (NULL, NULL, 2)")
        assert cur.rowcount == 2
        cur.execute("SELECT a, `b c`, d FROM `odd name` ORDER BY a")
        import datetime as dt  # noqa: PLC0415

        assert cur.fetchall() == ((1, "x", dt.date(2024, 5, 6)), (2, None, None))
