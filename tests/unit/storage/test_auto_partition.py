"""AUTO PARTITION in the storage layer (storage/auto_partition.py, storage/txn.py): range
bounds against DuckDB's date_trunc, Doris' partition value formatting, and interleaved load
transactions that need the same new partition (deterministic, unlike threads over the wire):
it is created once, whichever load publishes first or fails."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import duckdb
import numpy as np
import pytest
from test_catalog_and_loads import batch, make_table, read_all

from storage.auto_partition import (
    format_partition_value,
    list_partition_name,
    trunc_bounds,
    trunc_starts,
)
from storage.catalog import service as catalog_service
from storage.engine import StorageEngine
from storage.errors import DorisError
from storage.txn import LoadTxn

SQL = """CREATE TABLE t (k INT NOT NULL, dt DATE NOT NULL) DUPLICATE KEY(k)
AUTO PARTITION BY RANGE (date_trunc(dt, 'month')) ()
DISTRIBUTED BY HASH(k) BUCKETS 3"""


@pytest.mark.parametrize("unit", ["year", "quarter", "month", "week", "day", "hour", "minute",
                                  "second"])
def test_trunc_bounds_match_duckdb(unit: str) -> None:
    rng = random.Random(unit)
    duck = duckdb.connect()
    for _ in range(200):
        moment = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=rng.randrange(0, 2**32))
        lo, hi = trunc_bounds(moment, unit)
        want_lo, want_hi = duck.execute(
            f"SELECT date_trunc('{unit}', ?::TIMESTAMP), "
            f"date_trunc('{unit}', ?::TIMESTAMP) + INTERVAL 1 {unit}", [moment, moment]).fetchone()
        assert (lo, hi) == (want_lo, want_hi), moment


def test_partition_value_formatting_as_doris() -> None:
    """Doris 2.1 PartitionExprUtil.getFormatPartitionValue; expected names from Doris'
    regression suite test_auto_partition_name where it has them."""
    assert format_partition_value("-11") == "_2d11"
    assert format_partition_value("2020-01-01") == "20202d012d01"
    assert format_partition_value("杭州") == "676d5dde"
    assert list_partition_name(["Beijing", "1"]) == "pBeijing711"
    assert list_partition_name([None]) == "pX"
    assert list_partition_name(["-9876"]) == "p_2d98765"
    assert list_partition_name(["Carriage\rReturn"]) == "pCarriagedReturn15"
    assert list_partition_name(["\U0001f60a\U0001f602\U0001f44d"]) == \
        "p1f60ade0a1f602de021f44ddc4d6"  # Java: 6 UTF-16 units, codePointAt per unit
    assert list_partition_name(["\u4f60\u597d,\u4e16\u754c", "\U0001f60a,\U0001f602"]) == \
        "p4f60597d2c4e16754c51f60ade0a2c1f602de025"
    with pytest.raises(DorisError, match="over limit of 50. abort to create."):
        list_partition_name(["x" * 48])
    # the limit applies when a partition column is a string (Doris: hasStringType)
    assert len(list_partition_name(["1" * 30, "2" * 30], has_string_column=False)) == 65


def _engine(tmp_path: Path) -> StorageEngine:
    engine = StorageEngine(tmp_path, backends=2)
    catalog_service.create_database(engine, "db", False)
    make_table(engine, SQL)
    return engine


def _load(engine: StorageEngine, ks: list[int], days: list[str]) -> LoadTxn:
    txn = LoadTxn(engine, engine.catalog.get_database("db"), engine.catalog.get_table("db", "t"))
    txn.add_batch(batch(ks, days))
    return txn


def _names(engine: StorageEngine) -> list[str]:
    table = engine.catalog.get_table("db", "t")
    return sorted(p.name for p in engine.catalog.partitions(table.table_id))


def test_interleaved_loads_share_the_new_partition(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    a = _load(engine, [1, 2], ["2024-03-05", "2024-04-05"])
    b = _load(engine, [3], ["2024-03-20"])  # needs March too, before a publishes
    assert _names(engine) == []  # nothing visible while both run
    a.commit()
    assert _names(engine) == ["p20240301000000", "p20240401000000"]
    b.commit()
    assert _names(engine) == ["p20240301000000", "p20240401000000"]
    assert [r[0] for r in read_all(engine, "db", "t")] == [1, 2, 3]
    c = _load(engine, [4], ["2024-03-31"])  # a later load finds the published partition
    c.commit()
    assert len(_names(engine)) == 2
    engine.close()


def test_the_second_load_creates_it_when_the_first_aborts(tmp_path: Path) -> None:
    engine = _engine(tmp_path)
    a = _load(engine, [1], ["2024-03-05"])
    b = _load(engine, [2], ["2024-03-06"])
    a.abort()
    assert _names(engine) == []
    b.commit()
    assert _names(engine) == ["p20240301000000"]
    assert [r[0] for r in read_all(engine, "db", "t")] == [2]
    engine.close()
    engine = StorageEngine(tmp_path, backends=2)  # and it survives a reopen
    assert _names(engine) == ["p20240301000000"]
    assert [r[0] for r in read_all(engine, "db", "t")] == [2]
    engine.close()


@pytest.mark.parametrize("unit", ["year", "quarter", "month", "week", "day", "hour", "minute",
                                  "second"])
def test_vectorised_trunc_starts_match_the_reference(unit: str) -> None:
    rng = np.random.default_rng(len(unit))
    micros = rng.integers(-(2**40) * 1000, 2**48, size=2000)  # before and after 1970
    days = rng.integers(-200_000, 2_900_000, size=2000)
    epoch = dt.datetime(1970, 1, 1)
    for physical, is_date in ((micros, False), (days, True)):
        got = trunc_starts(physical, is_date, unit).tolist()
        for p, start in zip(physical.tolist(), got):
            moment = epoch + (dt.timedelta(days=p) if is_date else dt.timedelta(microseconds=p))
            want = trunc_bounds(moment, unit)[0]
            assert epoch + dt.timedelta(microseconds=start) == want, (p, unit)
