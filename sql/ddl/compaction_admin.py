"""ADMIN COMPACT TABLE: start compaction on every tablet of a table (or of one partition).

Doris 2.1: `AdminCompactTableStmt` / Nereids `AdminCompactTableCommand` check the statement,
then `Env.compactTable` sends one CompactionTask per replica of every visible materialized index
of the partition; the BEs run them in the background and the statement returns OK at once.
ShaleDB does the same through `CompactionManager.trigger` (storage/compaction).

Where ShaleDB differs, on purpose:
- Doris requires exactly one `PARTITION p` ("No partition selected for compaction"); ShaleDB
  also accepts none and then compacts every partition.
- Doris' SQL knows only BASE and CUMULATIVE (FULL exists only in the BE HTTP API); ShaleDB also
  accepts `type = 'FULL'`. The error texts keep Doris' wording ("type = 'BASE/CUMULATIVE'").
A tablet with nothing to compact, or one already compacting, is skipped silently, as a BE
skips such a CompactionTask.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from sql.errors import DorisError
from sql.parser.dialect_nodes import AdminCompact
from storage.catalog.meta import TableMeta
from storage.compaction.scheduler import KINDS
from storage.engine import StorageEngine

MISSING_TYPE = "Compaction type must be specified in Where clause like: type = 'BASE/CUMULATIVE'"
BAD_WHERE = "Where clause should looks like: type = 'BASE/CUMULATIVE'"
ONE_PARTITION = "Only support single partition for compaction"


@dataclass(frozen=True, slots=True)
class CompactRequest:
    db: str | None
    table: str
    partitions: tuple[str, ...]  # empty: every partition (ShaleDB's extension)
    kind: str  # "base" | "cumulative" | "full"


def analyze_admin_compact(stmt: AdminCompact) -> CompactRequest:
    """The checks of Doris' AdminCompactTableStmt.analyze, in its order and wording."""
    table = stmt.this
    assert isinstance(table, exp.Table)
    part = table.args.get("partition")
    partitions = tuple(e.name for e in part.expressions) if part is not None else ()
    if len(partitions) > 1:
        raise DorisError(ONE_PARTITION)
    where = stmt.args.get("where")
    if where is None:
        raise DorisError(MISSING_TYPE)
    kind = _compaction_type(where.this)
    if kind is None:
        raise DorisError(BAD_WHERE)
    return CompactRequest(table.text("db") or None, table.name, partitions, kind)


def _compaction_type(cond: exp.Expression) -> str | None:
    """`type = '<kind>'` (column name and value case-insensitive, a string literal) -> kind."""
    if not isinstance(cond, exp.EQ):
        return None
    left, right = cond.this, cond.expression
    if not isinstance(left, exp.Column) or left.table or left.name.lower() != "type":
        return None
    if not isinstance(right, exp.Literal) or not right.is_string:
        return None
    kind = right.name.lower()
    return kind if kind in KINDS else None


def compact_table(engine: StorageEngine, table: TableMeta, partitions: tuple[str, ...],
                  kind: str) -> int:
    """Trigger `kind` compaction on the tablets of every visible index of the partitions (all
    when none are named); returns how many started. Unknown partition names fail first, before
    anything starts."""
    catalog = engine.catalog
    parts = catalog.partitions(table.table_id)
    if partitions:
        by_name = {p.name.lower(): p for p in parts}
        for name in partitions:
            if name.lower() not in by_name:
                # Env.compactTable's wording (recalled; its source was not in the index).
                raise DorisError(f"partition[{name}] not exist in table[{table.name}]")
        parts = [by_name[n.lower()] for n in partitions]
    # SHADOW indexes (a rollup being built) are left alone, as Doris sends tasks to VISIBLE ones.
    indexes = [ix.index_id for ix in catalog.materialized_indexes(table.table_id)
               if ix.state == "NORMAL"]
    manager = engine.compaction
    started = 0
    for p in parts:
        for index_id in indexes:
            for tablet in catalog.tablets(table.table_id, p.partition_id, index_id):
                if manager.trigger(tablet.tablet_id, kind).started:
                    started += 1
    return started
