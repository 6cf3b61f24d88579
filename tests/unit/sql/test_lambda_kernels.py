"""The vectorised array forms behind the lambda functions (sql/functions/lambdas.py) and the
batched cell decode / encode of sql/functions/nested.py against their per-row references."""

from __future__ import annotations

import random

import numpy as np
import pytest

from sql.functions import EvalEnv, scalar_function
from sql.functions.lambdas import array_count, array_first_index, array_last_index
from sql.functions.nested import nested_out, trees
from sql.functions.vector import Vec, object_array
from storage import nested
from storage.types import BOOLEAN, DOUBLE, INT, STRING, array_of


def _rows(seed: int, n: int, make) -> list:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        roll = rng.random()
        out.append(None if roll < 0.1 else [] if roll < 0.2 else
                   [None if rng.random() < 0.2 else make(rng) for _ in range(rng.randint(1, 9))])
    return out


@pytest.mark.parametrize("seed", range(5))
def test_flag_functions_match_python_reference(seed: int) -> None:
    rows = _rows(seed, 300, lambda r: r.randint(-2, 2))
    v = nested_out(array_of(INT), rows)
    env = EvalEnv(len(rows))
    for name, ref in (("array_count", array_count), ("array_first_index", array_first_index),
                      ("array_last_index", array_last_index)):
        got = scalar_function(name).impl([v], env)
        assert got.validity is None
        assert got.data.tolist() == [ref(r) for r in rows], name


@pytest.mark.parametrize("t,make", [
    (array_of(INT), lambda r: r.randint(-10**6, 10**6)),
    (array_of(DOUBLE), lambda r: r.choice([r.random(), float("nan"), float("inf"), -0.0])),
    (array_of(STRING), lambda r: r.choice(["", "a,b", 'q"uote', "é", "[1]", "\\"])),
    (array_of(array_of(BOOLEAN)), lambda r: [r.randint(0, 1), None]),
])
def test_batched_cells_match_per_cell_codec(t, make) -> None:
    rows = _rows(7, 400, make)
    v = nested_out(t, rows)
    per_cell = [b"" if x is None else nested.dump(x) for x in rows]
    assert v.data.tolist() == per_cell
    back = trees(v)
    want = [None if x is None else nested.load(nested.dump(x)) for x in rows]
    assert repr(back) == repr(want)  # NaN-safe comparison


def test_trees_falls_back_on_non_canonical_cells() -> None:
    v = Vec(array_of(INT), object_array([b"[1]", b"", b"[2,3]"]), np.array([True, False, True]))
    assert trees(v) == [[1], None, [2, 3]]
