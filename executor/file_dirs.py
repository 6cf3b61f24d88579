"""The directories file table functions read from and OUTFILE / EXPORT write to.

Doris confines `local()` to the BE's `user_files_secure_path` and lets OUTFILE write anywhere
the BE can; ShaleDB confines both: reads to `import_dir`, writes to `export_dir` (conf
`[load] import_dir` / `export_dir`, default `<data_dir>/import` and `<data_dir>/export`).
A user path is resolved (symlinks followed, `..` collapsed) before the check, so neither `..`
nor a symlink leads outside. Globs (`*`, `?`, `[..]`) expand inside the directory only.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path

from sql.errors import DorisError

GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True, slots=True)
class FileDirs:
    import_dir: Path
    export_dir: Path

    @staticmethod
    def under(data_dir: Path, import_dir: str = "", export_dir: str = "") -> FileDirs:
        """Relative settings are read against the data dir; empty ones take the defaults."""
        def place(setting: str, default: str) -> Path:
            p = Path(setting or default)
            return (p if p.is_absolute() else Path(data_dir) / p).resolve()

        return FileDirs(place(import_dir, "import"), place(export_dir, "export"))

    def import_files(self, pattern: str) -> list[Path]:
        """The files `pattern` (relative to import_dir, or absolute inside it; may glob) names,
        sorted. Raises DorisError when it points outside import_dir or matches nothing."""
        root = self.import_dir
        if not pattern.strip():
            raise DorisError("Property 'file_path' is required.")
        parts = [p.strip() for p in pattern.split(",") if p.strip()]
        files: list[Path] = []
        for part in parts:
            if ".." in Path(part).parts:
                raise DorisError(f"file_path [{part}] can not contain '..': it must name files "
                                 f"under the import directory {root}")
            raw = Path(part)
            full = raw if raw.is_absolute() else root / raw
            lexical = Path(os.path.normpath(full))
            if not (lexical == root or root in lexical.parents):
                raise DorisError(f"file_path [{part}] is outside the import directory {root}")
            matches = sorted(glob.glob(str(full))) if _has_glob(str(full)) else \
                ([str(full)] if full.exists() else [])
            for m in matches:
                real = Path(m).resolve()
                if not _inside(real, root, resolved=True):
                    raise DorisError(f"file_path [{part}] leads outside the import directory "
                                     f"{root} (through a symlink)")
                if real.is_file():
                    files.append(real)
        if not files:
            raise DorisError(f"No matching files for file_path [{pattern}] under the import "
                             f"directory {root}")
        return files

    def export_prefix(self, url: str, what: str) -> tuple[Path, str]:
        """`file:///dir/prefix` of OUTFILE / EXPORT -> (directory, file name prefix); the
        directory must lie inside export_dir (both are created on demand)."""
        if not url.startswith("file://"):
            raise DorisError(f"{what} only supports the local file system here: the path must "
                             f"start with file:// and lie under the export directory "
                             f"{self.export_dir}, got [{url}]")
        raw = url[len("file://"):]
        if not raw.startswith("/"):
            raise DorisError(f"{what} path must be absolute (file:///...), got [{url}]")
        if ".." in Path(raw).parts:
            raise DorisError(f"{what} path [{url}] can not contain '..'")
        self.export_dir.mkdir(parents=True, exist_ok=True)
        directory = Path(raw) if raw.endswith("/") else Path(raw).parent
        if not (directory == self.export_dir or self.export_dir in directory.parents):
            raise DorisError(f"{what} may only write under the export directory "
                             f"{self.export_dir}, got [{url}]")
        if not _inside(directory, self.export_dir, resolved=False):
            raise DorisError(f"{what} path [{url}] leads outside the export directory "
                             f"{self.export_dir} (through a symlink)")
        directory.mkdir(parents=True, exist_ok=True)
        resolved = directory.resolve()
        if not _inside(resolved, self.export_dir, resolved=True):  # a symlink made meanwhile
            raise DorisError(f"{what} path [{url}] leads outside the export directory "
                             f"{self.export_dir} (through a symlink)")
        return resolved, ("" if raw.endswith("/") else Path(raw).name)


def _has_glob(text: str) -> bool:
    return any(c in GLOB_CHARS for c in text)


def _inside(path: Path, root: Path, resolved: bool) -> bool:
    """`path` is root or below it, once its symlinks are resolved (as far as it exists);
    `resolved` says the caller already did that."""
    real = path if resolved else Path(os.path.realpath(path))
    return real == root or root in real.parents
