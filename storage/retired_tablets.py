"""Retired tablets: tablets a partition DDL removed from the catalog (REPLACE PARTITION .. WITH
TEMPORARY PARTITION, DROP [TEMPORARY] PARTITION, TRUNCATE, the dynamic partition scheduler's
drops), kept readable until no query that could have planned them is running.

A query fixes its partitions' versions and tablets when it is planned and lists each tablet's
rowsets when it reads (StorageEngine.rowsets_at). Once REPLACE commits, the old tablets have no
rowsets in the catalog: without this registry a query planned before the swap would read them
as empty. The registry keeps their rowsets (and files) under the same rule as compaction's stale
rowsets (storage/compaction/stale.py): gone only when retired longer than the stale sweep time
and every query running at the retire has finished. After a restart no reader is left; the
start-up garbage collection deletes the directories no catalog tablet owns.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storage.catalog.meta import RowsetMeta, TabletMeta
from storage.compaction.stale import ReadEpochs


def retire_on_commit(engine: Any, tablets: Sequence[TabletMeta]) -> Callable[[], None]:
    """For a commit that removes `tablets` (DROP / TRUNCATE PARTITION, REPLACE, the dynamic
    partition scheduler's drops): capture their rowsets and directories now, under the catalog
    lock before the commit, and return the `on_durable` callback that retires them, so a query
    planned before the commit keeps reading them and their files go with `sweep`."""
    rowsets = {t.tablet_id: engine.catalog.rowsets(t.tablet_id) for t in tablets}
    dirs = {t.tablet_id: engine.backend_root(t.backend_id) / "data" / str(t.tablet_id)
            for t in tablets}
    return lambda: engine.retired_tablets.retire(rowsets, dirs)


@dataclass(frozen=True, slots=True)
class _Retired:
    rowsets: tuple[RowsetMeta, ...]
    directory: Path
    epoch: int
    retired_at: float


class RetiredTablets:
    def __init__(self, epochs: ReadEpochs) -> None:
        self._epochs = epochs
        self._lock = threading.Lock()
        self._by_tablet: dict[int, _Retired] = {}

    def retire(self, rowsets: Mapping[int, Sequence[RowsetMeta]],
               directories: Mapping[int, Path]) -> None:
        """Record tablets leaving the catalog with their rowsets (call before the swap is
        visible: Catalog.commit's on_durable)."""
        epoch = self._epochs.advance()
        now = time.time()
        with self._lock:
            for tablet_id, directory in directories.items():
                self._by_tablet[tablet_id] = _Retired(
                    tuple(rowsets.get(tablet_id, ())), directory, epoch, now)

    def rowsets_at(self, tablet_id: int, version: int) -> list[RowsetMeta] | None:
        """The retired tablet's rowsets up to `version` (None: not a retired tablet)."""
        with self._lock:
            entry = self._by_tablet.get(tablet_id)
        if entry is None:
            return None
        return [r for r in entry.rowsets if r.end_version <= version]

    def sweep(self, stale_seconds: float, now: float | None = None) -> list[Path]:
        """Delete the directories of retired tablets no reader can need any more."""
        now = time.time() if now is None else now
        oldest = self._epochs.oldest_active()
        with self._lock:
            gone = [t for t, e in self._by_tablet.items()
                    if now - e.retired_at >= stale_seconds and (oldest is None or e.epoch < oldest)]
            dirs = [self._by_tablet.pop(t).directory for t in gone]
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
        return dirs

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_tablet)
