"""The pure parts of server/flight_sql/: Flight SQL messages against hand-encoded protobuf bytes,
filter patterns, result columns as Arrow (against pyarrow's own conversion of the values), and
the GetSqlInfo table's shape."""

from __future__ import annotations

import datetime as dt
import decimal
import threading
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pytest
from pyarrow import flight

from server.config import load_config
from server.flight_sql import messages as m
from server.flight_sql.admission import CallWork
from server.flight_sql.arrow_results import column_array, record_batches, result_schema
from server.flight_sql.errors import flight_error
from server.flight_sql.metadata import SQL_INFO_SCHEMA, like_matcher, sql_info_table
from sql.errors import DorisError, ErrorCode, QueryCancelled, ShaleError, table_not_found
from storage.batch import Batch, Column
from storage.types import (
    BIGINT,
    BOOLEAN,
    DATE,
    DOUBLE,
    INT,
    LARGEINT,
    DataType,
    TypeKind,
    varchar,
)


def _field(number: int, data: bytes) -> bytes:
    assert len(data) < 128
    return bytes([number << 3 | 2, len(data)]) + data


def test_command_from_hand_encoded_any() -> None:
    url = b"type.googleapis.com/arrow.flight.protocol.sql.CommandGetTables"
    body = _field(2, b"db%") + bytes([4 << 3 | 2, 5]) + b"TABLE" + bytes([5 << 3, 1])
    command = m.unpack_command(_field(1, url) + _field(2, body))
    assert m.message_name(command) == "CommandGetTables"
    assert not command.HasField("catalog")  # absent, not empty: any catalog
    assert command.db_schema_filter_pattern == "db%"
    assert list(command.table_types) == ["TABLE"] and command.include_schema


def test_unknown_or_malformed_commands_are_none() -> None:
    assert m.unpack_command(b"\xff\xff\xff") is None
    other = _field(1, b"type.googleapis.com/some.other.Message")
    assert m.unpack_command(other) is None
    unknown = _field(1, b"type.googleapis.com/arrow.flight.protocol.sql.CommandGetXdbcTypeInfo")
    assert m.unpack_command(unknown) is None


def test_reply_packs_into_any() -> None:
    reply = m.pack(m.ActionCreatePreparedStatementResult(prepared_statement_handle=b"h1"))
    url = b"type.googleapis.com/arrow.flight.protocol.sql.ActionCreatePreparedStatementResult"
    assert reply == _field(1, url) + _field(2, _field(1, b"h1"))
    assert m.DoPutUpdateResult(record_count=3).SerializeToString() == b"\x08\x03"


@pytest.mark.parametrize(("pattern", "yes", "no"), [
    (None, ["x", ""], []),
    ("db%", ["db", "DB1", "db_x"], ["xdb"]),
    ("t_", ["t1", "tx"], ["t", "t12"]),
    ("a\\_b", ["a_b"], ["axb"]),
    ("a.b", ["a.b"], ["axb"]),
])
def test_filter_patterns(pattern: str | None, yes: list[str], no: list[str]) -> None:
    match = like_matcher(pattern)
    assert all(match(n) for n in yes) and not any(match(n) for n in no)


def _expected(dtype: DataType, values: list[object]) -> pa.Array:
    """What pyarrow itself makes of the Python values, in the Flight result type."""
    if dtype.kind is TypeKind.LARGEINT:
        return pa.array([None if v is None else str(v) for v in values], pa.string())
    kinds = {TypeKind.BOOLEAN: pa.bool_(), TypeKind.INT: pa.int32(), TypeKind.BIGINT: pa.int64(),
             TypeKind.DOUBLE: pa.float64(), TypeKind.VARCHAR: pa.string(),
             TypeKind.DATE: pa.date32()}
    return pa.array(values, kinds[dtype.kind])


@pytest.mark.parametrize(("dtype", "values"), [
    (BOOLEAN, [True, None, False]),
    (INT, [1, None, -(2**31)]),
    (BIGINT, [2**62, None, 0]),
    (DOUBLE, [0.5, None, -1e300]),
    (varchar(10), ["a", None, "δέλτα"]),
    (DATE, [dt.date(2024, 2, 29), None, dt.date(1970, 1, 1)]),
    (LARGEINT, [2**127 - 1, None, -5]),
])
def test_result_columns_as_arrow(dtype: DataType, values: list[object]) -> None:
    column = Column.from_physical(dtype, [None if v is None else dtype.to_physical(v)
                                          for v in values])
    assert column_array(dtype, column).equals(_expected(dtype, values))


