"""StorageEngine: data directories, embedded backends, tablet reads and file garbage collection.

`<data_dir>/fe/catalog.db` is the catalog; `<data_dir>/be/<backend_id>/` is each embedded
backend's storage root holding `data/<tablet_id>/<rowset>_<n>.seg`. The engine implements the
executor's `TabletSource` (`read_tablet`) and creates tablets on backends. At start it locks the
data dir (`<data_dir>/LOCK`), rebases stored backend roots onto it (storage/data_dir.py: every
stored path is relative, so a copied dir is its own) and removes files no published rowset
references (loads that crashed before publish), so a failed load never leaves data behind.

The engine owns its services as fields, created in its constructor and stopped by `close()`
(tests and tools open several engines in one process, so none of them is a module global):
`txns` (the running load transactions), `group_commit` (the open group-commit groups),
`compaction` (the compaction manager; its producer thread starts only when the server calls
`compaction.start()`), `rollup_jobs` and `index_jobs` (the asynchronous ALTER jobs), and
`page_cache` (decoded pages of its query reads; the server sizes it from
`storage_page_cache_limit`). The segment metadata cache stays process-wide: it is keyed by file,
and no two engines share a data dir.
Upstream: Doris BE `StorageEngine`, `DataDir`, `TabletManager`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from storage import stored_bounds
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
from storage.data_dir import (
    DataDirError,
    DataDirLock,
    backend_root_name,
    migrate_backend_root,
    old_data_dir,
)
from storage.page_cache import PageCache, default_capacity
from storage.reader import ReadOptions, TabletReader
from storage.retired_tablets import RetiredTablets
from storage.segment.meta_cache import SEGMENT_META_CACHE

if TYPE_CHECKING:
    from storage.compaction.scheduler import CompactionManager
    from storage.group_commit import GroupCommitter
    from storage.index_job import IndexJobs
    from storage.rollup_job import RollupJobs
    from storage.scan_stats import ScanStats
    from storage.txn import RunningTxns


class StorageEngine:
    def __init__(self, data_dir: Path, backends: int = 3, host: str = "127.0.0.1",
                 compaction: CompactionConfig | None = None) -> None:
        self.data_dir = Path(data_dir).resolve()
        # conf/shaledb.toml [compaction] and [load]: what loads (memtable sizes) and compaction
        # read; the engine only carries it to them.
        self.compaction_config = compaction or CompactionConfig()
        # Before anything reads or writes the dir: a second server here would run its start-up
        # clean-up under the first one's running loads.
        self._lock = DataDirLock(self.data_dir).acquire()
        self.closed = False
        # decoded pages of this engine's query reads (before the start-up GC, which forgets)
        self.page_cache = PageCache(default_capacity())
        try:
            self.catalog = Catalog(self.data_dir / "fe" / "catalog.db")
            # the MV rewrite's zone-map proofs (given to the planner through the session)
            self.stored_bounds = stored_bounds.StoredBounds(self.catalog, self.data_dir)
            # Reads in progress and the rowsets compaction replaced (storage/compaction/stale.py).
            self.read_epochs = ReadEpochs()
            self.stale_rowsets = StaleRowsets(self.read_epochs)
            # tablets REPLACE PARTITION swapped out, readable by queries planned before
            self.retired_tablets = RetiredTablets(self.read_epochs)
            self._roots: dict[int, Path] = {}
            try:
                self._ensure_backends(backends, host)
                self.collect_garbage()
                self._start_services()
            except BaseException:
                self.catalog.close()
                raise
        except BaseException:
            self._lock.release()
            raise

    def _start_services(self) -> None:
        # Imported here: these modules import this one (for the StorageEngine they are handed).
        from storage.compaction.scheduler import CompactionManager
        from storage.group_commit import GroupCommitter
        from storage.index_job import IndexJobs
        from storage.rollup_job import RollupJobs
        from storage.txn import RunningTxns

        self.txns: RunningTxns = RunningTxns(self.catalog)
        self.group_commit: GroupCommitter = GroupCommitter()
        self.compaction: CompactionManager = CompactionManager(self)
        self.rollup_jobs: RollupJobs = RollupJobs(self)
        self.index_jobs: IndexJobs = IndexJobs(self)

    def close(self) -> None:
        """Stop the services (the open group-commit groups are written first, while the
        catalog is still open; ALTER job threads stop where they are, and the next start
        resumes them; the cached pages are dropped), then close the catalog and release the
        data dir. Idempotent."""
        if self.closed:
            return
        self.closed = True
        try:
            self.group_commit.close()
            self.rollup_jobs.stop()
            self.index_jobs.stop()
            self.compaction.stop()
            self.page_cache.clear()
        finally:
            self.catalog.close()
            self._lock.release()

    def reading(self) -> AbstractContextManager[None]:
        """Held by a query from before its first tablet read to its end: rowsets compaction
        replaces meanwhile keep their files (storage/compaction/stale.py)."""
        return self.read_epochs.reading()

    # ---- backends ---------------------------------------------------------------------------
    def _ensure_backends(self, count: int, host: str) -> None:
        self._migrate_backend_roots()
        existing = self.catalog.backends()
        missing = count - len(existing)
        if missing > 0:
            mutation = Mutation()
            for be_id in self.catalog.next_ids(missing):
                rel = backend_root_name(be_id)
                (self.data_dir / rel).mkdir(parents=True, exist_ok=True)
                mutation.put(Backend(backend_id=be_id, host=host, root_path=rel))
            self.catalog.commit(mutation)
        holding = {t.backend_id for t in self.catalog.all_tablets()}
        for be in self.catalog.backends():
            root = self.data_dir / be.root_path
            if not root.is_dir() and be.backend_id in holding:
                raise DataDirError(
                    f"backend {be.backend_id}'s storage root {root} is missing, but the catalog "
                    f"places tablets on it; was {self.data_dir} copied whole?")
            root.mkdir(parents=True, exist_ok=True)
            self._roots[be.backend_id] = root

    def _migrate_backend_roots(self) -> None:
        """Store every backend root relative to the data dir (catalogs written before roots were
        relative hold absolute ones, a copied dir the original's: storage/data_dir.py)."""
        backends = self.catalog.backends()
        olds = {old for be in backends
                if (old := old_data_dir(be.root_path, be.backend_id)) is not None
                and not Path(be.root_path).is_relative_to(self.data_dir)}
        if len(olds) > 1:
            raise DataDirError(
                f"the catalog of {self.data_dir} places backends under several old data dirs "
                f"({', '.join(sorted(olds))}), so they cannot be rebased onto this one; refusing "
                "to open it (nothing was changed or deleted)")
        mutation = Mutation()
        for be in backends:
            rel = migrate_backend_root(self.data_dir, be.backend_id, be.root_path)
            if rel != be.root_path:
                mutation.put(replace(be, root_path=rel))
        if mutation.puts:
            self.catalog.commit(mutation)

    def backend_root(self, backend_id: int) -> Path:
        root = self._roots.get(backend_id)
        if root is None:  # a backend added after start (none are today)
            root = self._roots[backend_id] = (
                self.data_dir / self.catalog.backend(backend_id).root_path)
        return root

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
        return iter(TabletReader(root, table, index, rowsets, options, stats,
                                 page_cache=self.page_cache))

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
        if not live and self.catalog.tablet_by_id(tablet_id) is None:
            retired = self.retired_tablets.rowsets_at(tablet_id, version)
            if retired is not None:
                return retired
        if all(r.end_version <= version or r.start_version > version for r in live):
            return [r for r in live if r.end_version <= version]
        return self.stale_rowsets.capture(tablet_id, live, version)

    # ---- files ------------------------------------------------------------------------------
    def remove_tablet_files(self, tablets: Iterable[TabletMeta]) -> None:
        gone: list[Path] = []
        for t in tablets:
            gone.append(self.backend_root(t.backend_id) / "data" / str(t.tablet_id))
            shutil.rmtree(gone[-1], ignore_errors=True)
        self.forget_segment_files(gone)  # their cached pages and metadata would only age out

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
        for txn in self.catalog.precommitted_txns():  # two-phase loads awaiting their commit
            for pending in txn.pending:  # kept where written (the publish follows a move)
                referenced.update(pending.rowset.files)
                if self.catalog.tablet_by_id(pending.rowset.tablet_id) is not None:
                    live_tablets.setdefault(pending.backend_id, set()).add(
                        str(pending.rowset.tablet_id))
        gone: list[Path] = []
        for be in self.catalog.backends():
            data = self.backend_root(be.backend_id) / "data"
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
        self.forget_segment_files(gone)  # their cached pages and metadata would only age out
        return len(gone)

    def forget_segment_files(self, paths: Iterable[str | os.PathLike[str]]) -> None:
        """Forget deleted segment files (or directories of them) in the page cache and the
        segment metadata cache: what every code path that deletes segment files calls."""
        gone = list(paths)
        self.page_cache.forget_files(gone)
        SEGMENT_META_CACHE.forget_files(gone)
