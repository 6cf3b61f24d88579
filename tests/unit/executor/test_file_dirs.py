"""executor/file_dirs.py and the OUTFILE writer's file handling on a temporary directory:
which paths are inside the import / export directories (`..`, absolute paths, symlinks,
globs), and the start-up removal of what a crash mid-OUTFILE left."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from executor.file_dirs import FileDirs
from executor.outfile import remove_partial_files
from sql.errors import DorisError


@pytest.fixture
def dirs(tmp_path: Path) -> FileDirs:
    d = FileDirs.under(tmp_path / "data")
    (d.import_dir / "logs").mkdir(parents=True)
    for name in ("a.csv", "b.csv", "logs/c.csv"):
        (d.import_dir / name).write_text("1\n")
    (tmp_path / "outside.csv").write_text("secret\n")
    return d


def test_defaults_and_relative_settings(tmp_path: Path) -> None:
    d = FileDirs.under(tmp_path, "in", str(tmp_path / "abs_out"))
    assert d.import_dir == (tmp_path / "in").resolve()
    assert d.export_dir == (tmp_path / "abs_out").resolve()
    assert FileDirs.under(tmp_path).import_dir == (tmp_path / "import").resolve()


def test_import_globs_stay_inside(dirs: FileDirs, tmp_path: Path) -> None:
    root = dirs.import_dir
    assert dirs.import_files("*.csv") == [root / "a.csv", root / "b.csv"]
    assert dirs.import_files("*/c.csv, a.csv") == [root / "logs" / "c.csv", root / "a.csv"]
    assert dirs.import_files(str(root / "b.csv")) == [root / "b.csv"]
    for bad, words in [("../outside.csv", "can not contain '..'"),
                       (str(tmp_path / "outside.csv"), "outside the import directory"),
                       ("/etc/*", "outside the import directory"),
                       ("nothing*.csv", "No matching files")]:
        with pytest.raises(DorisError, match=words.replace("(", r"\(")):
            dirs.import_files(bad)
    os.symlink(tmp_path, root / "link")
    with pytest.raises(DorisError, match="symlink"):
        dirs.import_files("link/outside.csv")
    with pytest.raises(DorisError, match="symlink"):
        dirs.import_files("link/*.csv")


def test_export_targets(dirs: FileDirs, tmp_path: Path) -> None:
    out = dirs.export_dir
    assert dirs.export_prefix(f"file://{out}/a/b/p_", "OUTFILE") == (out / "a" / "b", "p_")
    assert dirs.export_prefix(f"file://{out}/dir/", "EXPORT") == (out / "dir", "")
    assert (out / "a" / "b").is_dir()
    for url, words in [(f"file://{tmp_path}/x_", "may only write under"),
                       (f"file://{out}/../x_", "can not contain '..'"),
                       ("hdfs://nn/x_", "only supports the local file system"),
                       (f"file://{out.name}/x_", "must be absolute")]:
        with pytest.raises(DorisError, match=words):
            dirs.export_prefix(url, "OUTFILE")
    os.symlink(tmp_path, out / "link")
    with pytest.raises(DorisError, match="symlink"):
        dirs.export_prefix(f"file://{out}/link/x_", "OUTFILE")
    assert not (tmp_path / "x_").exists()


def test_start_up_removes_partial_files_only(tmp_path: Path) -> None:
    (tmp_path / "job").mkdir()
    partial = tmp_path / "job" / ".r_1a2b-3c4d_0.csv.0123abcd.tmp"
    partial.write_text("half")
    kept = [tmp_path / "job" / "r_1a2b-3c4d_0.csv", tmp_path / ".hidden", tmp_path / "x.tmp"]
    for p in kept:
        p.write_text("whole")
    assert remove_partial_files(tmp_path) == 1
    assert not partial.exists() and all(p.exists() for p in kept)
    assert remove_partial_files(tmp_path / "missing") == 0
