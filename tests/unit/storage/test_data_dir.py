"""storage/data_dir.py: stored backend roots rebase onto the dir being opened, or fail clearly;
the LOCK file admits one holder at a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.data_dir import DataDirError, DataDirLock, migrate_backend_root, old_data_dir
from storage.engine import StorageEngine


@pytest.mark.parametrize(("stored", "expected"), [
    ("be/10001", "be/10001"),                      # already relative
    ("/data/now/be/10001", "be/10001"),            # absolute, inside the dir being opened
    ("/data/then/be/10001", "be/10001"),           # absolute, the original's: rebased
    ("/data/now/disks/one", "disks/one"),          # inside the dir, any layout
])
def test_roots_rebase_onto_the_opened_dir(stored: str, expected: str) -> None:
    assert migrate_backend_root(Path("/data/now"), 10001, stored) == expected


@pytest.mark.parametrize("stored", ["/mnt/disk7", "/data/then/be/10002", "../other/be/10001", ""])
def test_roots_that_cannot_be_rebased_are_errors(stored: str) -> None:
    with pytest.raises(DataDirError, match="backend 10001's storage root"):
        migrate_backend_root(Path("/data/now"), 10001, stored)


def test_old_data_dir_of_a_legacy_root() -> None:
    assert old_data_dir("/data/then/be/7", 7) == "/data/then"
    assert old_data_dir("be/7", 7) is None
    assert old_data_dir("/mnt/x", 7) is None


def test_the_lock_admits_one_holder(tmp_path: Path) -> None:
    first = DataDirLock(tmp_path).acquire()
    with pytest.raises(DataDirError, match=r"in use by another ShaleDB server \(pid \d+ holds"):
        DataDirLock(tmp_path).acquire()
    first.release()
    DataDirLock(tmp_path).acquire().release()


def test_an_open_engine_locks_its_dir(tmp_path: Path) -> None:
    engine = StorageEngine(tmp_path, backends=1)
    try:
        with pytest.raises(DataDirError, match="in use"):
            StorageEngine(tmp_path, backends=1)
        assert [be.root_path for be in engine.catalog.backends()] == ["be/10000"]
        assert engine.backend_root(10000) == tmp_path.resolve() / "be" / "10000"
    finally:
        engine.close()
    StorageEngine(tmp_path, backends=1).close()  # closed: the dir opens again
