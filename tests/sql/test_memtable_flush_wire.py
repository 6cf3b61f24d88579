"""Loads bigger than the write buffer, over the wire: a server started with conf
`[load] write_buffer_size = 65536` flushes segments in the middle of a multi-row INSERT and of
INSERT ... SELECT (OVERLAPPING rowsets), and SELECT still returns exact results for DUPLICATE,
AGGREGATE (SUM/MAX/MIN, keys repeated across flushes and loads) and UNIQUE with a sequence
column. A failed INSERT leaves no file behind while the server runs."""

from __future__ import annotations

from pathlib import Path

import pymysql
import pytest
from support.server import ServerProcess

WRITE_BUFFER = 65536
BUCKETS = 2


def segment_files(data: Path) -> set[Path]:
    return set(data.glob("be/*/data/*/*.seg"))


@pytest.fixture(scope="module")
def small_buffer_server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("memtable-flush")
    conf = root / "shaledb.toml"
    conf.write_text(f"[load]\nwrite_buffer_size = {WRITE_BUFFER}\n")
    with ServerProcess(root / "data", backends=2, extra_args=["--conf", str(conf)]) as srv:
        yield srv


def test_bigger_than_buffer_loads_read_back_exactly(small_buffer_server: ServerProcess) -> None:
    srv = small_buffer_server
    data = srv.data_dir
    n0 = 20000
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE DATABASE m")
        cur.execute("USE m")
        cur.execute("CREATE TABLE src (k BIGINT NOT NULL, v BIGINT) DUPLICATE KEY(k) "
                    f"DISTRIBUTED BY HASH(k) BUCKETS {BUCKETS}")
        # one multi-row INSERT of about 170 KB per tablet: flushed before its commit
        before = segment_files(data)
        cur.execute("INSERT INTO src VALUES " + ", ".join(f"({k}, {7 * k})" for k in range(n0)))
        assert len(segment_files(data) - before) >= BUCKETS
        n = n0
        while n < 160000:  # INSERT ... SELECT batches of 64K rows: a flush per batch
            cur.execute(f"INSERT INTO src SELECT k + {n}, (k + {n}) * 7 FROM src")
            n *= 2
        cur.execute("SELECT count(*), sum(k), sum(v), min(v), max(v) FROM src")
        assert cur.fetchone() == (n, n * (n - 1) // 2, 7 * n * (n - 1) // 2, 0, 7 * (n - 1))

        cur.execute("CREATE TABLE agg (g BIGINT, s BIGINT SUM, mx BIGINT MAX, mn BIGINT MIN) "
                    f"AGGREGATE KEY(g) DISTRIBUTED BY HASH(g) BUCKETS {BUCKETS}")
        before = segment_files(data)
        cur.execute("INSERT INTO agg SELECT k % 1000, v, v, v FROM src")
        # every tablet flushed more than once: more segments than one run per tablet
        assert len(segment_files(data) - before) > BUCKETS
        cur.execute("INSERT INTO agg SELECT k % 1500, 1, -1, -1 FROM src WHERE k < 3000")
        want: dict[int, list[int]] = {}
        for k in range(n):
            acc = want.setdefault(k % 1000, [0, -1, 1 << 62])
            acc[0] += 7 * k
            acc[1] = max(acc[1], 7 * k)
            acc[2] = min(acc[2], 7 * k)
        for k in range(3000):
            acc = want.setdefault(k % 1500, [0, -1, 1 << 62])
            acc[0] += 1
            acc[1] = max(acc[1], -1)
            acc[2] = min(acc[2], -1)
        cur.execute("SELECT g, s, mx, mn FROM agg ORDER BY g")
        assert [tuple(r) for r in cur.fetchall()] == [(g, *want[g]) for g in sorted(want)]
        cur.execute("SELECT count(*) FROM agg")
        assert cur.fetchone() == (1500,)

        cur.execute("CREATE TABLE u (k BIGINT, v BIGINT, src BIGINT) UNIQUE KEY(k) "
                    f"DISTRIBUTED BY HASH(k) BUCKETS {BUCKETS} "
                    'PROPERTIES ("function_column.sequence_col" = "v")')
        cur.execute("INSERT INTO u SELECT k % 5000, v, k FROM src")
        cur.execute("SELECT count(*), sum(v), sum(src) FROM u")
        # the largest v (the largest k) of each k % 5000 wins, whichever flush held it
        winners = range(n - 5000, n)
        assert cur.fetchone() == (5000, 7 * sum(winners), sum(winners))
        cur.execute("SELECT k, v FROM u WHERE v > 7 * 159990 ORDER BY k")
        assert [tuple(r) for r in cur.fetchall()] == [
            (k % 5000, 7 * k) for k in sorted(range(159991, n), key=lambda k: k % 5000)]


def test_a_failed_insert_leaves_no_segments(small_buffer_server: ServerProcess) -> None:
    srv = small_buffer_server
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE DATABASE f")
        cur.execute("USE f")
        cur.execute("CREATE TABLE p (k BIGINT, v BIGINT) DUPLICATE KEY(k) "
                    "PARTITION BY RANGE(k) (PARTITION p0 VALUES LESS THAN ('100000')) "
                    f"DISTRIBUTED BY HASH(k) BUCKETS {BUCKETS}")
        cur.execute("INSERT INTO p VALUES " + ", ".join(f"({k}, {k})" for k in range(20000)))
        files = segment_files(srv.data_dir)
        # 64K rows fit p0 and are flushed; the next batch holds a row no partition takes
        with pytest.raises(pymysql.MySQLError, match="no partition"):
            cur.execute("INSERT INTO p SELECT a.k + b.k * 20000, 0 FROM p a, "
                        "(SELECT k FROM p WHERE k < 6) b ORDER BY 1")
        assert segment_files(srv.data_dir) == files
        cur.execute("SELECT count(*) FROM p")
        assert cur.fetchone() == (20000,)
