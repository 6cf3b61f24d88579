"""BITMAP / HLL functions against plain-Python references (exact sets, exact distinct counts).

Queries run through the real binder, planner and operators over `MemoryEngine` (several
tablets, small batches), so aggregates go through partial -> merge -> final.
"""

from __future__ import annotations

import random
from itertools import permutations

import pytest
from engine_fakes import MemoryEngine, run, session
from hypothesis import given, settings
from hypothesis import strategies as st

from executor.insert import convert_value
from executor.query import evaluate_constant
from sql.parser.dialect import parse_one
from storage import bitmap, hll
from storage.catalog.meta import ColumnMeta
from storage.errors import ShaleError
from storage.types import BIGINT, INT, STRING, DataType, TypeKind

BITMAP_T = DataType(TypeKind.BITMAP)
HLL_T = DataType(TypeKind.HLL)


def const(sql: str) -> tuple[object, DataType]:
    return evaluate_constant(parse_one(f"SELECT {sql}").expressions[0], session())


@pytest.mark.parametrize("sql,value", [
    ("bitmap_to_string(to_bitmap(5))", "5"),
    ("bitmap_to_string(to_bitmap('18446744073709551615'))", "18446744073709551615"),
    ("bitmap_to_string(to_bitmap(-1))", ""),  # out of range -> empty bitmap
    ("bitmap_to_string(to_bitmap(NULL))", ""),  # never NULL (Doris' vectorized to_bitmap)
    ("bitmap_count(to_bitmap(7))", 1),
    ("bitmap_count(bitmap_empty())", 0),
    ("bitmap_count(NULL)", 0),
    ("bitmap_to_string(bitmap_from_string('3, 1,2,3'))", "1,2,3"),
    ("bitmap_to_string(bitmap_from_string('1,x'))", None),
    ("bitmap_to_string(NULL)", None),
    ("bitmap_count(bitmap_hash('abc'))", 1),
    ("hll_cardinality(hll_hash('a'))", 1),
    ("hll_cardinality(hll_hash(12))", 1),
    ("hll_cardinality(hll_empty())", 0),
    ("hll_cardinality(hll_hash(NULL))", 0),
    ("hll_cardinality(NULL)", 0),
    # base64 of the serialized cell (the Spark data source's binary path); bad input: NULL
    ("bitmap_to_string(bitmap_from_base64(bitmap_to_base64(bitmap_from_string('1,5'))))", "1,5"),
    ("hll_cardinality(hll_from_base64(hll_to_base64(hll_hash('a'))))", 1),
    ("bitmap_from_base64('not base64!')", None),
    ("bitmap_from_base64('AAAA')", None),  # base64, but not a serialized bitmap
    ("hll_from_base64('AQ==')", None),
    ("bitmap_to_base64(NULL)", None),
    ("bitmap_count(bitmap_from_base64(bitmap_to_base64(bitmap_empty())))", 0),
])
def test_scalar_functions(sql: str, value: object) -> None:
    assert const(sql)[0] == value


def test_constructors_return_object_types() -> None:
    value, t = const("to_bitmap(42)")
    assert t.kind is TypeKind.BITMAP and set(bitmap.decode(value)) == {42}  # type: ignore[arg-type]
    value, t = const("hll_hash('x')")
    assert t.kind is TypeKind.HLL and hll.cardinality(value) == 1  # type: ignore[arg-type]
    # bitmap_hash is murmur3_32 of the bytes (Doris' seed), a uint32
    (member,) = bitmap.decode(const("bitmap_hash('abc')")[0])  # type: ignore[arg-type]
    assert 0 <= member < 2**32


@pytest.mark.parametrize("sql", ["bitmap_count(1)", "bitmap_to_string('a')",
                                 "hll_cardinality(to_bitmap(1))", "hll_hash(to_bitmap(1))"])
