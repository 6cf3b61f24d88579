"""Query entry points the server calls: plan a SELECT, execute it, evaluate INSERT constants.

`plan_select` binds and plans on the caller's thread (analysis errors surface immediately);
`execute` returns a `QueryResult` whose `batches` iterator does the work lazily, so the server
runs it on a worker thread and streams each batch as it is produced. The session's cancel
token is checked between batches (KILL QUERY) and awaited by SLEEP().
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from sqlglot import exp

from executor.compile import compile_expr
from executor.memory import DEFAULT_EXEC_MEM_LIMIT, MemTracker
from executor.operator import ExecContext
from executor.scan import TabletSource
from planner.builder import build_logical
from executor.coordinator import SMALL_FRAGMENT_ROWS, Coordinator
from planner.distribute import DistributedPlan, DistributeOptions, distribute
from planner.logical import LogicalPlan
from planner.optimizer import OptimizerContext, optimize
from sql.bind_expressions import ExpressionBinder, not_supported
from sql.binder import CatalogView, bind_query, unknown_column
from sql.errors import DorisError, ShaleError
from sql.table_functions import FileFunctionResolver
from storage import clock
from storage.batch import Batch, Column
from storage.scan_stats import ScanStats
from storage.types import BOOLEAN, DataType, TypeKind


@dataclass(frozen=True)
class SessionContext:
    database: str | None  # current db (may be None)
    connection_id: int
    user: str  # e.g. "root"
    current_user: str  # e.g. "'root'@'%'"
    variables: Callable[[str], object]  # @@name lookup; raises ShaleError 1193 when unknown
    cancel: threading.Event
    # resolves `FROM local(..)` (executor/file_scan.py LocalFiles); None: no table functions
    table_functions: FileFunctionResolver | None = None


@dataclass
class QueryResult:
    names: list[str]
    types: list[DataType]
    batches: Iterator[Batch]  # lazily produced; the server encodes each batch
    profile: ScanStats = field(default_factory=ScanStats)  # filled while batches are pulled
    coordinator: Coordinator | None = None  # its fragment instances and exchanges, once running


@dataclass(frozen=True)
class PreparedQuery:
    plan: LogicalPlan
    names: tuple[str, ...]
    types: tuple[DataType, ...]
    disabled_rules: frozenset[str]
    dplan: DistributedPlan  # fragments and exchanges (planner/distribute.py)

    def explain(self) -> list[str]:
        return self.plan.explain()


def plan_select(select_ast: exp.Expression, catalog: CatalogView, ctx: SessionContext,
                sql: str | None = None,
                disabled_rules: frozenset[str] = frozenset()) -> PreparedQuery:
    """Bind and plan a SELECT. `sql` (optional) is the statement text, used for the MySQL-style
    column labels (else `select_ast.meta["sql"]`, else labels are regenerated from the AST).
    Raises ShaleError for analysis errors."""
    if isinstance(select_ast, exp.Subquery):
        select_ast = select_ast.unnest()
    if not isinstance(select_ast, (exp.Select, exp.SetOperation)):
        raise not_supported(f"statement {type(select_ast).__name__}")
    bound = bind_query(select_ast, catalog, ctx, sql=sql)
    if _bool_variable(ctx, "disable_join_reorder"):
        disabled_rules = disabled_rules | {"reorder_joins"}
    plan = optimize(build_logical(bound, catalog), OptimizerContext(disabled_rules, catalog))
    dplan = distribute(plan, catalog, distribute_options(ctx, catalog), list(bound.names))
    return PreparedQuery(plan, bound.names, bound.types, disabled_rules, dplan)


def execute(prepared: PreparedQuery, storage: TabletSource, ctx: SessionContext,
            batch_size: int = 65536) -> QueryResult:
    """Run a prepared query; batches are produced lazily by the returned iterator."""
    names = list(prepared.names)
    profile = ScanStats()

    result = QueryResult(names, list(prepared.types), iter(()), profile)

    def run() -> Iterator[Batch]:
        exec_ctx = ExecContext(cancel=ctx.cancel, storage=storage, batch_size=batch_size,
                               scan_stats=profile, memory=MemTracker(
                                   _int_variable(ctx, "exec_mem_limit", DEFAULT_EXEC_MEM_LIMIT),
                                   _query_id()),
                               parallelism=scan_parallelism(ctx))
        coordinator = Coordinator(prepared.plan, prepared.dplan, exec_ctx,
                                  _backend_ids(storage), _runtime_filters_on(ctx),
                                  _int_variable(ctx, "shaledb_small_fragment_rows",
                                                SMALL_FRAGMENT_ROWS))
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


def _int_variable(ctx: SessionContext, name: str, default: int) -> int:
    try:
        return int(ctx.variables(name))  # type: ignore[call-overload]
    except (ShaleError, KeyError, TypeError, ValueError):
        return default


def distribute_options(ctx: SessionContext, catalog: object) -> DistributeOptions:
    """The session's join-distribution switches (Doris' variable names)."""
    backends = getattr(catalog, "backends", None)
    return DistributeOptions(
        disable_colocate=_bool_variable(ctx, "disable_colocate_plan")
        or _bool_variable(ctx, "disable_colocate_join"),
        bucket_shuffle=not _variable_is_false(ctx, "enable_bucket_shuffle_join"),
        broadcast_row_limit=_int_variable(ctx, "broadcast_row_count_limit", 30_000_000),
        backends=len(backends()) if callable(backends) else 1)


def _text_variable(ctx: SessionContext, name: str) -> str | None:
    """The variable's value as lower-case text, None when the session has no such variable."""
    try:
        return str(ctx.variables(name)).lower()
    except (ShaleError, KeyError):
        return None


def _variable_is_false(ctx: SessionContext, name: str) -> bool:
    return _text_variable(ctx, name) in ("0", "false", "off")


def _bool_variable(ctx: SessionContext, name: str) -> bool:
    return _text_variable(ctx, name) in ("1", "true", "on")


def _runtime_filters_on(ctx: SessionContext) -> bool:
    return _text_variable(ctx, "runtime_filter_mode") != "off"


def scan_parallelism(ctx: SessionContext) -> int:
    """Scan worker threads: `parallel_fragment_exec_instance_num` (Doris' per-BE fragment
    instances, default 8) capped at the CPU count."""
    wanted = _int_variable(ctx, "parallel_fragment_exec_instance_num", 8)
    return max(1, min(wanted, os.cpu_count() or 1))


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
    if bound.type.kind is TypeKind.NULL:
        return None, target if target is not None else bound.type
    from sql.expressions import Literal

    if isinstance(bound, Literal):
        return bound.value, bound.type
    one_row = Batch(("__dummy",), (Column.from_physical(BOOLEAN, [1]),))
    try:
        vec = compile_expr(bound, ctx.cancel)(one_row)
    except (ValueError, ArithmeticError) as e:
        raise DorisError(f"can not evaluate {expr_ast.sql()}: {e}") from None
    return vec.to_column().value_at(0), bound.type
