"""Index building blocks: short-key encodings keep value order, prefix rules follow Doris, zone
maps stay conservative for truncated strings, NaN pages and constants they cannot compare."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from segment_data import KEY_MENU, value_strategy

from storage import types as T
from storage.indexes import zone_map as Z
from storage.indexes.short_key import encode_component, plan_prefix, truncate_key
from storage.segment.encoding import layout_of


def key_order(v: object) -> tuple[int, object]:
    return (0, 0) if v is None else (1, v)


@pytest.mark.parametrize("dtype", KEY_MENU, ids=lambda t: t.sql())
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_short_key_encoding_keeps_value_order(dtype: T.DataType, data: st.DataObject) -> None:
    part = plan_prefix([("c", dtype)], 1)[0]
    values = data.draw(
        st.lists(st.one_of(st.none(), value_strategy(dtype)), min_size=2, max_size=8)
    )
    for a in values:
        for b in values:
            ea, eb = encode_component(part, a), encode_component(part, b)
            assert (ea < eb) == (key_order(a) < key_order(b)), (a, b)
            assert (ea == eb) == (key_order(a) == key_order(b)), (a, b)
            if not part.is_string:  # fixed width, so a following column stays aligned
                assert len(ea) == part.width + 1


def test_prefix_rules() -> None:
    def names(cols: list[tuple[str, T.DataType]], n: int = 3) -> list[tuple[str, int]]:
        return [(p.name, p.width) for p in plan_prefix(cols, n)]

    big = T.BIGINT
    assert names([("a", big), ("b", big), ("c", big), ("d", big)]) == [("a", 8), ("b", 8), ("c", 8)]
    assert names([("a", big), ("b", big)], 1) == [("a", 8)]
    assert names([("a", T.LARGEINT), ("b", T.LARGEINT), ("c", T.LARGEINT)]) == [
        ("a", 16),
        ("b", 16),
    ]
    assert names([("a", T.INT), ("s", T.varchar(100)), ("c", T.INT)]) == [("a", 4), ("s", 32)]
    assert names([("f", T.FLOAT), ("a", T.INT)]) == []
    assert names([("a", T.INT), ("f", T.DOUBLE), ("b", T.INT)]) == [("a", 4)]
    assert names([("a", T.LARGEINT), ("b", T.LARGEINT), ("s", T.STRING)]) == [
        ("a", 16),
        ("b", 16),
        ("s", 4),
    ]
    parts = plan_prefix([("a", T.INT), ("s", T.STRING)], 2)
    key = encode_component(parts[0], 1) + encode_component(parts[1], "x" * 100)
    cut, exact = truncate_key(parts, key)
    assert not exact and len(cut) == 5 + 1 + 32
    assert truncate_key(parts, key[:12]) == (key[:12], True)


def build(layout_type: T.DataType, pages: list[list[object]]) -> Z.ZoneMap:
    from storage.batch import Column

    layout = layout_of(layout_type)
    b = Z.ZoneMapBuilder(layout)
    for values in pages:
        col = Column.from_physical(layout_type, values)
        b.add_page(col.data, col.validity, col.offsets)
    return Z.ZoneMap.parse(b.finish(), layout, len(pages) + 1)


def test_long_string_bounds_are_conservative() -> None:
    long = "ab" * 40  # 80 bytes: min truncated to 64, max rounded up
    pages = [[long], ["b", "c"], ["ab" * 32 + "\x00", "ab" * 32], ["z" * 80]]
    zm = build(T.STRING, pages)
    assert zm.maxs[0] > long.encode() and zm.mins[0] <= long.encode()
    for op, v, want in [
        ("=", long, [True, False, True, False, True]),
        (">=", long, [True, True, True, True, True]),
        ("<", "ab" * 32 + "\x00", [True, False, True, False, True]),
        ("<=", "ab" * 32, [True, False, True, False, True]),
        ("!=", long, [True, True, True, True, True]),  # inexact bounds never prove "all equal"
        (">", "z" * 80, [False, False, False, True, True]),
    ]:
        got = zm.may_match(op, [v.encode()])
        assert got.tolist() == want, (op, v)
    exact = build(T.STRING, [["x", "x"], ["x", "y"]])
    assert exact.may_match("!=", [b"x"]).tolist() == [False, True, True]
    assert exact.may_match("not_in", [b"y", b"x"]).tolist() == [False, True, True]


def test_nulls_nan_and_empty_pages() -> None:
    zm = build(T.DOUBLE, [[None, None], [1.0, float("nan")], [2.0, None], [-0.0, 0.0]])
    assert zm.may_match("is_null", []).tolist() == [True, False, True, False, True]
    assert zm.may_match("is_not_null", []).tolist() == [False, True, True, True, True]
    assert zm.may_match("=", [5.0]).tolist() == [False, True, False, False, True]  # NaN: no bounds
    assert zm.may_match("!=", [0.0]).tolist() == [False, True, True, False, True]
    assert zm.may_match("in", []).tolist() == [False] * 5
    ints = build(T.TINYINT, [[-128, 127], [None, 3]])
    assert ints.may_match(">", [126]).tolist() == [True, False, True]
    assert ints.may_match("<", [-128]).tolist() == [False, False, False]


@pytest.mark.parametrize(
    ("dtype", "value"),
    [
        (T.INT, 1.5),
        (T.INT, 2**40),
        (T.TINYINT, 300),
        (T.FLOAT, 0.1),  # not exactly representable in float32
        (T.DOUBLE, float("nan")),
        (T.STRING, b"x"),
        (T.STRING, 5),
        (T.DataType(T.TypeKind.HLL), "x"),
        (T.LARGEINT, 2**127),
        (T.BIGINT, None),
    ],
)
def test_constants_the_indexes_cannot_compare(dtype: T.DataType, value: object) -> None:
    with pytest.raises(Z.NotIndexable):
        Z.index_value(dtype, layout_of(dtype), value)


def test_indexable_constants() -> None:
    assert Z.index_value(T.FLOAT, layout_of(T.FLOAT), 0.5) == 0.5
    assert Z.index_value(T.DOUBLE, layout_of(T.DOUBLE), 3) == 3.0
    assert Z.index_value(T.TINYINT, layout_of(T.TINYINT), np.int64(-128)) == -128
    assert Z.index_value(T.BOOLEAN, layout_of(T.BOOLEAN), True) == 1
    assert Z.index_value(T.varchar(3), layout_of(T.varchar(3)), "é") == "é".encode()