def test_wrong_argument_types(sql: str) -> None:
    with pytest.raises(ShaleError, match="compatibility function signature"):
        const(sql)


# ---- aggregates over tables ----------------------------------------------------------------
def test_bitmap_union_count_is_exact_distinct() -> None:
    rng = random.Random(3)
    rows = [(rng.randrange(4), rng.choice([None, -3, *range(200)])) for _ in range(1500)]
    engine = MemoryEngine()
    engine.create_table("db", "t", [("g", INT), ("x", BIGINT)], rows, tablets=3)
    _, got = run(engine, "SELECT g, bitmap_union_count(to_bitmap(x)), bitmap_union_int(x), "
                         "bitmap_count(bitmap_union(to_bitmap(x))) FROM t GROUP BY g")
    want = {}
    for g, x in rows:
        want.setdefault(g, set())
        if x is not None and x >= 0:
            want[g].add(x)
    assert sorted(got) == sorted((g, len(s), len(s), len(s)) for g, s in want.items())
    _, total = run(engine, "SELECT bitmap_union_count(to_bitmap(x)) FROM t")
    assert total == [(len(set().union(*want.values())),)]


def test_bitmap_union_of_stored_bitmaps() -> None:
    rng = random.Random(5)
    sets = [frozenset(rng.sample(range(2**40, 2**40 + 50), rng.randrange(4))) for _ in range(60)]
    rows = [(i % 3, None if i % 7 == 0 else bitmap.from_values(sorted(s)))
            for i, s in enumerate(sets)]
    engine = MemoryEngine()
    engine.create_table("db", "b", [("g", INT), ("bm", BITMAP_T)], rows)
    _, got = run(engine, "SELECT g, bitmap_to_string(bitmap_union(bm)), bitmap_union_count(bm) "
                         "FROM b GROUP BY g")
    want: dict[int, set[int]] = {}
    for i, s in enumerate(sets):
        want.setdefault(i % 3, set())
        if i % 7:
            want[i % 3] |= s
    assert sorted(got) == sorted(
        (g, ",".join(map(str, sorted(s))), len(s)) for g, s in want.items())
    _, empty = run(engine, "SELECT bitmap_union_count(bm), hll_union_agg(hll_hash(g)) FROM b "
                           "WHERE g > 10")
    assert empty == [(0, 0)]


def test_hll_union_agg_within_two_percent_for_100k_distinct() -> None:
    n = 100_000
    rows = [(i % 5, f"user-{i}") for i in range(n)] + [(0, "user-1")] * 100
    engine = MemoryEngine()
    engine.batch_rows = 4096
    engine.create_table("db", "h", [("g", INT), ("u", STRING)], rows, tablets=4)
    _, got = run(engine, "SELECT hll_union_agg(hll_hash(u)), approx_count_distinct(u), "
                         "hll_cardinality(hll_union(hll_hash(u))), ndv(u) FROM h")
    for estimate in got[0]:
        assert abs(estimate - n) / n < 0.02, got
    _, per_group = run(engine, "SELECT g, hll_union_agg(hll_hash(u)) FROM h GROUP BY g")
    for _, estimate in per_group:
        assert abs(estimate - n / 5) / (n / 5) < 0.03


def test_hll_small_sets_are_exact() -> None:
    rows = [(i % 2, i % 37) for i in range(500)]
    engine = MemoryEngine()
    engine.create_table("db", "s", [("g", INT), ("x", INT)], rows)
    _, got = run(engine, "SELECT g, hll_union_agg(hll_hash(x)), ndv(x) FROM s GROUP BY g")
    want = {g: len({x for gg, x in rows if gg == g}) for g in (0, 1)}
    assert sorted(got) == sorted((g, c, c) for g, c in want.items())


