"""Moving tablets' files between embedded backends (ALTER TABLE t SET ("colocate_with" = ..)).

A tablet's catalog row names the one backend that holds it; the catalog commit that changes
`backend_id` is the move's single atomic switch. The steps:
1. `copy_tablets`: copy every file of each moving tablet to `data/<tablet_id>/` on its new
   backend, each file fsynced under a temporary name and renamed (storage/fileio.py), then the
   directory fsynced: the copy is durable before the catalog can point at it;
2. the caller commits the catalog change (tablets on their new backends);
3. `remove_old_copies`: delete the old backend's directory.
A crash before 2 leaves the old placement plus a copy on the new backend; a crash between 2 and
3 leaves the new placement plus the old copy. Either way the leftover is a live tablet's
directory on a backend the catalog does not place it on, which `StorageEngine.collect_garbage`
removes at the next start (it keys live tablet directories by backend and tablet).
Fault points `colocate_move_before_commit` / `colocate_move_before_cleanup` (storage/faults.py)
stop a move between the steps for crash tests.
Upstream: Doris moves replicas by clone tasks and deletes the redundant replica afterwards.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

from storage.catalog.meta import TabletMeta
from storage.engine import StorageEngine
from storage.faults import fault_point
from storage.fileio import AtomicFile, fsync_dir


def copy_files(src_root: Path, dst_root: Path, rels: Iterable[str]) -> None:
    """Durably copy files (paths relative to a backend root) from one backend to another. A
    file gone from the source but present at the destination is skipped: a move copied it and
    removed the old directory (a load's files written before the move, published after)."""
    dirs: set[Path] = set()
    for rel in rels:
        dst = dst_root / rel
        if not (src_root / rel).exists() and dst.exists():
            continue
        with open(src_root / rel, "rb") as src, AtomicFile(dst) as out:
            shutil.copyfileobj(src, out, 1 << 20)
        dirs.add(dst.parent)
    for d in dirs:
        fsync_dir(d.parent)  # the tablet directory's own entry in data/


def copy_tablets(engine: StorageEngine, moved: Sequence[tuple[TabletMeta, int]]) -> None:
    """Step 1: copy each (tablet before the move, new backend)'s files to the new backend."""
    for t, be in moved:
        src_root, dst_root = engine.backend_root(t.backend_id), engine.backend_root(be)
        src = src_root / "data" / str(t.tablet_id)
        dst = dst_root / "data" / str(t.tablet_id)
        shutil.rmtree(dst, ignore_errors=True)  # a stale copy from an earlier crashed move
        if src.is_dir():
            dst.mkdir(parents=True, exist_ok=True)
            copy_files(src_root, dst_root,
                       [f"data/{t.tablet_id}/{f.name}" for f in sorted(src.iterdir())
                        if f.is_file() and not f.name.endswith(".tmp")])
    if moved:
        fault_point("colocate_move_before_commit")


def remove_old_copies(engine: StorageEngine, moved: Sequence[tuple[TabletMeta, int]]) -> None:
    """Step 3 (after the catalog commit): drop the old backend's copy of each moved tablet."""
    if moved:
        fault_point("colocate_move_before_cleanup")
    gone = []
    for t, _ in moved:
        gone.append(engine.backend_root(t.backend_id) / "data" / str(t.tablet_id))
        shutil.rmtree(gone[-1], ignore_errors=True)
    engine.forget_segment_files(gone)  # their cached pages and metadata would only age out
