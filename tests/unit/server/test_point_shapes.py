"""Point-lookup shapes recognised without the scanner (server/point_query.py): a `LiteralSlot`
learned from one text, applied to another text, must give exactly the shape the scanner gives
that text, or nothing; `prepared_shape` (a cached skeleton per text) must give what the
one-pass scan with the parameters in place gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from server.point_query import LiteralSlot, Shape, _scan, prepared_shape, statement_shape

HEADS = ["SELECT k, v FROM t WHERE k = ", "SELECT * FROM db.t WHERE s =",
         "select a from t where a=", "SELECT k FROM t WHERE k = 1 AND s = ",
         "SELECT k FROM t WHERE k =\n", "SELECT kx"]
TAILS = ["", ";", " ", " AND n = 2", "'", "x", ".5", " -- c", "\n;"]
LITERALS = st.one_of(
    st.integers(-(1 << 70), 1 << 70).map(str),
    st.text(max_size=6).map(lambda t: "'" + t + "'"),
    st.sampled_from(["'it''s'", "'a\\'b'", "''", "--1", "1.5", "٣", "0x1", "'a'b'", "-", "'"]),
)


def _plain(shape: Shape | None) -> tuple[object, ...] | None:
    return None if shape is None else (shape.key, shape.literals, shape.kinds)


@settings(max_examples=200, deadline=None)
@given(head=st.sampled_from(HEADS), tail=st.sampled_from(TAILS), first=LITERALS,
       other=LITERALS)
def test_a_slot_agrees_with_the_scanner(head: str, tail: str, first: str, other: str) -> None:
    learned = statement_shape(head + first + tail)
    if learned is None:
        return
    slot = LiteralSlot.of(head + first + tail, learned)
    if slot is None:
        return
    sql = head + other + tail
    got = slot.shape(sql)
    if got is not None:
        assert _plain(got) == _plain(statement_shape(sql))


def test_a_slot_recognises_the_learned_text_with_other_literals() -> None:
    sql = "SELECT k, v, n FROM points WHERE k = 17"
    slot = LiteralSlot.of(sql, statement_shape(sql))
    assert slot is not None
    assert _plain(slot.shape("SELECT k, v, n FROM points WHERE k = -4")) == _plain(
        statement_shape("SELECT k, v, n FROM points WHERE k = -4"))
    assert slot.shape("SELECT k, v, n FROM points WHERE k = 'a'") is None
    assert slot.shape("SELECT k, v, n FROM points WHERE k = 1.5") is None
    text = "SELECT v FROM t WHERE s = 'x';"
    s_slot = LiteralSlot.of(text, statement_shape(text))
    assert s_slot is not None
    assert s_slot.shape("SELECT v FROM t WHERE s = '日本';") == Shape(
        s_slot.key, ("'日本'",), ("str",))
    assert s_slot.shape("SELECT v FROM t WHERE s = 'it''s';") is None  # left to the scanner


@settings(max_examples=100, deadline=None)
@given(params=st.lists(st.one_of(st.integers(-(1 << 63), (1 << 63) - 1),
                                 st.text(max_size=5), st.none(), st.floats()),
                       min_size=1, max_size=3),
       table=st.sampled_from(["t", "db.t", "`t t`"]))
def test_prepared_shapes_equal_the_shape_of_the_literal_text(params: list[object],
                                                              table: str) -> None:
    where = " AND ".join(f"c{i} = ?" for i in range(len(params)))
    sql = f"SELECT a, b FROM {table} WHERE {where}"
    got = prepared_shape(sql, params)
    if any(not isinstance(p, (int, str)) for p in params):
        assert got is None
        return
    # the one-pass scan with the values in place of the `?` (what it replaced)
    assert _plain(got) == _plain(_scan(sql, params))
    assert got is not None
    assert prepared_shape(sql, params[:-1]) is None  # a parameter count that does not fit
