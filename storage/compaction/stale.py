"""Stale rowsets: what compaction replaced, kept until no reader can still need it.

A query fixes each partition's visible version when it is planned and reads the tablets later.
If compaction meanwhile merged rowsets up to a version above the query's, the live rowset set no
longer holds a path to that version: Doris fails such reads with E-230 VERSION_ALREADY_MERGED
(apache/doris#3860, #28082). ShaleDB keeps every rowset a compaction replaced as *stale*, with
the inputs each output was merged from, and builds the read path of an older version from them
(`StaleRowsets.capture`, Doris' `TimestampedVersionTracker` path capture).

Stale files are deleted only when both hold (`sweep`):
- they were retired longer than `tablet_rowset_stale_sweep_time_sec` ago (covers the short gap
  between planning a query and its first read), and
- every query running when they were retired has finished (`ReadEpochs`: each query holds an
  epoch token from before its first read to its end; a retire records the epoch counter).
Stale rowsets live only in memory: after a restart no reader is left, and the files no catalog
rowset references are removed by the engine's start-up garbage collection.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from storage.catalog.meta import RowsetMeta
from storage.errors import DorisError


class ReadEpochs:
    """Tokens of the reads in progress, each stamped with the epoch it started in."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._epoch = 0
        self._active: dict[int, int] = {}  # token -> epoch at enter
        self._tokens = itertools.count(1)

    def enter(self) -> int:
        with self._lock:
            token = next(self._tokens)
            self._active[token] = self._epoch
            return token

    def exit(self, token: int) -> None:
        with self._lock:
            self._active.pop(token, None)

    @contextmanager
    def reading(self) -> Iterator[None]:
        token = self.enter()
        try:
            yield
        finally:
            self.exit(token)

    def advance(self) -> int:
        """Start a new epoch; returns the one that just ended (what a retire is stamped with)."""
        with self._lock:
            self._epoch += 1
            return self._epoch - 1

    def oldest_active(self) -> int | None:
        """Epoch of the oldest read still running (None: no reads)."""
        with self._lock:
            return min(self._active.values()) if self._active else None

    @property
    def active(self) -> int:
        """Reads in progress (compaction throttles itself while there are any)."""
        return len(self._active)


@dataclass(frozen=True, slots=True)
class _Stale:
    rowset: RowsetMeta
    inputs: tuple[str, ...]  # rowset ids this rowset was merged from (stale themselves)
    root: Path  # backend storage root holding its files
    epoch: int
    retired_at: float


class StaleRowsets:
    """Rowsets replaced by compaction, per tablet, with the output -> inputs relation."""

    def __init__(self, epochs: ReadEpochs) -> None:
        self._epochs = epochs
        self._lock = threading.Lock()
        self._by_id: dict[str, _Stale] = {}
        self._inputs_of: dict[str, tuple[str, ...]] = {}  # output rowset id -> input ids
        self.swept_files = 0

    def retire(self, root: Path, inputs: Sequence[RowsetMeta], output: RowsetMeta) -> None:
        """Record that `output` replaced `inputs` (called right after the catalog swap)."""
        epoch = self._epochs.advance()
        now = time.time()
        with self._lock:
            self._inputs_of[output.rowset_id] = tuple(r.rowset_id for r in inputs)
            for r in inputs:
                self._by_id[r.rowset_id] = _Stale(r, self._inputs_of.get(r.rowset_id, ()),
                                                   root, epoch, now)

    def capture(self, tablet_id: int, live: Sequence[RowsetMeta], version: int
                ) -> list[RowsetMeta]:
        """The rowsets holding exactly versions [0, version] of a tablet: live rowsets that end
        at or below it, and for a live rowset straddling it, the stale rowsets it was merged
        from (recursively). Raises E-230 only if such a rowset was swept, which the epochs
        prevent for every query that entered before reading."""
        out: list[RowsetMeta] = []
        with self._lock:
            for r in live:
                if r.end_version <= version:
                    out.append(r)
                elif r.start_version <= version:
                    out.extend(self._expand(tablet_id, r.rowset_id, version))
        return sorted(out, key=lambda r: r.start_version)

    def _expand(self, tablet_id: int, rowset_id: str, version: int) -> list[RowsetMeta]:
        inputs = self._inputs_of.get(rowset_id)
        if inputs is None or any(i not in self._by_id for i in inputs):
            raise DorisError(
                f"[E-230]versions already merged, tablet: {tablet_id}, version: {version}. "
                "The rowsets of this version were compacted and removed; run the query again.")
        out: list[RowsetMeta] = []
        for rid in inputs:
            r = self._by_id[rid].rowset
            if r.end_version <= version:
                out.append(r)
            elif r.start_version <= version:
                out.extend(self._expand(tablet_id, rid, version))
        return out

    def sweep(self, stale_seconds: float, now: float | None = None) -> list[Path]:
        """Delete the files of stale rowsets no reader can need any more; returns them."""
        now = time.time() if now is None else now
        oldest = self._epochs.oldest_active()
        with self._lock:
            gone = [s for s in self._by_id.values()
                    if now - s.retired_at >= stale_seconds
                    and (oldest is None or s.epoch < oldest)]
            for s in gone:
                del self._by_id[s.rowset.rowset_id]
                self._inputs_of.pop(s.rowset.rowset_id, None)
        removed: list[Path] = []
        for s in gone:
            for rel in s.rowset.files:
                path = s.root / rel
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    continue
                removed.append(path)
        self.swept_files += len(removed)
        # Output ids whose inputs were all swept no longer expand; drop their entries too.
        with self._lock:
            for out_id in [o for o, ins in self._inputs_of.items()
                           if ins and all(i not in self._by_id for i in ins)]:
                del self._inputs_of[out_id]
        return removed

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_id)

    def count_for(self, tablet_id: int) -> int:
        with self._lock:
            return sum(1 for s in self._by_id.values() if s.rowset.tablet_id == tablet_id)

    def for_tablet(self, tablet_id: int) -> list[RowsetMeta]:
        """The tablet's stale rowsets in version order (the status endpoint lists them)."""
        with self._lock:
            mine = [s.rowset for s in self._by_id.values() if s.rowset.tablet_id == tablet_id]
        return sorted(mine, key=lambda r: (r.start_version, r.end_version))

    def paths_for(self, tablet_id: int) -> list[dict[str, str]]:
        """Doris' "stale version path" entries: one per compaction whose inputs are still
        kept, `{"path id", "last create time", "path list": "1-> [2-2] -> [3-3]"}`, oldest
        first."""
        with self._lock:
            groups = []
            for ids in self._inputs_of.values():
                kept = [self._by_id[i] for i in ids if i in self._by_id]
                if kept and kept[0].rowset.tablet_id == tablet_id:
                    groups.append(kept)
        groups.sort(key=lambda g: (g[0].retired_at, g[0].rowset.start_version))
        out = []
        for n, group in enumerate(groups, 1):
            versions = sorted((s.rowset.start_version, s.rowset.end_version) for s in group)
            retired = max(s.retired_at for s in group)
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(retired))
            millis = int(retired * 1000) % 1000
            zone = time.strftime("%z", time.localtime(retired))
            out.append({
                "path id": str(n),
                "last create time": f"{stamp}.{millis:03d} {zone}",
                "path list": f"{n}-> " + " -> ".join(f"[{a}-{b}]" for a, b in versions),
            })
        return out
