"""StorageEngine: data directories, embedded backends, tablet reads and file garbage collection.

`<data_dir>/fe/catalog.db` is the catalog; `<data_dir>/be/<backend_id>/` is each embedded
backend's storage root holding `data/<tablet_id>/<rowset>_<n>.seg`. The engine implements the
executor's `TabletSource` (`read_tablet`) and creates tablets on backends. At start it removes
files no published rowset references (loads that crashed before publish), so a failed load
never leaves data behind. Upstream: Doris BE `StorageEngine`, `DataDir`, `TabletManager`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from storage.batch import Batch
from storage.catalog.catalog import Catalog
from storage.catalog.meta import (
    Backend,
    MaterializedIndexMeta,
    RowsetMeta,
    TableMeta,
    TabletMeta,
)
from storage.catalog.repository import Mutation
from storage.compaction.config import CompactionConfig
from storage.compaction.stale import ReadEpochs, StaleRowsets
from storage.reader import ReadOptions, TabletReader
from storage.segment.meta_cache import forget_segment_files

if TYPE_CHECKING:
    from storage.scan_stats import ScanStats


class StorageEngine:
    def __init__(self, data_dir: Path, backends: int = 3, host: str = "127.0.0.1",
                 compaction: CompactionConfig | None = None) -> None:
        self.data_dir = Path(data_dir).resolve()
        # conf/shaledb.toml [compaction] and [load]: what loads (memtable sizes) and compaction
        # read; the engine only carries it to them.
        self.compaction_config = compaction or CompactionConfig()
        self.catalog = Catalog(self.data_dir / "fe" / "catalog.db")
        # Reads in progress and the rowsets compaction replaced (storage/compaction/stale.py).
        self.read_epochs = ReadEpochs()
        self.stale_rowsets = StaleRowsets(self.read_epochs)
        self._ensure_backends(backends, host)
        self.collect_garbage()

    def close(self) -> None:
        from storage.compaction.scheduler import CompactionManager  # noqa: PLC0415

        CompactionManager.stop_for(self)
        self.catalog.close()

    def reading(self) -> AbstractContextManager[None]:
        """Held by a query from before its first tablet read to its end: rowsets compaction
        replaces meanwhile keep their files (storage/compaction/stale.py)."""
        return self.read_epochs.reading()

    # ---- backends ---------------------------------------------------------------------------
    def _ensure_backends(self, count: int, host: str) -> None:
        existing = self.catalog.backends()
        missing = count - len(existing)
        if missing > 0:
            mutation = Mutation()
            for be_id in self.catalog.next_ids(missing):
                root = self.data_dir / "be" / str(be_id)
                root.mkdir(parents=True, exist_ok=True)
                mutation.put(Backend(backend_id=be_id, host=host, root_path=str(root)))
            self.catalog.commit(mutation)
        for be in self.catalog.backends():
            Path(be.root_path).mkdir(parents=True, exist_ok=True)

    def backend_root(self, backend_id: int) -> Path:
        return Path(self.catalog.backend(backend_id).root_path)

    def pick_backends(self, count: int) -> list[int]:
        """Backends for `count` new tablets, spread round-robin starting at the least loaded."""
        load: dict[int, int] = {be.backend_id: 0 for be in self.catalog.backends() if be.alive}
        for t in self.catalog.all_tablets():
            if t.backend_id in load:
                load[t.backend_id] += 1
        chosen = []
        for _ in range(count):
            be_id = min(load, key=lambda b: (load[b], b))
            load[be_id] += 1
            chosen.append(be_id)
        return chosen

    # ---- reads ------------------------------------------------------------------------------
    def read_tablet(self, tablet: TabletMeta, version: int, options: ReadOptions,
                    stats: ScanStats | None = None) -> Iterator[Batch]:
        """Rows of one tablet at `version`, merged per the table's data model."""
        found = self.table_and_index(tablet)
        if found is None:
            return iter(())
        table, index = found
        rowsets = self.rowsets_at(tablet.tablet_id, version)
        root = self.backend_root(tablet.backend_id)
        return iter(TabletReader(root, table, index, rowsets, options, stats))

    def table_and_index(self, tablet: TabletMeta
                        ) -> tuple[TableMeta, MaterializedIndexMeta] | None:
        """The table and materialized index a tablet belongs to (None once dropped)."""
        table = self.catalog.table_by_id(tablet.table_id)
        if table is None:
            return None
        index = next((i for i in self.catalog.materialized_indexes(table.table_id)
                      if i.index_id == tablet.index_id), None)
        return None if index is None else (table, index)

    def rowsets_at(self, tablet_id: int, version: int) -> list[RowsetMeta]:
        """The rowsets holding versions [0, version] of a tablet, also when compaction has
        since merged some of them into a rowset reaching above `version`."""
        live = self.catalog.rowsets(tablet_id)
        if all(r.end_version <= version or r.start_version > version for r in live):
            return [r for r in live if r.end_version <= version]
        return self.stale_rowsets.capture(tablet_id, live, version)

    # ---- files ------------------------------------------------------------------------------
    def remove_tablet_files(self, tablets: Iterable[TabletMeta]) -> None:
        gone: list[Path] = []
        for t in tablets:
            gone.append(self.backend_root(t.backend_id) / "data" / str(t.tablet_id))
            shutil.rmtree(gone[-1], ignore_errors=True)
        forget_segment_files(gone)  # their cached pages and metadata would only age out

    def collect_garbage(self) -> int:
        """Delete segment files and tablet dirs that no published rowset references.

        A tablet directory is live only on the backend the catalog places the tablet on: a copy
        on another backend is what a colocate move (storage/tablet_move.py) left behind when the
        process died before the catalog switched (the new copy) or before cleanup (the old)."""
        referenced: set[str] = set()
        for rs in self.catalog.all_rowsets():
            referenced.update(rs.files)
        live_tablets: dict[int, set[str]] = {}
        for t in self.catalog.all_tablets():
            live_tablets.setdefault(t.backend_id, set()).add(str(t.tablet_id))
        gone: list[Path] = []
        for be in self.catalog.backends():
            data = Path(be.root_path) / "data"
            if not data.is_dir():
                continue
            live_here = live_tablets.get(be.backend_id, set())
            for tablet_dir in data.iterdir():
                if tablet_dir.name not in live_here:
                    shutil.rmtree(tablet_dir, ignore_errors=True)
                    gone.append(tablet_dir)
                    continue
                for f in tablet_dir.iterdir():
                    rel = f"data/{tablet_dir.name}/{f.name}"
                    if rel not in referenced:
                        os.unlink(f)
                        gone.append(f)
        forget_segment_files(gone)  # their cached pages and metadata would only age out
        return len(gone)
