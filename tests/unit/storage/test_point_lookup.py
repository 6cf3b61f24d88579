"""storage/point_lookup.py against a normal scan (`StorageEngine.read_tablet`).

Random rows (NULL keys, empty and unicode strings, repeated keys) go into DUPLICATE, UNIQUE
(with and without a sequence column) and AGGREGATE tables over 1..4 loads with delete versions
in between, with tiny pages, short-key blocks and segments so a lookup crosses block, page and
segment boundaries. For keys that exist and keys that do not, on the first key column alone (a
prefix of the two-column key) and on both, the lookup must return exactly the rows a scan with
the same predicates returns, and must have answered (not fallen back). The same lookups are
repeated after a full compaction while the tablet's plan is cached, and after a further load.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sql.ddl import ddl_ops
from sql.ddl import specs as V
from sql.ddl.create_table import analyze_create_table
from sql.parser.dialect import parse_one
from storage import point_lookup
from storage import rowset as rowset_mod
from storage.batch import Batch, Column
from storage.catalog import service as catalog_service
from storage.catalog.meta import DeleteCondition, TableMeta
from storage.delete import publish_delete
from storage.engine import StorageEngine
from storage.indexes import short_key
from storage.predicates import ColumnPredicate, ReadOptions
from storage.segment import writer
from storage.txn import LoadTxn

_names = (f"t{i}" for i in itertools.count())
K1 = [None, 0, 1, 2, 3, 5]
K2 = [None, "", "a", "b", "é", "日本"]
MODELS = {
    "dup": "DUPLICATE KEY(k1, k2)",
    "uniq": "UNIQUE KEY(k1, k2)",
    "uniq_seq": "UNIQUE KEY(k1, k2)",
    "agg": "AGGREGATE KEY(k1, k2)",
}


@pytest.fixture(scope="module")
def engine() -> Iterator[StorageEngine]:
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as d:
        mp.setattr(rowset_mod, "SEGMENT_ROWS", 7)  # several segments per rowset
        mp.setattr(short_key, "SHORT_KEY_INTERVAL", 2)  # many short-key blocks
        mp.setattr(writer, "PAGE_SIZE", 48)  # many pages per column
        eng = StorageEngine(Path(d), backends=1)
        catalog_service.create_database(eng, "db", False)
        yield eng
        eng.close()


def create(engine: StorageEngine, model: str) -> TableMeta:
    name = next(_names)
    value = "v BIGINT SUM" if model == "agg" else "v BIGINT"
    props = ' PROPERTIES ("function_column.sequence_col" = "sq")' if model == "uniq_seq" else ""
    sql = (f"CREATE TABLE {name} (k1 INT, k2 VARCHAR(8), {value}, sq INT"
           f"{' MAX' if model == 'agg' else ''}) {MODELS[model]} "
           f"DISTRIBUTED BY HASH(k1) BUCKETS 2{props}")
    defn = analyze_create_table(V.describe_create_table(parse_one(sql)), 1)
    ddl_ops.create_table(engine, "db", defn)
    table = engine.catalog.get_table("db", name)
    assert table is not None
    return table


def load(engine: StorageEngine, table: TableMeta, rows: list[tuple]) -> None:
    txn = LoadTxn(engine, engine.catalog.get_database("db"), table)
    cols = list(zip(*rows))
    txn.add_batch(Batch(table.column_names, tuple(
        Column.from_physical(c.type, [v.encode() if isinstance(v, str) else v for v in vals])
        for c, vals in zip(table.columns, cols))))
    txn.commit()


def tablets(engine: StorageEngine, table: TableMeta) -> list[tuple[object, int]]:
    out = []
    for p in engine.catalog.partitions(table.table_id):
        for t in engine.catalog.tablets(table.table_id, p.partition_id):
            out.append((t, p.visible_version))
    return out


def check_lookups(engine: StorageEngine, table: TableMeta,
                  probes: list[tuple[ColumnPredicate, ...]]) -> None:
    columns = ("v", "k2", "k1", "sq")  # not in storage order, a subset spelled differently
    for tablet, version in tablets(engine, table):
        for preds in probes:
            got = point_lookup.lookup(engine, tablet, version, columns, preds)
            assert got is not None, preds  # a key prefix: the lookup answers
            assert got.names == columns
            want = [r for b in engine.read_tablet(tablet, version, ReadOptions(columns, preds))
                    for r in b.rows()]
            assert sorted(got.rows(), key=repr) == sorted(want, key=repr), preds


rows_st = st.lists(st.tuples(st.sampled_from(K1), st.sampled_from(K2),
                             st.one_of(st.none(), st.integers(-9, 9)), st.integers(0, 4)),
                   min_size=1, max_size=30)
delete_st = st.one_of(
    st.none(),
    st.builds(lambda v: [DeleteCondition("k1", "=", (v,))], st.sampled_from(K1[1:])),
    st.builds(lambda v: [DeleteCondition("k2", "=", (v,))], st.sampled_from(K2[1:])),
    st.builds(lambda v: [DeleteCondition("k1", ">=", (v,)), DeleteCondition("k2", "=", ("a",))],
              st.sampled_from(K1[1:])),
)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(model=st.sampled_from(sorted(MODELS)),
       loads=st.lists(st.tuples(rows_st, delete_st), min_size=1, max_size=4),
       late=rows_st)
def test_lookup_equals_a_scan(engine: StorageEngine, model: str, loads: list, late: list) -> None:
    table = create(engine, model)
    for rows, delete in loads:
        load(engine, table, [(k1, k2, v, sq) for k1, k2, v, sq in rows])
        if delete is not None:
            publish_delete(engine, engine.catalog.get_database("db"), table,
                           engine.catalog.partitions(table.table_id), delete, "test")
    probes = [(ColumnPredicate("k1", "=", (k1,)),) for k1 in K1[1:] + [4, -1]]
    probes += [(ColumnPredicate("K1", "=", (k1,)), ColumnPredicate("k2", "=", (k2,)))
               for k1 in (0, 2, 5, 7) for k2 in ("", "a", "日本", "zz")]
    probes += [(ColumnPredicate("k1", "=", (2,)), ColumnPredicate("v", "=", (3,)))]
    check_lookups(engine, table, probes)
    # compaction while the plans are cached: new rowsets, so new plans, same rows
    for tablet, _ in tablets(engine, table):
        engine.compaction.compact(tablet.tablet_id, "full")
    check_lookups(engine, table, probes)
    load(engine, table, late)
    check_lookups(engine, table, probes)


def test_lookup_falls_back_where_it_does_not_apply(engine: StorageEngine) -> None:
    """No equality on the leading key column, a non-equality operator, or a delete naming a
    value column of a UNIQUE table: None, so the caller scans."""
    table = create(engine, "uniq")
    load(engine, table, [(1, "a", 1, 0), (2, "b", 2, 0)])
    (tablet, version), *_ = [tv for tv in tablets(engine, table)
                             if engine.catalog.rowsets(tv[0].tablet_id)]
    cols = ("k1", "v")
    assert point_lookup.lookup(engine, tablet, version, cols,
                               (ColumnPredicate("k2", "=", ("a",)),)) is None
    assert point_lookup.lookup(engine, tablet, version, cols,
                               (ColumnPredicate("k1", ">", (0,)),)) is None
    assert point_lookup.lookup(engine, tablet, version, cols,
                               (ColumnPredicate("k1", "=", (1,)),)) is not None
    publish_delete(engine, engine.catalog.get_database("db"), table,
                   engine.catalog.partitions(table.table_id),
                   [DeleteCondition("v", "=", (1,))], "test")
    version = engine.catalog.partitions(table.table_id)[0].visible_version
    assert point_lookup.lookup(engine, tablet, version, cols,
                               (ColumnPredicate("k1", "=", (1,)),)) is None


def test_a_long_run_of_one_key_is_left_to_the_scan(engine: StorageEngine,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A DUPLICATE key repeated more than MAX_LOOKUP_ROWS times is a scan, not a lookup."""
    monkeypatch.setattr(point_lookup, "MAX_LOOKUP_ROWS", 10)
    table = create(engine, "dup")
    load(engine, table, [(3, "a", i, 0) for i in range(11)] + [(3, "b", 0, 0), (5, "b", 0, 0)])
    answers = {}
    for tablet, version in tablets(engine, table):
        for k1 in (3, 5):
            found = point_lookup.lookup(engine, tablet, version, ("v",),
                                        (ColumnPredicate("k1", "=", (k1,)),))
            if found is None or found.num_rows:
                answers[k1] = found
    assert answers[3] is None  # 12 rows: left to the scan
    assert answers[5] is not None and answers[5].rows() == [(0,)]
