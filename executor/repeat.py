"""GROUPING SETS operators (plan: planner/repeat.py).

`RepeatOperator`: each batch of n rows comes out as one batch of n * sets rows, block s being
the input again for set s: the key columns outside set s NULL there (a validity mask per
block, no per-row work), then the set id and the GROUPING() columns as constants per block.
Row-local, so it streams batch by batch. Upstream: Doris `VRepeatNode`.

`EmptyGroupingSetsOperator`: passes its child's rows; when there were none at all, returns
the grand-total rows of the empty sets (their key values, each aggregate over no rows), as
SQL's `GROUP BY ROLLUP(..)` / `GROUPING SETS (.., ())` does for empty input.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from executor.operator import Operator
from sql.binder.expressions import AggregateCall
from sql.functions import aggregate_function
from storage.batch import Batch, Column, DictColumn
from storage.types import BIGINT, DataType


def repeat_column(col: Column, kept: np.ndarray) -> Column:
    """`col` once per set (`kept[s]`: whether set s keeps it), NULL in the blocks of the sets
    that leave it out."""
    n, k = len(col), len(kept)
    if kept.all():
        return Column.concat([col] * k) if k > 1 else col
    validity = np.repeat(kept, n)
    if col.validity is not None:
        validity &= np.tile(col.validity, k)
    if isinstance(col, DictColumn):  # stay on the codes
        return DictColumn(col.dictionary, np.tile(col.codes, k), validity, col.type)
    rep = Column.concat([col] * k) if k > 1 else col
    return Column(rep.type, rep.data, validity, rep.offsets)


def repeat_batch(batch: Batch, key_names: tuple[str, ...], sets: tuple[tuple[int, ...], ...],
                 constants: tuple[tuple[str, tuple[int, ...]], ...]) -> Batch:
    """The Repeat of one batch (see the module docstring); `constants` are (name, value per
    set) BIGINT columns appended after the input's."""
    n, k = batch.num_rows, len(sets)
    kept_by_key = {name: np.array([i in s for s in sets], dtype=np.bool_)
                   for i, name in enumerate(key_names)}
    all_kept = np.ones(k, dtype=np.bool_)
    cols = [repeat_column(c, kept_by_key.get(name, all_kept))
            for name, c in zip(batch.names, batch.columns)]
    for _, values in constants:
        cols.append(Column(BIGINT, np.repeat(np.asarray(values, dtype=np.int64), n)))
    return Batch(batch.names + tuple(name for name, _ in constants), tuple(cols))


class RepeatOperator(Operator):
    def __init__(self, key_names: tuple[str, ...], sets: tuple[tuple[int, ...], ...],
                 id_name: str, virtual_names: tuple[str, ...],
                 virtual_values: tuple[tuple[int, ...], ...], child: Operator) -> None:
        super().__init__(child)
        self.key_names = key_names
        self.sets = sets
        self.constants = ((id_name, tuple(range(len(sets)))),
                          *zip(virtual_names, virtual_values))

    def produce(self) -> Iterator[Batch]:
        # a batch grows `sets` times: split the input so the output stays near a batch
        step = max(1, self.ctx.batch_size // max(1, len(self.sets)))
        for batch in self.child_batches():
            for start in range(0, batch.num_rows, step):
                part = batch if batch.num_rows <= step else batch.slice(start, start + step)
                yield repeat_batch(part, self.key_names, self.sets, self.constants)


def empty_aggregate(a: AggregateCall) -> Column:
    """One row: the aggregate over no rows (count 0, most others NULL)."""
    fn = aggregate_function(a.name)
    assert fn is not None and fn.empty is not None, a.name
    if fn.bind is not None:  # constant arguments, e.g. GROUP_CONCAT's separator
        fn = fn.bind(tuple(getattr(x, "value", None) for x in a.args[1:]))
    arg_t = a.args[0].dtype if a.args else a.type
    assert fn.empty is not None
    return fn.final(fn.empty(1, arg_t), a.type).to_column().with_type(a.type)


class EmptyGroupingSetsOperator(Operator):
    def __init__(self, key_names: tuple[str, ...], key_types: tuple[DataType, ...],
                 key_rows: tuple[tuple[object, ...], ...],
                 aggregates: tuple[tuple[str, AggregateCall], ...], child: Operator) -> None:
        super().__init__(child)
        self.key_names = key_names
        self.key_types = key_types
        self.key_rows = key_rows
        self.aggregates = aggregates

    def produce(self) -> Iterator[Batch]:
        rows = 0
        for batch in self.child_batches():
            rows += batch.num_rows
            yield batch
        if rows or not self.key_rows:
            return
        m = len(self.key_rows)
        keys = [Column.from_physical(t, [r[i] for r in self.key_rows])
                for i, t in enumerate(self.key_types)]
        aggs = []
        for _, a in self.aggregates:
            one = empty_aggregate(a)
            aggs.append(one.take(np.zeros(m, dtype=np.int64)))
        yield Batch(self.key_names + tuple(n for n, _ in self.aggregates),
                    tuple(keys + aggs))