def test_record_batches_keep_the_schema_and_skip_empty_batches() -> None:
    from storage.types import decimal as decimal_type

    dec = decimal_type(10, 2)
    schema = result_schema(["d"], [dec])
    assert schema.field("d").type == pa.decimal128(10, 2)
    batches = [Batch(("d",), (Column.from_physical(dec, []),)),
               Batch(("d",), (Column.from_physical(dec, [150, None]),))]
    [out] = list(record_batches(schema, [dec], batches))
    assert out.column(0).to_pylist() == [decimal.Decimal("1.50"), None]


def test_sql_info_table() -> None:
    table = sql_info_table([0, 4, 504, 99999], "1.2.3")
    assert table.schema == SQL_INFO_SCHEMA
    assert table.column("info_name").to_pylist() == [0, 4, 504]  # unknown ids are left out
    assert table.column("value").to_pylist() == ["ShaleDB", True, "`"]
    assert sql_info_table([], "v").num_rows > 10  # none asked: all


def test_arrow_flight_sql_port_setting(tmp_path) -> None:
    assert load_config(None).arrow_flight_sql_port == -1  # off, as in Doris
    conf = tmp_path / "shaledb.toml"
    conf.write_text("[server]\narrow_flight_sql_port = 9090\n")
    assert load_config(conf).arrow_flight_sql_port == 9090
    assert load_config(conf, {"arrow_flight_sql_port": 0}).arrow_flight_sql_port == 0


# ---- errors.py: the gRPC status of each kind of error -----------------------------------------
def test_error_kinds_map_to_flight_statuses() -> None:
    cases = [
        (ShaleError("You have an error in your SQL syntax", ErrorCode.PARSE_ERROR),
         pa.ArrowInvalid, "ERROR 1064 (42000): You have an error in your SQL syntax"),
        (DorisError("Unknown column 'x' in 'table list'"), pa.ArrowInvalid,
         "ERROR 1105 (HY000): errCode = 2, detailMessage = Unknown column 'x' in 'table list'"),
        (table_not_found("db", "t"), pa.ArrowKeyError,
         "Table [t] does not exist in database [db]."),
        (ShaleError("SELECT command denied", ErrorCode.TABLEACCESS_DENIED),
         flight.FlightUnauthorizedError, "ERROR 1142 (42000): SELECT command denied"),
        (ShaleError("Access denied for user 'u'", ErrorCode.ACCESS_DENIED),
         flight.FlightUnauthenticatedError, "ERROR 1045 (28000): Access denied for user 'u'"),
        (QueryCancelled(), flight.FlightCancelledError, "ERROR 1317 (70100): Query was cancelled"),
        (DorisError("Query exceeded time limit of 5 seconds (query_timeout)"),
         flight.FlightTimedOutError, "Query exceeded time limit of 5 seconds"),
        (ShaleError("not here", ErrorCode.NOT_SUPPORTED_YET), pa.ArrowNotImplementedError,
         "ERROR 1235 (42000): not here"),
        (ShaleError("disk on fire"), flight.FlightInternalError,
         "ERROR 1105 (HY000): disk on fire"),
    ]
    for error, kind, text in cases:
        got = flight_error(error)
        assert type(got) is kind, (error, got)
        assert text in str(got), (error, got)


# ---- admission.py: statement work on the server's pools ---------------------------------------
def test_call_work_runs_on_the_pools_and_drops_cancelled_queued_work() -> None:
    pool = ThreadPoolExecutor(1, thread_name_prefix="test-worker")
    light = ThreadPoolExecutor(1, thread_name_prefix="test-light")
    try:
        work = CallWork(pool, light)
        assert work.run(None, lambda: threading.current_thread().name).startswith("test-worker")
        assert work.run(None, lambda: threading.current_thread().name,
                        light=True).startswith("test-light")
        # the only worker is busy: queued work whose statement is killed never runs
        release, ran = threading.Event(), []
        pool.submit(release.wait)
        killed = threading.Event()
        killed.set()
        with pytest.raises(QueryCancelled):
            work.run(killed, ran.append, 1)
        # a client gone: queued work is dropped too, and the statement's token is set
        gone = CallWork(pool, light, client_gone=lambda: True)
        token = threading.Event()
        with pytest.raises(QueryCancelled):
            gone.run(token, ran.append, 2)
        assert token.is_set()
        release.set()
        pool.shutdown(wait=True)
        assert ran == []
    finally:
        pool.shutdown(wait=False)
        light.shutdown(wait=False)
