"""A damaged segment file is reported as an error naming the file and tablet, never as wrong rows."""

from __future__ import annotations

from pathlib import Path

import pymysql
import pytest

from support.server import ServerProcess


def test_flipped_byte_in_a_segment_is_an_error_not_wrong_data(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", backends=1) as srv:
        conn = srv.connect()
        with conn.cursor() as cur:
            cur.execute("CREATE DATABASE c")
            cur.execute("USE c")
            cur.execute("CREATE TABLE t (k INT, v VARCHAR(20)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 1")
            values = ", ".join(f"({i}, 'value-{i}')" for i in range(3000))
            cur.execute(f"INSERT INTO t VALUES {values}")
            cur.execute("SELECT count(*), sum(k) FROM t")
            assert cur.fetchone() == (3000, sum(range(3000)))
        segments = list((tmp_path / "data").glob("be/*/data/*/*.seg"))
        assert len(segments) == 1
        seg = segments[0]
        tablet_id = seg.parent.name
        raw = bytearray(seg.read_bytes())
        raw[len(raw) // 3] ^= 0xFF  # inside the data pages
        seg.write_bytes(bytes(raw))
        with conn.cursor() as cur:
            with pytest.raises(pymysql.MySQLError) as info:
                cur.execute("SELECT count(*), sum(k), max(v) FROM t")
            code, message = info.value.args
            assert code == 1105
            assert "Corrupted segment file" in message and seg.name in message
            assert f"tablet {tablet_id}" in message
            cur.execute("SELECT 1")  # the connection survives the error
            assert cur.fetchone() == (1,)
        conn.close()
