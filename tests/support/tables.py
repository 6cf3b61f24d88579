"""Creating Doris tables on an in-process StorageEngine from their DDL (unit tests)."""

from __future__ import annotations

from sql.ddl import ddl_ops
from sql.ddl import specs as V
from sql.ddl.create_table import analyze_create_table
from sql.parser.dialect import parse_one
from storage.catalog import service as catalog_service
from storage.catalog.meta import TableMeta
from storage.engine import StorageEngine


def create_table(engine: StorageEngine, ddl: str, name: str = "t", db: str = "db") -> TableMeta:
    """Run `ddl` (with `{name}` replaced by `name`) in database `db`, created if missing."""
    if engine.catalog.get_database(db) is None:
        catalog_service.create_database(engine, db, False)
    defn = analyze_create_table(V.describe_create_table(parse_one(ddl.replace("{name}", name))),
                                len(engine.catalog.backends()))
    ddl_ops.create_table(engine, db, defn)
    table = engine.catalog.get_table(db, name)
    assert table is not None
    return table
