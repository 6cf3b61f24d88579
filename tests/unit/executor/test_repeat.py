"""executor/repeat.py against a plain-Python reference: every row once per grouping set, keys
outside the set NULL, set id and GROUPING values per set; DictColumn keys stay on codes;
batches split so the output stays near a batch; the grand-total rows of an empty input."""

from __future__ import annotations

import random
import threading

import numpy as np
import pytest
from support.operators import BatchesSource

from executor.operator import ExecContext
from executor.repeat import EmptyGroupingSetsOperator, RepeatOperator, repeat_batch
from sql.binder.expressions import AggregateCall, ColumnRef
from storage.batch import Batch, Column, DictColumn
from storage.types import BIGINT, DOUBLE, STRING


def _reference(rows: list[tuple[object, ...]], names: tuple[str, ...],
               key_names: tuple[str, ...], sets: tuple[tuple[int, ...], ...],
               constants: tuple[tuple[str, tuple[int, ...]], ...]) -> list[tuple[object, ...]]:
    out = []
    for s, kept in enumerate(sets):
        dropped = {key_names[i] for i in range(len(key_names)) if i not in kept}
        for r in rows:
            out.append(tuple(None if n in dropped else v for n, v in zip(names, r))
                       + tuple(values[s] for _, values in constants))
    return out


def _random_batch(rng: random.Random, n: int) -> tuple[Batch, list[tuple[object, ...]]]:
    rows = [(rng.choice(["a", "é", "", None]), rng.choice([1, 2, None]),
             None if rng.random() < 0.2 else rng.uniform(-5, 5)) for _ in range(n)]
    cols = (Column.from_physical(STRING, [r[0] for r in rows]),
            Column.from_physical(BIGINT, [r[1] for r in rows]),
            Column.from_physical(DOUBLE, [r[2] for r in rows]))
    return Batch(("s", "k", "x"), cols), rows


@pytest.mark.parametrize("seed", range(5))
def test_repeat_batch_matches_reference(seed: int) -> None:
    rng = random.Random(seed)
    batch, rows = _random_batch(rng, rng.randint(0, 50))
    key_names = ("s", "k")
    sets = rng.choice([((0, 1), (0,), ()), ((0, 1), (0,), (1,), ()), ((1,), (1,), (0,))])
    constants = (("__repeat_id", tuple(range(len(sets)))),
                 ("__grouping0", tuple(rng.randint(0, 3) for _ in sets)))
    got = repeat_batch(batch, key_names, sets, constants)
    assert got.names == ("s", "k", "x", "__repeat_id", "__grouping0")
    assert got.rows() == _reference(rows, batch.names, key_names, sets, constants)


def test_dict_keys_stay_on_codes() -> None:
    dictionary = Column.from_physical(STRING, ["a", "b", "c"])
    col = DictColumn(dictionary, np.array([2, 0, 1, 0], dtype=np.int32),
                     np.array([True, True, False, True]))
    batch = Batch(("s",), (col,))
    got = repeat_batch(batch, ("s",), ((0,), ()), (("__repeat_id", (0, 1)),))
    assert isinstance(got.columns[0], DictColumn)
    assert got.rows() == [("c", 0), ("a", 0), (None, 0), ("a", 0)] + [(None, 1)] * 4


def test_operator_splits_large_batches() -> None:
    batch, rows = _random_batch(random.Random(9), 100)
    sets = ((0, 1), (0,), ())
    op = RepeatOperator(("s", "k"), sets, "__repeat_id", (), (), BatchesSource([batch]))
    op.open(ExecContext(cancel=threading.Event(), batch_size=60))
    out = list(op.batches())
    assert all(b.num_rows <= 60 for b in out)
    got = sorted((r for b in out for r in b.rows()), key=repr)
    want = _reference(rows, batch.names, ("s", "k"), sets, (("__repeat_id", (0, 1, 2)),))
    assert got == sorted(want, key=repr)


def test_empty_input_gives_the_grand_total_rows() -> None:
    aggs = (("__a0", AggregateCall("count", (), False, BIGINT)),
            ("__a1", AggregateCall("sum", (ColumnRef("v", BIGINT),), False, BIGINT)))
    key_rows = ((None, 2, 3),)
    empty = Batch.empty(("__g0", "__g1", "__g2", "__a0", "__a1"), (STRING, BIGINT, BIGINT,
                                                                    BIGINT, BIGINT))
    op = EmptyGroupingSetsOperator(("__g0", "__g1", "__g2"), (STRING, BIGINT, BIGINT),
                                   key_rows, aggs, BatchesSource([empty]))
    op.open(ExecContext(cancel=threading.Event()))
    assert [r for b in op.batches() for r in b.rows()] == [(None, 2, 3, 0, None)]
    # with rows, it passes them and adds nothing
    one = Batch(empty.names, tuple(Column.from_physical(t, [v]) for t, v in zip(
        empty.types, ["x", 0, 0, 5, 7])))
    op = EmptyGroupingSetsOperator(("__g0", "__g1", "__g2"), (STRING, BIGINT, BIGINT),
                                   key_rows, aggs, BatchesSource([one]))
    op.open(ExecContext(cancel=threading.Event()))
    assert [r for b in op.batches() for r in b.rows()] == [("x", 0, 0, 5, 7)]