# ---- sketch algebra ------------------------------------------------------------------------
value_sets = st.lists(st.frozensets(st.integers(0, 5000), max_size=400), min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(sets=value_sets)
def test_hll_merge_is_commutative_and_associative(sets: list[frozenset[int]]) -> None:
    blobs = [hll.from_values(str(v).encode() for v in sorted(s)) for s in sets]
    results = {hll.union(list(p)) for p in permutations(blobs)}
    assert len(results) == 1  # any order gives the same registers, byte for byte
    merged = results.pop()
    if len(blobs) >= 3:  # (a u b) u c == a u (b u c)
        left = hll.union([hll.union(blobs[:2]), *blobs[2:]])
        right = hll.union([blobs[0], hll.union(blobs[1:])])
        assert left == right == merged
    assert hll.union([merged, merged]) == merged  # idempotent
    exact = len(frozenset().union(*sets))
    all_at_once = hll.from_values(str(v).encode() for v in sorted(frozenset().union(*sets)))
    assert hll.cardinality(merged) == hll.cardinality(all_at_once)
    if exact <= hll.EXPLICIT_MAX:
        assert hll.cardinality(merged) == exact
    else:
        assert abs(hll.cardinality(merged) - exact) <= max(3, 0.05 * exact)


@settings(max_examples=60, deadline=None)
@given(sets=st.lists(st.frozensets(st.integers(0, 2**64 - 1), max_size=20), min_size=1,
                     max_size=5))
def test_bitmap_union_equals_set_union(sets: list[frozenset[int]]) -> None:
    blobs = [bitmap.from_values(sorted(s)) for s in sets]
    merged = bitmap.union(blobs)
    assert set(bitmap.decode(merged)) == set().union(*sets)
    assert bitmap.to_string(merged) == ",".join(map(str, sorted(set().union(*sets))))


@pytest.mark.parametrize("fmt_size", [1, 500, 3000, 50_000])
def test_hll_encodings_round_trip(fmt_size: int) -> None:
    blob = hll.from_values(f"v{i}".encode() for i in range(fmt_size))
    kind = blob[0]
    assert kind == (1 if fmt_size <= hll.EXPLICIT_MAX else 2 if fmt_size <= 3000 else 3)
    assert hll.Hll.decode(blob).encode() == blob


# ---- INSERT conversion ---------------------------------------------------------------------
def test_insert_rejects_plain_values_for_object_columns() -> None:
    bm = ColumnMeta("uv", BITMAP_T)
    with pytest.raises(ShaleError, match="Column's type is BITMAP.*to_bitmap.*column=uv"):
        convert_value(bm, 5, INT, 1)
    h = ColumnMeta("h", HLL_T)
    with pytest.raises(ShaleError, match="Column's type is HLL.*hll_hash.*column=h"):
        convert_value(h, "a", STRING, 1)
    with pytest.raises(ShaleError, match="can not cast from origin type BITMAP"):
        convert_value(ColumnMeta("i", INT), bitmap.single(1), BITMAP_T, 1)
    blob = bitmap.single(9)
    assert convert_value(bm, blob, BITMAP_T, 1) == blob
    assert convert_value(bm, None, None, 1) is None


@settings(max_examples=40, deadline=None)
@given(values=st.frozensets(st.integers(0, 2**64 - 1), max_size=30))
def test_bitmap_base64_is_the_serialized_cell(values: frozenset[int]) -> None:
    """bitmap_to_base64 is base64 of storage.bitmap's cell; from_base64 gives the set back."""
    import base64

    cell = bitmap.from_values(sorted(values))
    text = ",".join(map(str, sorted(values)))
    encoded, t = const(f"bitmap_to_base64(bitmap_from_string('{text}'))")
    assert t.kind is TypeKind.STRING
    assert set(bitmap.decode(base64.b64decode(str(encoded)))) == set(values)
    assert bitmap.decode(base64.b64decode(str(encoded))) == bitmap.decode(cell)
    back, t = const(f"bitmap_from_base64('{encoded}')")
    assert t.kind is TypeKind.BITMAP and set(bitmap.decode(back)) == set(values)
