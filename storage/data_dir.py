"""A data directory that is its own: the exclusive lock and the paths stored in the catalog.

Two rules make `<data_dir>` a self-contained unit that can be copied (`cp -a` while the server
is stopped) into a working, independent copy:

- **Every stored path is relative to the data dir.** The catalog stores each backend's storage
  root as `be/<backend_id>` and each rowset's files relative to that root, so a copy's catalog
  names the copy's files. Catalogs written before this rule hold absolute roots
  (`/old/place/be/10001`); a copy of such a dir carries the *original's* absolute paths, and
  the start-up garbage collection once ran on the original's files through them. Such a root
  is read as relative to the old data dir it names (`<old root>/be/<id>`) and rebased onto the
  dir being opened (`migrate_backend_root`); a root that cannot be rebased is an error, never
  a path anything deletes under.
- **One server per data dir.** `DataDirLock` holds an exclusive `flock` on `<data_dir>/LOCK`
  (which records the holder's pid) for as long as the engine is open; a second server on the
  same dir stops at once with a message naming the holder. The kernel drops the lock when the
  process dies, so a kill -9 never leaves a stale lock behind.

Upstream: Doris BE refuses a storage root another BE has claimed (`DataDir::_init_cluster_id`)
and its start scripts refuse a second process (`pid file ... Stop it first`).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path, PurePosixPath

LOCK_FILE = "LOCK"


class DataDirError(OSError):
    """The data dir cannot be opened: in use by another server, or its catalog names paths
    outside it. The message says which and what to do."""


class DataDirLock:
    """An exclusive lock on a data dir, held from `acquire` until `release` (or process exit)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> DataDirLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            who = f"pid {holder}" if holder else "another process"
            raise DataDirError(
                f"data dir {self.path.parent} is in use by another ShaleDB server ({who} holds "
                f"{self.path}); stop that server first or start this one with another "
                "--data-dir") from None
        except BaseException:
            os.close(fd)
            raise
        # The pid is for people (and the message above); the flock is what excludes.
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        os.fsync(fd)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        # The file stays: removing it would race with a server that opened it meanwhile.
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    @property
    def held(self) -> bool:
        return self._fd is not None


def _read_pid(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return text if text.isdigit() else ""


def backend_root_name(backend_id: int) -> str:
    """The stored (relative) storage root of embedded backend `backend_id`."""
    return f"be/{backend_id}"


def migrate_backend_root(data_dir: Path, backend_id: int, stored: str) -> str:
    """The relative form of a backend's stored root, for a catalog opened in `data_dir`.

    A relative root must stay inside the data dir. An absolute one is from a catalog written
    before roots were relative: inside `data_dir` it becomes relative to it; elsewhere (the
    catalog was copied with its dir) it must end in `be/<backend_id>`, the layout the engine
    always created, and is rebased onto `data_dir`. Anything else raises DataDirError."""
    path = PurePosixPath(stored)
    if not path.is_absolute():
        if ".." in path.parts or not path.parts:
            raise DataDirError(
                f"backend {backend_id}'s storage root {stored!r} in the catalog of {data_dir} "
                "does not lie inside the data dir; refusing to open it")
        return str(path)
    try:
        return str(PurePosixPath(stored).relative_to(PurePosixPath(data_dir)))
    except ValueError:
        pass
    expected = PurePosixPath(backend_root_name(backend_id))
    if path.parts[-2:] == expected.parts:
        return str(expected)
    raise DataDirError(
        f"backend {backend_id}'s storage root {stored} in the catalog of {data_dir} is "
        f"neither inside the data dir nor <old data dir>/{expected}, so it cannot be rebased "
        "onto this data dir; refusing to open it (nothing was changed or deleted)")


def old_data_dir(stored: str, backend_id: int) -> str | None:
    """The data dir an absolute pre-migration root was created under, if it has the engine's
    layout (`<old>/be/<id>`); None for relative roots."""
    path = PurePosixPath(stored)
    layout = PurePosixPath(backend_root_name(backend_id)).parts
    if not path.is_absolute() or path.parts[-2:] != layout:
        return None
    return str(path.parent.parent)
