"""Function registry: scalar and aggregate functions by lower-case name.

Each entry pairs a type rule (argument coercion + return type, used by the binder) with a numpy
implementation over `Vec`s (used by the executor's expression compiler and, for aggregates, by
the hash aggregate operator). Keeping both in one place means a function is added in exactly one
module: `scalar.py` / `strings.py` / `mathematics.py` (scalars), `temporal.py` / `datetimes.py`
(dates), `aggregate.py` / `statistics.py` / `collect.py` / `pairs.py` / `percentile.py` /
`bitmap_hll.py` (aggregates).
Upstream: Doris `FunctionSet` / Nereids `BuiltinScalarFunctions`, DuckDB `BuiltinFunctions`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from sql.errors import DorisError
from sql.functions.vector import Vec
from storage.types import DataType


@dataclass(frozen=True, slots=True)
class EvalEnv:
    """What an implementation may need besides its arguments: the row count and the query's
    cancel token (SLEEP waits on it so KILL QUERY interrupts)."""

    n: int
    cancel: threading.Event | None = None


# Type rule: argument types -> (per-argument target types, None = keep as is; return type).
Signature = Callable[[list[DataType]], tuple[list[DataType | None], DataType]]
ScalarImpl = Callable[[list[Vec], EvalEnv], Vec]


@dataclass(frozen=True, slots=True)
class ScalarFunction:
    """A scalar function. With `propagate_nulls` the result is NULL wherever any argument is
    NULL (the compiler combines the masks; `impl` may add NULLs of its own, e.g. sqrt(-1))."""

    name: str
    min_args: int
    max_args: int  # -1 = variadic
    signature: Signature
    impl: ScalarImpl
    propagate_nulls: bool = True
    # constant-argument positions: the binder requires literals there (e.g. ROUND's digits)
    literal_args: tuple[int, ...] = ()
    # each row's value depends on that row only, so the executor may evaluate a batch in
    # slices (executor/interruptible.py); RAND's seeded sequence spans the whole batch
    row_independent: bool = True


# Aggregate state: a tuple of arrays with one entry per group.
State = tuple[np.ndarray, ...]
# (argument or None for count(*), group codes, group count) -> state
PartialFn = Callable[[Vec | None, np.ndarray, int], State]
# (concatenated states, group codes of the state rows, group count) -> state
MergeFn = Callable[[State, np.ndarray, int], State]


@dataclass(frozen=True, slots=True)
class AggregateFunction:
    """An aggregate split into partial -> merge -> final so operators can pre-aggregate each
    batch and combine partial states (Doris/DuckDB two-phase aggregation)."""

    name: str
    arg_types: Callable[[list[DataType]], list[DataType]]
    return_type: Callable[[list[DataType]], DataType]
    partial: PartialFn
    merge: MergeFn
    # (state, result type) -> result
    final: Callable[[State, DataType], Vec]
    # state for groups that saw no rows at all (global aggregate over empty input)
    empty: Callable[[int, DataType], State] | None = None
    # constant arguments after the first (e.g. GROUP_CONCAT's separator) -> the function
    # specialised for them; the executor calls it with the literal values
    bind: Callable[[tuple[object, ...]], AggregateFunction] | None = None
    # leading non-constant arguments (-1: all of them, e.g. RETENTION). With more than one the
    # binder packs them into one STRUCT argument (`struct(a, b)`), so the executor still
    # compiles one argument: `arg_types` / `return_type` see the unpacked column types and
    # `partial` decodes the struct cells (sql/functions/pairs.py)
    columns: int = 1


SCALAR: dict[str, ScalarFunction] = {}
AGGREGATES: dict[str, AggregateFunction] = {}


def register_scalar(fn: ScalarFunction, *aliases: str) -> None:
    for name in (fn.name, *aliases):
        SCALAR[name] = fn


def register_aggregate(fn: AggregateFunction, *aliases: str) -> None:
    for name in (fn.name, *aliases):
        AGGREGATES[name] = fn


def scalar_function(name: str) -> ScalarFunction:
    fn = SCALAR.get(name.lower())
    if fn is None:
        raise DorisError(f"Can not found function '{name.upper()}'")
    return fn


def aggregate_function(name: str) -> AggregateFunction | None:
    return AGGREGATES.get(name.lower())


def is_aggregate(name: str) -> bool:
    return aggregate_function(name) is not None


def check_arity(fn: ScalarFunction, args: Sequence[object]) -> None:
    n = len(args)
    if n < fn.min_args or (fn.max_args >= 0 and n > fn.max_args):
        raise DorisError(
            f"Can not found function '{fn.name.upper()}' which has {n} arity. "
            f"Candidate functions are: [{fn.name.upper()}]"
        )


# Registration happens when these modules are imported; they import the names above, so the
# import must come last (a deliberate, acyclic-at-runtime bottom import).
from sql.functions import aggregate as _aggregate  # noqa: E402,F401
from sql.functions import arrays as _arrays  # noqa: E402,F401
from sql.functions import bitmap_hll as _bitmap_hll  # noqa: E402,F401
from sql.functions import collect as _collect  # noqa: E402,F401
from sql.functions import datetimes as _datetimes  # noqa: E402,F401
from sql.functions import hashes as _hashes  # noqa: E402,F401
from sql.functions import histogram as _histogram  # noqa: E402,F401
from sql.functions import json_text as _json_text  # noqa: E402,F401
from sql.functions import lambdas as _lambdas  # noqa: E402,F401
from sql.functions import mathematics as _mathematics  # noqa: E402,F401
from sql.functions import misc_scalars as _misc_scalars  # noqa: E402,F401
from sql.functions import nested as _nested  # noqa: E402,F401
from sql.functions import pairs as _pairs  # noqa: E402,F401
from sql.functions import percentile as _percentile  # noqa: E402,F401
from sql.functions import scalar as _scalar  # noqa: E402,F401
from sql.functions import statistics as _statistics  # noqa: E402,F401
from sql.functions import strings as _strings  # noqa: E402,F401
from sql.functions import temporal as _temporal  # noqa: E402,F401
