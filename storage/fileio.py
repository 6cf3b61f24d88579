"""Crash-safe file writes: every file storage publishes is written whole or not at all.

Owns the one recipe: write to `<name>.tmp`, flush and fsync the file, rename it over the final
name, fsync the directory (so the rename itself survives a crash). `write_atomic` does it for a
payload already in memory; `AtomicFile` streams a large file (segments) through the same steps.
Upstream concept: Doris `io::FileWriter::close()` + `sync_dir`.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import BinaryIO


def fsync_dir(path: Path) -> None:
    """fsync a directory so that a rename or create inside it is durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, payload: bytes | memoryview) -> None:
    """Write bytes to `path` so that readers and crashes see all of it or nothing."""
    with AtomicFile(path) as f:
        f.write(payload)


class AtomicFile:
    """Context manager streaming a file to `<path>.tmp`; on clean exit it is fsynced and renamed
    into place (then the directory is fsynced); on an exception the temporary file is removed."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.tmp = self.path.with_name(self.path.name + ".tmp")
        self._file: BinaryIO | None = None

    def __enter__(self) -> BinaryIO:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.tmp, "wb")
        return self._file

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        f = self._file
        assert f is not None
        if exc_type is not None:
            f.close()
            self.tmp.unlink(missing_ok=True)
            return
        try:
            f.flush()
            os.fsync(f.fileno())
        finally:
            f.close()
        os.replace(self.tmp, self.path)
        fsync_dir(self.path.parent)
