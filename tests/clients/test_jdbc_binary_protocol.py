"""The prepared-statement commands at the packet level, on a real connection without
CLIENT_DEPRECATE_EOF (pymysql's handshake; Connector/J, which sets it, is covered in
test_jdbc.py): the parameter definitions end with an EOF here, a read-only cursor is opened by
COM_STMT_EXECUTE and read with COM_STMT_FETCH in steps, string parameters are bound as values,
and an unknown statement id is an error packet."""

from __future__ import annotations

import struct

import pymysql
import pytest
from pymysql.constants import CLIENT

COM_STMT_PREPARE = 0x16
COM_STMT_EXECUTE = 0x17
COM_STMT_CLOSE = 0x19
COM_STMT_FETCH = 0x1C
MYSQL_TYPE_LONG = 3
MYSQL_TYPE_VAR_STRING = 253
CURSOR_TYPE_READ_ONLY = 1


def prepare(conn, sql: str) -> tuple[int, int, int]:
    conn._execute_command(COM_STMT_PREPARE, sql)
    ok = conn._read_packet().read_all()
    assert ok[0] == 0, ok
    stmt_id, columns, params = struct.unpack("<IHH", ok[1:9])
    for _ in range(params):
        conn._read_packet()  # parameter definitions
    if params:
        assert conn._read_packet().is_eof_packet()  # no CLIENT_DEPRECATE_EOF: the EOF is due
    for _ in range(columns):
        conn._read_packet()  # result column definitions
    if columns:
        assert conn._read_packet().is_eof_packet()
    return stmt_id, columns, params


def execute_payload(stmt_id: int, flags: int, values: list[object]) -> bytes:
    out = struct.pack("<IBI", stmt_id, flags, 1)
    if values:
        nulls = bytearray((len(values) + 7) // 8)
        types, data = b"", b""
        for i, v in enumerate(values):
            if v is None:
                nulls[i // 8] |= 1 << (i % 8)
                types += struct.pack("<BB", MYSQL_TYPE_LONG, 0)
            elif isinstance(v, int):
                types += struct.pack("<BB", MYSQL_TYPE_LONG, 0)
                data += struct.pack("<i", v)
            else:
                raw = str(v).encode()
                types += struct.pack("<BB", MYSQL_TYPE_VAR_STRING, 0)
                data += bytes([len(raw)]) + raw
        out += bytes(nulls) + b"\x01" + types + data
    return out


def binary_int_rows(packets: list[bytes]) -> list[tuple[int, str]]:
    """Rows of (INT, VARCHAR) in the binary protocol (no NULLs in these tests)."""
    rows = []
    for p in packets:
        assert p[0] == 0 and p[1] == 0  # row header, NULL bitmap (2 columns + 2 offset bits)
        (n,) = struct.unpack("<i", p[2:6])
        length = p[6]
        rows.append((n, p[7 : 7 + length].decode()))
    return rows


def test_cursor_fetch_and_string_parameters(server, db, db_conn) -> None:
    assert not db_conn.client_flag & CLIENT.DEPRECATE_EOF  # pymysql does not ask for it
    with db_conn.cursor() as cur:
        cur.execute(
            "CREATE TABLE t (id INT, s VARCHAR(20)) DUPLICATE KEY(id) "
            "DISTRIBUTED BY HASH(id) BUCKETS 1 PROPERTIES('replication_num'='1')"
        )
        cur.execute("INSERT INTO t VALUES (1, 'a'), (2, 'it''s'), (3, 'c'), (4, 'd'), (5, 'e')")
        cur.execute("SELECT id, s FROM t WHERE id >= 2 AND s <> 'c' ORDER BY id")
        expected = [tuple(r) for r in cur.fetchall()]

    stmt_id, columns, params = prepare(
        db_conn, "SELECT id, s FROM t WHERE id >= ? AND s <> ? ORDER BY id"
    )
    assert (columns, params) == (2, 2)
    db_conn._execute_command(
        COM_STMT_EXECUTE, execute_payload(stmt_id, CURSOR_TYPE_READ_ONLY, [2, "c"])
    )
    assert db_conn._read_packet().read_all() == b"\x02"  # column count
    for _ in range(2):
        db_conn._read_packet()  # column definitions
    assert db_conn._read_packet().is_eof_packet()  # cursor opened, no rows yet

    fetched: list[bytes] = []
    for _ in range(3):
        db_conn._execute_command(COM_STMT_FETCH, struct.pack("<II", stmt_id, 2))
        while True:
            packet = db_conn._read_packet()
            if packet.is_eof_packet():
                break
            fetched.append(packet.read_all())
    assert binary_int_rows(fetched) == expected

    # A string parameter with a quote is a value, not SQL text.
    db_conn._execute_command(COM_STMT_EXECUTE, execute_payload(stmt_id, 0, [0, "it's"]))
    assert db_conn._read_packet().read_all() == b"\x02"
    for _ in range(2):
        db_conn._read_packet()
    assert db_conn._read_packet().is_eof_packet()
    rows = []
    while True:
        packet = db_conn._read_packet()
        if packet.is_eof_packet():
            break
        rows.append(packet.read_all())
    with db_conn.cursor() as cur:
        cur.execute("SELECT id, s FROM t WHERE id >= 0 AND s <> %s ORDER BY id", ("it's",))
        assert binary_int_rows(rows) == [tuple(r) for r in cur.fetchall()]

    # Closed: executing it again is an error packet, and the connection stays usable.
    db_conn._execute_command(COM_STMT_CLOSE, struct.pack("<I", stmt_id))
    db_conn._execute_command(COM_STMT_EXECUTE, execute_payload(stmt_id, 0, [1, "x"]))
    with pytest.raises(pymysql.MySQLError) as info:
        db_conn._read_packet()  # pymysql raises on an error packet
    assert info.value.args[0] == 1243
    with db_conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM t")
        assert cur.fetchone() == (5,)
