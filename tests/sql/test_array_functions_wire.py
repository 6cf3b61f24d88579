"""ARRAY functions over the MySQL protocol (sql/functions/arrays.py). Expected values follow the
Doris 2.1 documentation examples where one exists (cited), plus NULL handling and edge cases
(NULL elements, empty arrays, negative offsets, mixed element types)."""

from __future__ import annotations

import pytest

CASES = [
    # Doris docs array_sort: "NULL values are placed first"; array_reverse_sort: last
    ("array_sort([3, 1, NULL, 2])", "[null, 1, 2, 3]"),
    ("array_sort(['b', 'a'])", '["a", "b"]'),
    ("array_reverse_sort([3, 1, NULL, 2])", "[3, 2, 1, null]"),
    ("array_sort(NULL)", None),
    ("array_distinct([1, 1, NULL, 2, NULL])", "[1, null, 2]"),
    # Doris docs array_compact: [1, 2, 3, 3, null, null, 4, 4] -> [1, 2, 3, null, 4]
    ("array_compact([1, 2, 3, 3, null, null, 4, 4])", "[1, 2, 3, null, 4]"),
    # Doris docs array_join: NULLs skipped unless a replacement is given
    ("array_join(['a', 'b'], ',')", "a,b"),
    ("array_join([1, 2, NULL], '_')", "1_2"),
    ("array_join([1, 2, NULL], '_', 'any')", "1_2_any"),
    ("array_join([cast('2024-01-02' as date)], '|')", "2024-01-02"),
    ("array_join([], ',')", ""),
    ("array_max([1, 5, NULL])", 5), ("array_min(['b', 'a'])", "a"),
    ("array_sum([1, 2])", 3), ("array_avg([1, 2])", 1.5), ("array_avg([])", None),
    ("array_max([NULL])", None), ("array_sum([0.5, 0.25])", __import__("decimal").Decimal("0.75")),
    ("array_position([1, 2], 2)", 2), ("array_position([1, 2], 3)", 0),
    ("array_position([1, NULL], NULL)", 2),
    # Doris docs array_slice: 1-based offset, negative counts from the end
    ("array_slice([1, 2, 3, 4, 5, 6], 2, 3)", "[2, 3, 4]"),
    ("array_slice([1, 2, 3, 4, 5, 6], -2)", "[5, 6]"),
    ("array_slice([1, 2, 3], 5, 1)", "[]"),
    ("array_remove([1, 2, 1], 1)", "[2]"),
    ("array_union([1, 2], [2, 3])", "[1, 2, 3]"),
    ("array_intersect([1, 2], [2])", "[2]"), ("array_except([1, 2], [2])", "[1]"),
    ("array_concat([1], [2], [3])", "[1, 2, 3]"),
    ("arrays_overlap([1], [1])", 1), ("arrays_overlap([1, NULL], [2])", 0),
    # Doris docs array_with_constant(2, "hello") -> ["hello", "hello"]
    ("array_with_constant(2, 'x')", '["x", "x"]'),
    # Doris docs array_range(10) -> [0, ..., 9]; array_range(0, 20, 2)
    ("array_range(3)", "[0, 1, 2]"), ("array_range(0, 10, 3)", "[0, 3, 6, 9]"),
    ("array_popback([1, 2])", "[1]"), ("array_popfront([1, 2])", "[2]"),
    ("array_pushfront([1], 0)", "[0, 1]"), ("array_pushback([1], 2)", "[1, 2]"),
    # Doris docs split_by_string: an empty separator splits into characters
    ("split_by_string('a,b', ',')", '["a", "b"]'),
    ("split_by_string('abc', '')", '["a", "b", "c"]'),
    ("split_by_string(NULL, ',')", None),
]


@pytest.mark.parametrize("call,expected", CASES, ids=[c[0] for c in CASES])
def test_array_function(db_conn, call: str, expected: object) -> None:
    cur = db_conn.cursor()
    cur.execute(f"SELECT {call}")
    assert cur.fetchone()[0] == expected


def test_array_functions_over_a_table(db_conn) -> None:
    """Per-row evaluation over stored ARRAY cells, including NULL rows."""
    cur = db_conn.cursor()
    cur.execute("CREATE TABLE arr_fn (k INT, a ARRAY<INT>) DUPLICATE KEY(k) "
                "DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ('replication_num'='1')")
    cur.execute("INSERT INTO arr_fn VALUES (1, [3, 1, 2]), (2, NULL), (3, []), (4, [5, NULL, 5])")
    cur.execute("SELECT k, array_sort(a), array_max(a), array_sum(a), array_join(a, '-'), "
                "array_distinct(a) FROM arr_fn ORDER BY k")
    assert cur.fetchall() == (
        (1, "[1, 2, 3]", 3, 6, "3-1-2", "[3, 1, 2]"),
        (2, None, None, None, None, None),
        (3, "[]", None, None, "", "[]"),
        (4, "[null, 5, 5]", 5, 10, "5-5", "[5, null]"),
    )
