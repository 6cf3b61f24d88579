"""COM_STMT_EXECUTE parameter decoding (server/binary_protocol.py) on hand-built payloads: every
parameter encoding a client may send, NULLs, types reused when not re-sent, long data, and the
query-attributes layout. End to end with a real driver: tests/clients/test_jdbc.py."""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal

import pytest
from mysql_mimic.charset import CharacterSet
from mysql_mimic.types import Capabilities, ColumnType

from server.binary_protocol import read_execute
from sql.errors import ShaleError

CAPS = Capabilities.CLIENT_PROTOCOL_41


def lenenc_str(data: bytes) -> bytes:
    assert len(data) < 251
    return bytes([len(data)]) + data


PARAMS = [  # (type, unsigned, encoded value, decoded value)
    (ColumnType.TINY, False, struct.pack("<b", -5), -5),
    (ColumnType.TINY, True, struct.pack("<B", 250), 250),
    (ColumnType.SHORT, False, struct.pack("<h", -30000), -30000),
    (ColumnType.LONG, False, struct.pack("<i", -2_000_000_000), -2_000_000_000),
    (ColumnType.LONGLONG, True, struct.pack("<Q", 2**64 - 1), 2**64 - 1),
    (ColumnType.FLOAT, False, struct.pack("<f", 1.5), 1.5),
    (ColumnType.DOUBLE, False, struct.pack("<d", -2.25e-300), -2.25e-300),
    (
        ColumnType.NEWDECIMAL,
        False,
        lenenc_str(b"-12345678901234.123456"),
        Decimal("-12345678901234.123456"),
    ),
    (ColumnType.DATE, False, b"\x04" + struct.pack("<HBB", 2024, 2, 29), dt.date(2024, 2, 29)),
    (
        ColumnType.DATETIME,
        False,
        b"\x07" + struct.pack("<HBBBBB", 2024, 2, 29, 13, 14, 15),
        dt.datetime(2024, 2, 29, 13, 14, 15),
    ),
    (
        ColumnType.TIMESTAMP,
        False,
        b"\x0b" + struct.pack("<HBBBBBI", 1999, 12, 31, 23, 59, 59, 7),
        dt.datetime(1999, 12, 31, 23, 59, 59, 7),
    ),
    (
        ColumnType.TIME,
        False,
        b"\x08" + struct.pack("<BIBBB", 1, 1, 2, 3, 4),
        -dt.timedelta(days=1, hours=2, minutes=3, seconds=4),
    ),
    (ColumnType.VAR_STRING, False, lenenc_str("it's 日本".encode()), "it's 日本"),
    (ColumnType.BLOB, False, lenenc_str(b"blob"), "blob"),
]


def payload(
    stmt_id: int,
    types: list[tuple[int, bool]] | None,
    values: list[bytes | None],
    attributes: bool = False,
) -> bytes:
    out = struct.pack("<IBI", stmt_id, 0, 1)
    if attributes:
        out += bytes([len(values)])
    nulls = bytearray((len(values) + 7) // 8)
    for i, v in enumerate(values):
        if v is None:
            nulls[i // 8] |= 1 << (i % 8)
    out += bytes(nulls) + (b"\x01" if types is not None else b"\x00")
    for code, unsigned in types or []:
        out += bytes([int(code), 0x80 if unsigned else 0]) + (b"\x00" if attributes else b"")
    return out + b"".join(v for v in values if v is not None)


def decode(data: bytes, n: int, previous=None, long_data=None, caps=CAPS):
    return read_execute(
        data,
        caps,
        CharacterSet.utf8mb4,
        num_params=lambda _i: n,
        previous_types=lambda _i: previous,
        long_data=lambda _i: long_data or {},
    )


def test_every_parameter_encoding() -> None:
    types = [(code, unsigned) for code, unsigned, _, _ in PARAMS]
    request = decode(payload(7, types, [raw for _, _, raw, _ in PARAMS]), len(PARAMS))
    assert request.stmt_id == 7 and not request.use_cursor
    assert request.values == [value for _, _, _, value in PARAMS]
    assert request.types == types


def test_nulls_and_types_reused_when_not_resent() -> None:
    types = [(ColumnType.LONG, False), (ColumnType.VAR_STRING, False)]
    first = decode(payload(1, types, [None, lenenc_str(b"x")]), 2)
    assert first.values == [None, "x"]
    again = decode(payload(1, None, [struct.pack("<i", 5), None]), 2, previous=first.types)
    assert again.values == [5, None] and again.types is None
    with pytest.raises(ShaleError):
        decode(payload(1, None, [struct.pack("<i", 5), None]), 2, previous=None)


def test_long_data_and_query_attributes() -> None:
    types = [(ColumnType.BLOB, False), (ColumnType.LONG, False)]
    data = payload(3, types, [struct.pack("<i", 9)], attributes=True)
    # The first parameter's value came with COM_STMT_SEND_LONG_DATA: nothing inline for it.
    data = data[:9] + bytes([2]) + data[10:]  # two parameters announced
    caps = CAPS | Capabilities.CLIENT_QUERY_ATTRIBUTES
    request = decode(data, 2, long_data={0: bytearray(b"big ' text")}, caps=caps)
    assert request.values == ["big ' text", 9]


def test_truncated_packet_is_an_error() -> None:
    data = payload(1, [(ColumnType.LONGLONG, False)], [struct.pack("<q", 1)])
    with pytest.raises(ShaleError):
        decode(data[:-3], 1)
