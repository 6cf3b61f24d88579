"""Data models end to end in storage: memtable pre-aggregation + merge-on-read + delete versions.

Random rows are loaded through `LoadTxn` (real segment files) into AGGREGATE, UNIQUE (with and
without a sequence column) and DUPLICATE tables, split randomly over 1..5 loads with delete
versions in between, and read back with `StorageEngine.read_tablet`. The result must equal a
plain-Python reference that applies every row and delete in load order (and, for AGG/UNIQUE,
the same rows loaded in ONE load). Small read batch sizes and tiny segments exercise the
streaming merge across batch and segment boundaries.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sql.ddl import ddl_ops
from sql.ddl import specs as V
from sql.ddl.create_table import analyze_create_table
from sql.parser.dialect import parse_one
from storage import bitmap, hll
from storage import rowset as rowset_mod
from storage.batch import Batch, Column
from storage.catalog import service as catalog_service
from storage.catalog.meta import DeleteCondition, TableMeta
from storage.delete import publish_delete
from storage.engine import StorageEngine
from storage.predicates import ColumnPredicate, ReadOptions, evaluate
from storage.txn import LoadTxn

_names = (f"t{i}" for i in itertools.count())
SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def engine() -> Iterator[StorageEngine]:
    with tempfile.TemporaryDirectory() as d:
        eng = StorageEngine(Path(d), backends=2)
        catalog_service.create_database(eng, "db", False)
        yield eng
        eng.close()


@pytest.fixture(autouse=True)
def tiny_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    # several segments per rowset, so the reader crosses segment boundaries inside a run
    monkeypatch.setattr(rowset_mod, "SEGMENT_ROWS", 4)


def create(engine: StorageEngine, ddl: str) -> TableMeta:
    name = next(_names)
    sql = ddl.replace("{name}", name)
    backends = len(engine.catalog.backends())
    defn = analyze_create_table(V.describe_create_table(parse_one(sql)), backends)
    ddl_ops.create_table(engine, "db", defn)
    t = engine.catalog.get_table("db", name)
    assert t is not None
    return t


def load(engine: StorageEngine, table: TableMeta, rows: list[tuple]) -> None:
    if not rows:
        return
    txn = LoadTxn(engine, engine.catalog.get_database("db"), table)
    cols = list(zip(*rows))
    txn.add_batch(Batch(table.column_names, tuple(
        Column.from_physical(c.type, list(v)) for c, v in zip(table.columns, cols))))
    txn.commit()


def delete(engine: StorageEngine, table: TableMeta, conds: list[DeleteCondition]) -> None:
    parts = engine.catalog.partitions(table.table_id)
    publish_delete(engine, engine.catalog.get_database("db"), table, parts, conds, "test")


def read(engine: StorageEngine, table: TableMeta, columns: tuple[str, ...] | None = None,
         index: str | None = None, predicates: tuple[ColumnPredicate, ...] = (),
         batch_size: int = 65536) -> list[tuple]:
    idx = next(i for i in engine.catalog.materialized_indexes(table.table_id)
               if (i.is_base if index is None else i.name == index))
    cols = columns or idx.columns
    rows: list[tuple] = []
    for p in engine.catalog.partitions(table.table_id):
        for tablet in engine.catalog.tablets(table.table_id, p.partition_id, idx.index_id):
            for b in engine.read_tablet(tablet, p.visible_version,
                                        ReadOptions(tuple(cols), predicates, batch_size)):
                rows += b.rows()
    return sorted(rows, key=repr)


def read_per_tablet(engine: StorageEngine, table: TableMeta, index: str) -> list[list[tuple]]:
    idx = next(i for i in engine.catalog.materialized_indexes(table.table_id) if i.name == index)
    out = []
    for p in engine.catalog.partitions(table.table_id):
        for tablet in engine.catalog.tablets(table.table_id, p.partition_id, idx.index_id):
            out.append([r for b in engine.read_tablet(tablet, p.visible_version,
                                                      ReadOptions(idx.columns)) for r in b.rows()])
    return out


def matches(row: dict[str, object], cond: DeleteCondition, table: TableMeta) -> bool:
    col = Column.from_physical(table.column(cond.column).type, [row[cond.column]])
    return bool(evaluate(ColumnPredicate(cond.column, cond.op, cond.values), col)[0])


# ---- strategies ----------------------------------------------------------------------------
small_int = st.one_of(st.none(), st.integers(-5, 5))
k1s = st.one_of(st.none(), st.integers(0, 3))
k2s = st.sampled_from([None, "", "a", "b", "é"])


def delete_conds(key_only: bool, k1: bool = True) -> st.SearchStrategy[list[DeleteCondition]]:
    k1_conds = st.one_of(
        st.builds(lambda op, v: DeleteCondition("k1", op, (v,)),
                  st.sampled_from(["=", "!=", "<", ">="]), st.integers(0, 3)),
        st.builds(lambda vs: DeleteCondition("k1", "in", tuple(vs)),
                  st.lists(st.integers(0, 3), min_size=1, max_size=2)),
        st.just(DeleteCondition("k1", "is_null")),
    )
    k2 = st.sampled_from([DeleteCondition("k2", "=", ("a",)), DeleteCondition("k2", "is_null"),
                          DeleteCondition("k2", "in", ("", "b"))])
    choices = [k1_conds, k2] if k1 else [k2]
    if not key_only:
        choices.append(st.builds(lambda v: DeleteCondition("v1", ">", (v,)), st.integers(-5, 5)))
    return st.lists(st.one_of(*choices), min_size=1, max_size=2)


# A load plan: a list of steps, each a batch of rows (a load) or a delete.
def plans(row: st.SearchStrategy, key_only: bool, k1: bool = True) -> st.SearchStrategy[list]:
    step = st.one_of(st.lists(row, min_size=1, max_size=12).map(lambda r: ("load", r)),
                     delete_conds(key_only, k1).map(lambda c: ("delete", c)))
    return st.lists(step, min_size=1, max_size=6).filter(
        lambda s: 1 <= sum(k == "load" for k, _ in s) <= 5)


# ---- AGGREGATE -----------------------------------------------------------------------------
AGG = """CREATE TABLE {name} (k1 INT, k2 VARCHAR(8), s BIGINT SUM, mx INT MAX, mn INT MIN,
  r INT REPLACE, rn INT REPLACE_IF_NOT_NULL, smax VARCHAR(8) MAX, b BITMAP BITMAP_UNION,
  h HLL HLL_UNION)
