"""Running a planned query: `execute` a `PlannedQuery` (planner/query.py), evaluate INSERT
constants.

`execute` returns a `QueryResult` whose `batches` iterator does the work lazily, so the server
runs it on a worker thread and streams each batch as it is produced. The session's cancel
token is checked between batches (KILL QUERY) and awaited by SLEEP(). The memory limit, scan
parallelism, small-fragment threshold and runtime-filter switch are typed fields of the
statement's `QueryOptions` (sql/options.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

from sqlglot import exp

from executor.compile import compile_expr
from executor.coordinator import Coordinator
from executor.cpu_pool import CORES
from executor.memory import MemTracker
from executor.operator import ExecContext
from executor.scan import TabletSource
from planner.query import PlannedQuery
from sql.binder.bind_expressions import ExpressionBinder
from sql.binder.select import unknown_column
from sql.errors import DorisError
from sql.options import QueryOptions, SessionContext
from storage import clock
from storage.batch import Batch, Column
from storage.scan_stats import ScanStats
from storage.types import BOOLEAN, DataType, TypeKind


@dataclass
class QueryResult:
    names: list[str]
    types: list[DataType]
    batches: Iterator[Batch]  # lazily produced; the server encodes each batch
    profile: ScanStats = field(default_factory=ScanStats)  # filled while batches are pulled
    coordinator: Coordinator | None = None  # its fragment instances and exchanges, once running


def execute(planned: PlannedQuery, storage: TabletSource, ctx: SessionContext,
            batch_size: int = 65536) -> QueryResult:
    """Run a planned query; batches are produced lazily by the returned iterator."""
    names = list(planned.names)
    profile = ScanStats()

    result = QueryResult(names, list(planned.types), iter(()), profile)

    def run() -> Iterator[Batch]:
        options = ctx.options
        exec_ctx = ExecContext(cancel=ctx.cancel, storage=storage, batch_size=batch_size,
                               scan_stats=profile,
                               memory=MemTracker(options.exec_mem_limit, _query_id()),
                               parallelism=scan_parallelism(options))
        coordinator = Coordinator(planned.dplan, exec_ctx, _backend_ids(storage),
                                  options.runtime_filters, options.small_fragment_rows)
        result.coordinator = coordinator
        # Compaction keeps the rowsets of the planned versions while this query reads.
        with storage.reading():
            for batch in coordinator.run():
                yield batch.rename(names)

    result.batches = run()
    return result


def _backend_ids(storage: object) -> list[int]:
    catalog = getattr(storage, "catalog", None)
    backends = getattr(catalog, "backends", None)
    return [b.backend_id for b in backends()] if callable(backends) else []


def scan_parallelism(options: QueryOptions) -> int:
    """Instances per fragment and scan workers: `parallel_fragment_exec_instance_num` (Doris'
    per-BE fragment instances) capped at the cores: every query shares one CPU pool of that
    many slots (executor/cpu_pool.py), so more would only contend for the GIL."""
    return max(1, min(options.parallel_fragment_exec_instance_num, CORES))


def new_query_id() -> str:
    """A Doris-style query id: two 64-bit halves in hex (`hi-lo`)."""
    return _query_id()


def _query_id() -> str:
    """A Doris-style query id: two 64-bit halves in hex (`hi-lo`)."""
    u = uuid.uuid4().hex
    return f"{u[:16]}-{u[16:]}"


def evaluate_constant(expr_ast: exp.Expression, ctx: SessionContext,
                      target: DataType | None = None) -> tuple[object, DataType]:
    """Evaluate a constant expression (INSERT VALUES item) to (physical value, its type).

    `target` only types a bare NULL (or an expression whose type is NULL); the caller converts
    the value to the column type itself.
    """

    def no_columns(col: exp.Column) -> object:
        raise unknown_column(".".join(p.name for p in col.parts))

    now = clock.now().replace(microsecond=0)
    binder = ExpressionBinder(no_columns, ctx, now, False, "VALUES")  # type: ignore[arg-type]
    bound = binder.bind(expr_ast)
    if bound.dtype.kind is TypeKind.NULL:
        return None, target if target is not None else bound.dtype
    from sql.binder.expressions import Literal

    if isinstance(bound, Literal):
        return bound.value, bound.type
    one_row = Batch(("__dummy",), (Column.from_physical(BOOLEAN, [1]),))
    try:
        vec = compile_expr(bound, ctx.cancel)(one_row)
    except (ValueError, ArithmeticError) as e:
        raise DorisError(f"can not evaluate {expr_ast.sql()}: {e}") from None
    return vec.to_column().value_at(0), bound.dtype
