"""executor/window_aggregates.py: the segment + prefix-merge evaluation of registry aggregates
over window frames against a brute-force aggregate of every frame's rows on its own."""

from __future__ import annotations

import random

import numpy as np
import pytest

from executor.window_aggregates import frame_aggregate, window_function
from sql.binder.expressions import ColumnRef, Literal, WindowCall
from sql.functions.vector import Vec
from storage.batch import Column
from storage.types import BIGINT, BOOLEAN, DOUBLE, INT, array_of


def _frames(rng: random.Random, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Random partitions with running, sliding, whole and empty frames mixed."""
    lo, hi = np.zeros(n, np.int64), np.zeros(n, np.int64)
    start = 0
    while start < n:
        end = min(n, start + rng.randint(1, 12))
        kind = rng.choice(["running", "sliding", "whole", "ahead"])
        for i in range(start, end):
            if kind == "running":
                lo[i], hi[i] = start, i + 1
            elif kind == "sliding":
                lo[i], hi[i] = max(start, i - 2), min(end, i + 2)
            elif kind == "whole":
                lo[i], hi[i] = start, end
            else:  # frames past the current row, the last one empty
                lo[i], hi[i] = min(end, i + 1), end
        start = end
    return lo, hi


CASES = [
    ("collect_list", (), array_of(INT)),
    ("array_agg", (), array_of(INT)),
    ("count_if", (), BIGINT),
    ("bool_or", (), BOOLEAN),
    ("percentile", (Literal(0.3, DOUBLE),), DOUBLE),
    ("stddev_samp", (), DOUBLE),
    ("group_concat", (Literal("|", None), Literal(0, None), Literal(0, None)), None),
]


@pytest.mark.parametrize("name,consts,ret", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("seed", range(4))
def test_frames_match_brute_force(name, consts, ret, seed: int) -> None:
    from storage.types import STRING

    rng = random.Random(seed)
    n = rng.randint(1, 80)
    if name == "group_concat":
        t = STRING
        raw = [None if rng.random() < 0.2 else str(rng.randint(0, 9)) for _ in range(n)]
        ret = STRING
        consts = tuple(Literal(c.value, STRING if i == 0 else BIGINT)
                       for i, c in enumerate(consts))
    elif name in ("count_if", "bool_or"):
        t = BOOLEAN
        raw = [None if rng.random() < 0.2 else rng.randint(0, 1) for _ in range(n)]
    else:
        t = INT if name in ("collect_list", "array_agg") else DOUBLE
        raw = [None if rng.random() < 0.2 else rng.randint(-5, 5) for _ in range(n)]
    values = Column.from_physical(t, [None if x is None else (float(x) if t is DOUBLE else x)
                                      for x in raw])
    w = WindowCall(name, (ColumnRef("v", t), *consts), (), (), None, ret)
    lo, hi = _frames(rng, n)
    got = frame_aggregate(w, values, lo, hi).to_pylist()
    fn = window_function(w)
    vec = Vec.from_column(values)
    want = []
    for a, b in zip(lo.tolist(), hi.tolist()):
        rows = np.arange(a, b, dtype=np.int64)
        part = Vec(vec.type, vec.data[rows], None if vec.validity is None else vec.validity[rows])
        state = fn.partial(part, np.zeros(len(rows), np.int64), 1)
        want.append(fn.final(state, ret).to_column().with_type(ret).to_pylist()[0])
    if ret is DOUBLE:  # merged moments round differently from one pass: compare closely
        assert [x is None for x in got] == [x is None for x in want]
        assert [x for x in got if x is not None] == pytest.approx(
            [x for x in want if x is not None], rel=1e-12, abs=1e-12)
    else:
        assert got == want