AGGREGATE KEY(k1, k2) DISTRIBUTED BY HASH(k1) BUCKETS 2"""
# A DELETE naming a key column a rollup lacks is rejected (DORIS_REFERENCE b.2), so the table
# with a rollup only gets deletes on k2.
AGG_ROLLUP = AGG.replace("BUCKETS 2", "BUCKETS 2 ROLLUP (r_k2 (k2, s, mx, b))")

agg_row = st.tuples(k1s, k2s, small_int, small_int, small_int, small_int, small_int,
                    st.one_of(st.none(), st.sampled_from(["", "x", "y", "zz"])),
                    st.one_of(st.none(), st.frozensets(st.integers(0, 40), max_size=3)),
                    st.one_of(st.none(), st.frozensets(st.integers(0, 40), max_size=3)))


def agg_physical(r: tuple) -> tuple:
    b = None if r[8] is None else bitmap.from_values(sorted(r[8]))
    h = None if r[9] is None else hll.from_values([str(x).encode() for x in sorted(r[9])])
    return r[:8] + (b, h)


def agg_fold(state: dict | None, r: tuple) -> dict:
    _, _, s, mx, mn, rep, rn, smax, b, h = r
    if state is None:
        return {"s": s, "mx": mx, "mn": mn, "r": rep, "rn": rn, "smax": smax, "b": b, "h": h}
    def keep(f, old, new):  # noqa: E306 - NULL-ignoring combine
        return old if new is None else new if old is None else f(old, new)
    return {"s": keep(lambda a, c: a + c, state["s"], s), "mx": keep(max, state["mx"], mx),
            "mn": keep(min, state["mn"], mn), "r": rep, "rn": rn if rn is not None else state["rn"],
            "smax": keep(max, state["smax"], smax), "b": keep(lambda a, c: a | c, state["b"], b),
            "h": keep(lambda a, c: a | c, state["h"], h)}


def agg_reference(plan: list, table: TableMeta) -> dict:
    state: dict[tuple, dict] = {}
    for kind, payload in plan:
        if kind == "load":
            for r in payload:
                state[(r[0], r[1])] = agg_fold(state.get((r[0], r[1])), r)
        else:
            state = {k: v for k, v in state.items()
                     if not all(matches({"k1": k[0], "k2": k[1]}, c, table) for c in payload)}
    return state


def decode_agg(rows: list[tuple]) -> list[tuple]:
    out = []
    for r in rows:
        b = None if r[8] is None else frozenset(bitmap.decode(r[8]))
        h = None if r[9] is None else hll.cardinality(r[9])
        out.append(r[:8] + (b, h))
    return sorted(out, key=repr)


def expected_agg(state: dict) -> list[tuple]:
    return sorted(((k[0], k[1], v["s"], v["mx"], v["mn"], v["r"], v["rn"], v["smax"], v["b"],
                    None if v["h"] is None else len(v["h"])) for k, v in state.items()), key=repr)


def run_plan(engine: StorageEngine, table: TableMeta, plan: list, convert=lambda r: r) -> None:
    for kind, payload in plan:
        if kind == "load":
            load(engine, table, [convert(r) for r in payload])
        else:
            delete(engine, table, payload)


@SETTINGS
@given(plan=plans(agg_row, key_only=True), batch_size=st.sampled_from([1, 2, 3, 65536]))
def test_aggregate_merge_equals_reference(engine: StorageEngine, plan: list,
                                          batch_size: int) -> None:
    table = create(engine, AGG)
    run_plan(engine, table, plan, agg_physical)
    state = agg_reference(plan, table)
    got = decode_agg(read(engine, table, batch_size=batch_size))
    assert got == expected_agg(state)
    # count(*)-style reads of a single column still see one row per merged key
    assert len(read(engine, table, columns=("s",), batch_size=batch_size)) == len(state)
    # loading every row in ONE load (no deletes) equals loading them across versions
    if all(kind == "load" for kind, _ in plan):
        one = create(engine, AGG)
        load(engine, one, [agg_physical(r) for _, p in plan for r in p])
        assert decode_agg(read(engine, one)) == got


@SETTINGS
@given(plan=plans(agg_row, key_only=True, k1=False), batch_size=st.sampled_from([2, 65536]))
def test_aggregate_rollup_aggregates_its_own_keys(engine: StorageEngine, plan: list,
                                                  batch_size: int) -> None:
    table = create(engine, AGG_ROLLUP)
    run_plan(engine, table, plan, agg_physical)
    state = agg_reference(plan, table)
    assert decode_agg(read(engine, table, batch_size=batch_size)) == expected_agg(state)
    roll: dict[object, dict] = {}
    for (_, k2), v in state.items():
        row = (None, k2, v["s"], v["mx"], None, None, None, None, v["b"], None)
        roll[k2] = agg_fold(roll.get(k2), row)
    # Rollup tablets follow the base table's buckets (k1), so one k2 may have a row in several
    # tablets; like the query's aggregate above the scan, fold those with the same rules.
    per_tablet: dict[object, dict] = {}
    rows = read(engine, table, index="r_k2", batch_size=batch_size)
    for k2, s, mx, b in rows:
        row = (None, k2, s, mx, None, None, None, None,
               None if b is None else frozenset(bitmap.decode(b)), None)
        per_tablet[k2] = agg_fold(per_tablet.get(k2), row)
    for tablet_rows in read_per_tablet(engine, table, "r_k2"):
        assert len({r[0] for r in tablet_rows}) == len(tablet_rows)  # merged inside a tablet
    assert {k: (v["s"], v["mx"], v["b"]) for k, v in per_tablet.items()} == \
        {k: (v["s"], v["mx"], v["b"]) for k, v in roll.items()}


def _agg(k1: int, s: int) -> tuple:
    return (k1, "a", s, None, None, None, None, None, None, None)


@SETTINGS
@given(plan=plans(agg_row, key_only=True), threshold=st.integers(-6, 6))
# 3 + 3 passes "s > 5" only after the merge; 10 - 8 fails it only after the merge
@example(plan=[("load", [_agg(1, 3)]), ("load", [_agg(1, 3)])], threshold=5)
@example(plan=[("load", [_agg(1, 10)]), ("load", [_agg(1, -8)])], threshold=5)
def test_value_predicates_apply_after_merge(engine: StorageEngine, plan: list,
                                            threshold: int) -> None:
    table = create(engine, AGG)
    run_plan(engine, table, plan, agg_physical)
    state = agg_reference(plan, table)
    preds = (ColumnPredicate("s", ">", (threshold,)), ColumnPredicate("k1", "!=", (2,)))
    got = read(engine, table, columns=("k1", "k2", "s"), predicates=preds)
    want = sorted(((k[0], k[1], v["s"]) for k, v in state.items()
                   if v["s"] is not None and v["s"] > threshold and k[0] is not None and k[0] != 2),
                  key=repr)
    assert got == want


# ---- UNIQUE --------------------------------------------------------------------------------
UNIQ = """CREATE TABLE {name} (k1 INT, k2 VARCHAR(8), v1 INT, v2 VARCHAR(8), sq INT)
UNIQUE KEY(k1, k2) DISTRIBUTED BY HASH(k1) BUCKETS 2 {props}"""
uniq_row = st.tuples(k1s, k2s, small_int, st.one_of(st.none(), st.sampled_from(["p", "q"])),
                     small_int)


def uniq_reference(plan: list, table: TableMeta, sequence: bool) -> dict:
    state: dict[tuple, tuple] = {}
    for kind, payload in plan:
        if kind == "load":
            for r in payload:
                old = state.get((r[0], r[1]))
                if old is not None and sequence:
                    rank = (lambda x: (x is not None, x if x is not None else 0))  # noqa: E731
                    if rank(r[4]) < rank(old[4]):
                        continue  # a smaller sequence value never replaces a larger one
                state[(r[0], r[1])] = r
        else:  # deletes see the merged rows (value-column conditions included)
            state = {k: v for k, v in state.items() if not all(
                matches(dict(zip(("k1", "k2", "v1", "v2", "sq"), v)), c, table) for c in payload)}
    return state


@SETTINGS
@given(plan=plans(uniq_row, key_only=False), sequence=st.booleans(),
       batch_size=st.sampled_from([1, 3, 65536]))
def test_unique_merge_equals_reference(engine: StorageEngine, plan: list, sequence: bool,
                                       batch_size: int) -> None:
    props = 'PROPERTIES ("function_column.sequence_col" = "sq")' if sequence else ""
    table = create(engine, UNIQ.replace("{props}", props))
    run_plan(engine, table, plan)
    want = sorted(uniq_reference(plan, table, sequence).values(), key=repr)
    assert read(engine, table, batch_size=batch_size) == want
    if all(kind == "load" for kind, _ in plan):
        one = create(engine, UNIQ.replace("{props}", props))
        load(engine, one, [r for _, p in plan for r in p])
        assert read(engine, one) == want


def test_value_column_delete_sees_merged_rows(engine: StorageEngine) -> None:
    """A delete on a value column hides the merged row; the older version must not reappear."""
    table = create(engine, UNIQ.replace("{props}", ""))
    load(engine, table, [(1, "a", 5, "old", None), (2, "a", 7, "keep", None)])
    load(engine, table, [(1, "a", 6, "new", None)])
    delete(engine, table, [DeleteCondition("v1", ">", (5,)), DeleteCondition("k2", "=", ("a",))])
    load(engine, table, [(3, "a", 9, "later", None)])  # loaded after the delete: unaffected
    assert read(engine, table) == [(3, "a", 9, "later", None)]
    assert read(engine, table, batch_size=1) == [(3, "a", 9, "later", None)]


# ---- DUPLICATE -----------------------------------------------------------------------------
DUP = """CREATE TABLE {name} (k1 INT, k2 VARCHAR(8), v1 INT) DUPLICATE KEY(k1, k2)
DISTRIBUTED BY HASH(k2) BUCKETS 2"""
dup_row = st.tuples(k1s, k2s, small_int)


@SETTINGS
@given(plan=plans(dup_row, key_only=False))
def test_duplicate_keeps_every_row_and_applies_deletes(engine: StorageEngine, plan: list) -> None:
    table = create(engine, DUP)
    rows: list[tuple] = []
    for kind, payload in plan:
        if kind == "load":
            load(engine, table, payload)
            rows += payload
        else:
            delete(engine, table, payload)
            rows = [r for r in rows if not all(
                matches(dict(zip(("k1", "k2", "v1"), r)), c, table) for c in payload)]
    assert read(engine, table) == sorted(rows, key=repr)
    pred = (ColumnPredicate("v1", ">=", (0,)),)
    assert read(engine, table, predicates=pred) == sorted(
        (r for r in rows if r[2] is not None and r[2] >= 0), key=repr)


# ---- seed 004 "limitations of the aggregate model" ----------------------------------------
def test_seed_004_count_and_min_on_merged_rows(engine: StorageEngine) -> None:
    table = create(engine, """CREATE TABLE {name} (user_id LARGEINT, date DATE, cost BIGINT SUM)
        AGGREGATE KEY(user_id, date) DISTRIBUTED BY HASH(user_id) BUCKETS 1""")
    d = table.column("date").type.to_physical
    load(engine, table, [(10001, d("2017-11-20"), 50), (10002, d("2017-11-21"), 39)])
    load(engine, table, [(10001, d("2017-11-20"), 1), (10001, d("2017-11-21"), 5),
                         (10003, d("2017-11-22"), 22)])
    # scanning one key column alone would give 3 distinct / 5 raw rows; merged rows are 4
    assert len(read(engine, table, columns=("user_id",))) == 4
    assert min(r[0] for r in read(engine, table, columns=("cost",))) == 5
    assert read(engine, table) == [(10001, d("2017-11-20"), 51), (10001, d("2017-11-21"), 5),
                                   (10002, d("2017-11-21"), 39), (10003, d("2017-11-22"), 22)]
