"""`CatalogView`: the read-only catalog surface the SQL layers need.

`storage.catalog.Catalog` implements it; the binder, SHOW / information_schema and the DDL
analysis take a `CatalogView` so they can be handed a read-only stand-in, and so none of them
reaches for the catalog's write side (that is `storage.catalog.service`).
"""

from __future__ import annotations

from typing import Protocol

from storage.catalog.meta import (
    DatabaseMeta,
    MaterializedIndexMeta,
    PartitionMeta,
    RowsetMeta,
    TableMeta,
    TabletMeta,
)


class CatalogView(Protocol):
    """The read-only catalog surface the SQL layers need (storage.catalog.Catalog has it)."""

    def get_database(self, name: str) -> DatabaseMeta | None: ...
    def list_databases(self) -> list[DatabaseMeta]: ...
    def get_table(self, db: str, name: str) -> TableMeta | None: ...
    def list_tables(self, db: str) -> list[TableMeta]: ...
    def partitions(self, table_id: int, temporary: bool = False) -> list[PartitionMeta]: ...
    def materialized_indexes(self, table_id: int) -> list[MaterializedIndexMeta]: ...
    def tablets(self, table_id: int, partition_id: int | None = None,
                index_id: int | None = None) -> list[TabletMeta]: ...
    def rowsets(self, tablet_id: int, max_version: int | None = None) -> list[RowsetMeta]: ...
