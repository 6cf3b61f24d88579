"""Zone pruners shared across tablets and queries (storage/segment/prune.py `ZonePruner.shared`):
the shared pruner answers as a fresh one would; predicates with constants of other types, other
type maps and runtime filters get pruners of their own."""

from __future__ import annotations

import tempfile
from decimal import Decimal
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from storage import types as T
from storage.batch import Batch, Column
from storage.predicates import ColumnPredicate
from storage.segment import SegmentReader, write_segment
from storage.segment.prune import ZonePruner

OPS = ["=", "!=", "<", "<=", ">", ">=", "in", "not_in", "is_null", "is_not_null"]


@settings(max_examples=40, deadline=None)
@given(vtype=st.sampled_from([T.TINYINT, T.SMALLINT, T.INT, T.BIGINT]),
       values=st.lists(st.one_of(st.none(), st.integers(-20, 20)), min_size=1, max_size=50),
       spec=st.lists(st.tuples(st.sampled_from(OPS), st.lists(st.integers(-25, 25), min_size=1,
                                                              max_size=3)),
                     min_size=1, max_size=3))
def test_the_shared_pruner_answers_as_a_fresh_one(vtype, values, spec) -> None:  # type: ignore[no-untyped-def]
    preds = [ColumnPredicate("v", op, () if "null" in op else tuple(c) if "in" in op
                             else (c[0],)) for op, c in spec]
    types = {"k": T.INT, "v": vtype}
    batch = Batch(("k", "v"), (Column(T.INT, np.arange(len(values), dtype=np.int32)),
                               Column.from_physical(vtype, values)))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "s.seg"
        write_segment(path, batch, ["k"], 1)
        with SegmentReader(path, types) as reader:
            fresh = reader.may_match(ZonePruner(types, preds))
            for _ in range(2):
                assert reader.may_match(ZonePruner.shared(types, preds)) == fresh
        expected = any(all(_holds(p.op, v, p.values) for p in preds) for v in values)
        if expected:
            assert fresh  # a zone map never drops a segment holding a matching row


def _holds(op: str, v: int | None, c: tuple[int, ...]) -> bool:
    if op == "is_null":
        return v is None
    if op == "is_not_null" or v is None:
        return v is not None
    if op == "in":
        return v in c
    if op == "not_in":
        return v not in c
    return {"=": v == c[0], "!=": v != c[0], "<": v < c[0], "<=": v <= c[0], ">": v > c[0],
            ">=": v >= c[0]}[op]


def test_pruners_are_shared_only_for_equal_typed_predicates_and_the_same_types() -> None:
    types = {"v": T.INT}
    a = ZonePruner.shared(types, [ColumnPredicate("v", "=", (3,))])
    assert ZonePruner.shared(types, [ColumnPredicate("V", "=", (3,))]) is a
    others = [ZonePruner.shared(types, [ColumnPredicate("v", "=", (c,))])
              for c in (3.0, True, Decimal(3), 4)]
    assert all(o is not a for o in others) and len({id(o) for o in others}) == 4
    assert ZonePruner.shared({"v": T.INT}, [ColumnPredicate("v", "=", (3,))]) is not a
    key_set = ColumnPredicate("v", "in_bitmap", (object(),))
    assert ZonePruner.shared(types, [key_set]) is not ZonePruner.shared(types, [key_set])
