"""executor/interruptible.py: slicing a per-row function call by time gives the whole-batch
result, and a cancel set while the call runs stops it before the batch ends."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from executor.compile import compile_expr
from executor.interruptible import call_in_chunks
from sql.binder.expressions import Call, ColumnRef, Literal
from sql.errors import QueryCancelled
from sql.functions import EvalEnv
from sql.functions.vector import Vec
from storage.batch import Batch, Column
from storage.types import BIGINT, DOUBLE, STRING, varchar


def _upper_slowly(calls: list[int], delay: float):  # type: ignore[no-untyped-def]
    def impl(args: list[Vec], env: EvalEnv) -> Vec:
        calls.append(env.n)
        time.sleep(delay)
        valid = args[0].validity
        return Vec(STRING, np.array([s.upper() for s in args[0].data.tolist()], object), valid)

    return impl


def test_slices_give_the_whole_batch_result() -> None:
    n = 10_000
    data = np.array([f"v{i}" for i in range(n)], object)
    valid = np.arange(n) % 7 != 0
    calls: list[int] = []
    out = call_in_chunks(_upper_slowly(calls, 0.02), [Vec(STRING, data, valid)], n,
                         threading.Event())
    assert len(calls) > 1 and sum(calls) == n  # sliced, every row once
    assert out.data.tolist() == [f"V{i}" for i in range(n)]
    assert out.validity is not None and out.validity.tolist() == valid.tolist()


def test_cheap_function_runs_in_at_most_two_calls() -> None:
    calls: list[int] = []
    n = 65_536
    call_in_chunks(_upper_slowly(calls, 0.0), [Vec(STRING, np.full(n, "a", object))], n,
                   threading.Event())
    assert len(calls) <= 3 and sum(calls) == n


def test_cancel_stops_inside_the_batch() -> None:
    cancel = threading.Event()
    calls: list[int] = []
    impl = _upper_slowly(calls, 0.01)

    def cancelling(args: list[Vec], env: EvalEnv) -> Vec:
        if len(calls) == 2:
            cancel.set()  # KILL arrives while the batch is being evaluated
        return impl(args, env)

    n = 1_000_000
    with pytest.raises(QueryCancelled):
        call_in_chunks(cancelling, [Vec(STRING, np.full(n, "a", object))], n, cancel)
    assert sum(calls) < n


def test_rand_is_not_sliced() -> None:
    """RAND(seed) draws one sequence for the whole batch: slicing would repeat it."""
    n = 5000
    batch = Batch(("k",), (Column.from_physical(BIGINT, list(range(n))),))
    expr = Call("rand", (Literal(7, BIGINT),), DOUBLE)
    got = compile_expr(expr, threading.Event())(batch).data
    assert np.array_equal(got, np.random.default_rng(7).random(n))


def test_compiled_string_function_is_interruptible() -> None:
    """A regexp_replace over one 200K-row batch (about a second of RE2 calls) stops within a
    slice of the cancel, not at the end of the batch."""
    n = 200_000
    batch = Batch(("s",), (Column.from_physical(varchar(20), ["ax" * 10] * n),))
    expr = Call("regexp_replace", (ColumnRef("s", varchar(20)), Literal("x+", varchar(2)),
                                   Literal("y", varchar(1))), STRING)
    cancel = threading.Event()
    fn = compile_expr(expr, cancel)
    timer = threading.Timer(0.05, cancel.set)
    timer.start()
    start = time.perf_counter()
    with pytest.raises(QueryCancelled):
        fn(batch)
    assert time.perf_counter() - start < 0.6
    timer.join()
