"""In-process ShaleDB for planner tests: a real StorageEngine in a temporary directory and a
real StatementRunner (the same code a connection runs), so plans come from real catalogs and
tables loaded through real INSERTs. `plan(sql)` returns the optimized logical plan."""

from __future__ import annotations

from pathlib import Path

from executor.query import execute
from planner.logical import LogicalPlan, LogicalScan, walk
from planner.query import plan_select
from server.statements import RowsOutcome, StatementRunner, TextOutcome
from server.statements.runner import StatementServices
from server.variables import GlobalVariables, SessionVariables
from sql.parser.dialect import parse, parse_one
from storage.engine import StorageEngine


class InProcess:
    def __init__(self, data_dir: Path, backends: int = 3) -> None:
        self.engine = StorageEngine(data_dir, backends=backends)
        self.db: str | None = None
        self.runner = StatementRunner(
            StatementServices.for_engine(self.engine),
            SessionVariables(GlobalVariables()),
            1,
            current_db=lambda: self.db,
            set_db=self._set_db,
        )

    def _set_db(self, name: str | None) -> None:
        self.db = name

    def close(self) -> None:
        self.engine.close()

    def run(self, sql: str) -> list[tuple[object, ...]]:
        out: list[tuple[object, ...]] = []
        for stmt in parse(sql):
            self.runner.begin_statement(sql)
            res = self.runner.run(stmt)
            if isinstance(res, RowsOutcome):
                out = [r for b in res.batches for r in b.rows()]
            elif isinstance(res, TextOutcome):
                out = list(res.rows)
        return out

    def plan(self, sql: str, disabled: frozenset[str] = frozenset()) -> LogicalPlan:
        return plan_select(
            parse_one(sql), self.engine.catalog, self.runner.context(), disabled_rules=disabled
        ).plan

    def query(self, sql: str, disabled: frozenset[str] = frozenset()) -> list[tuple[object, ...]]:
        ctx = self.runner.context()
        prepared = plan_select(parse_one(sql), self.engine.catalog, ctx, disabled_rules=disabled)
        return [r for b in execute(prepared, self.engine, ctx).batches for r in b.rows()]

    def scans(self, sql: str, disabled: frozenset[str] = frozenset()) -> list[LogicalScan]:
        return [n for n in walk(self.plan(sql, disabled)) if isinstance(n, LogicalScan)]
