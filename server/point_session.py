"""A session's short-circuit point lookups (server/point_query.py): its learned templates, how
a statement text or a COM_STMT_EXECUTE reaches one, and where the lookup runs.

- Shapes: a text that is a learned one-literal text with another literal (`LiteralSlot`, a
  prefix/suffix check) skips the scanner; any other text is scanned (`statement_shape`).
- Where it runs: a template whose every tablet is answered by storage/point_lookup.py (a
  bounded amount of work: a binary search and the pages of at most MAX_LOOKUP_ROWS rows, from
  the page cache once warm) runs on the event loop, like `SELECT 1`, with no hand-off to a
  worker thread (two thread crossings cost more than the lookup). When a tablet needs a scan
  instead, the statement goes to the query pool as any other.
- Learning: the first execution of a shape is planned normally (`learn`, on the worker thread
  that runs it); the outcome (a template, or "not a lookup") is kept per shape and database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from sqlglot import expressions as exp

from server.point_query import (
    TEMPLATES_PER_SESSION,
    LiteralMismatch,
    LiteralSlot,
    PointTemplate,
    Shape,
    check_privileges,
    prepared_shape,
    statement_shape,
)
from server.point_query import learn as learn_template
from server.statements import Outcome, RowsOutcome
from server.statements.query import plan_query
from sql.errors import QueryCancelled, ShaleError
from storage.batch import Batch
from storage.scan_stats import ScanStats

if TYPE_CHECKING:
    from server.session import ShaleSession

StartRows = Callable[[RowsOutcome], Outcome]
Learn = tuple[object, Shape]  # a template to learn from a normal run: (its key, the shape)
UNKNOWN = object()  # a statement shape not seen yet in this session
SHAPE_MAX_SQL = 2048  # longer texts are not point lookups
SLOTS_PER_SESSION = 16  # one-literal texts recognised without the scanner


class PointLookups:
    """The point-lookup state and steps of one ShaleSession."""

    def __init__(self, session: ShaleSession) -> None:
        self._session = session
        # templates by (statement shape, current database); None: not a lookup
        self.templates: dict[object, PointTemplate | None] = {}
        self._slots: list[LiteralSlot] = []

    def enabled(self) -> bool:
        return bool(self._session.variables.connection_options().enable_short_circuit_query)

    def shape(self, sql: str) -> Shape | None:
        """The shape of a COM_QUERY text, None when it cannot be a point lookup."""
        if len(sql) > SHAPE_MAX_SQL or not self.enabled():
            return None
        for slot in self._slots:
            shape = slot.shape(sql)
            if shape is not None:
                return shape
        shape = statement_shape(sql)
        if shape is not None and isinstance(self.templates.get(self.key(shape)), PointTemplate):
            learned = LiteralSlot.of(sql, shape)
            if learned is not None and learned not in self._slots:
                if len(self._slots) >= SLOTS_PER_SESSION:
                    self._slots.pop(0)
                self._slots.append(learned)
        return shape

    def prepared_shape(self, sql: str, params: list[object]) -> Shape | None:
        if len(sql) > SHAPE_MAX_SQL or not self.enabled():
            return None
        return prepared_shape(sql, params)

    def key(self, shape: Shape) -> object:
        return (shape.key, self._session.database)

    def template(self, key: object) -> object:
        """The template of `key`, None (not a lookup) or UNKNOWN (not learned yet)."""
        return self.templates.get(key, UNKNOWN)

    async def run(self, key: object, template: PointTemplate, shape: Shape,
                  start_rows: StartRows | None) -> Outcome | None:
        """A learned lookup: on the event loop when storage answers it as a lookup, else on the
        statement's worker thread. None: the normal path answers instead (the template is
        stale, or a literal does not fit the column's type)."""
        session = self._session
        runner = session.runner
        assert runner is not None
        values = self._checked_values(key, template, shape)
        if values is None:
            return None
        engine = session.services.engine
        stats = ScanStats()
        runner.scan_stats = stats
        with engine.reading():  # compaction keeps the versions read
            found = template.lookup(engine, values, stats)
        if found is not None:
            outcome = session.client_rows(
                RowsOutcome(list(template.names), list(template.types), iter(found)))
            return start_rows(outcome) if start_rows is not None else outcome
        return await session.in_worker(self._scan, template, values, stats, start_rows)

    def _checked_values(self, key: object, template: PointTemplate, shape: Shape
                        ) -> list[object] | None:
        """The literals as column values once the template is known to still apply and the
        statement is allowed (raises the normal path's access error)."""
        session = self._session
        runner = session.runner
        assert runner is not None
        if not template.still_valid(session.services.engine.catalog, runner.options()):
            self.templates.pop(key, None)  # re-learned from the next normal run
            return None
        values = template.values(shape)
        if values is None:
            return None
        check_privileges(template, runner.access, session.database)
        runner.last_warnings = []  # as StatementRunner.run does for every other statement
        return values

    def _scan(self, template: PointTemplate, values: list[object], stats: ScanStats,
              start_rows: StartRows | None) -> Outcome:
        """The template's rows by tablet scans (worker thread): a key range too wide for a
        lookup (storage/point_lookup.py MAX_LOOKUP_ROWS)."""
        runner = self._session.runner
        assert runner is not None
        engine = self._session.services.engine
        cancel = runner.cancel

        def batches() -> Iterator[Batch]:
            with engine.reading():
                for batch in template.read(engine, values, stats):
                    if cancel.is_set():
                        raise QueryCancelled()
                    yield batch

        outcome = self._session.client_rows(
            RowsOutcome(list(template.names), list(template.types), batches()))
        return start_rows(outcome) if start_rows is not None else outcome

    def learn(self, learn: Learn, stmt: exp.Expression) -> None:
        """Remember whether the shape just planned is a point lookup (worker thread)."""
        key, shape = learn
        session = self._session
        runner = session.runner
        assert runner is not None
        template = None
        try:
            planned = plan_query(runner, stmt.copy())
            template = learn_template(stmt, shape, planned, session.services.engine.catalog,
                                      session.database, runner.options())
        except ShaleError:
            template = None
        except LiteralMismatch:
            return  # these literals do not fit the columns: learn from another execution
        if len(self.templates) >= TEMPLATES_PER_SESSION:
            self.templates.clear()
            self._slots.clear()
        self.templates[key] = template


def counted(session: Any) -> None:
    """A statement the fast path answered, in the server's counters."""
    stats = session.services.stats
    stats.queries_total += 1
    stats.point_query_fast_path_total += 1
