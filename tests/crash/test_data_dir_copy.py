"""A data dir is its own (issue 12, point 5): a copy made with `cp -a` while the server is
stopped is a working, independent copy, and one data dir serves one server at a time.

The copy test runs twice: on a data dir as this version writes it (every stored path relative)
and on one as older versions wrote it (backend roots stored as absolute paths, which a copy
carries over: a server on the copy once ran its start-up clean-up on the original's backend
directories and deleted segments committed after the copy). Both copies must rebase onto
themselves and never touch the original's files.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest
from support.server import ServerProcess, ServerStartError

from storage.catalog.meta import Backend
from storage.catalog.repository import CatalogRepository, Mutation

TABLE = """CREATE TABLE d.t (k INT NOT NULL, v VARCHAR(20)) DUPLICATE KEY(k)
           DISTRIBUTED BY HASH(k) BUCKETS 4"""


def insert(srv: ServerProcess, lo: int, hi: int, tag: str) -> None:
    with srv.connect("d") as conn, conn.cursor() as cur:
        for start in range(lo, hi, 25):  # several loads: several rowsets per tablet
            rows = ", ".join(f"({k}, '{tag}')" for k in range(start, min(start + 25, hi)))
            cur.execute(f"INSERT INTO t VALUES {rows}")


def rows_by_tag(srv: ServerProcess) -> dict[str, int]:
    with srv.connect("d") as conn, conn.cursor() as cur:
        cur.execute("SELECT v, count(*) FROM t GROUP BY v")
        return {tag: n for tag, n in cur.fetchall()}


def file_state(data_dir: Path) -> dict[str, tuple[int, int]]:
    """Every file under the backends' roots with its size and modification time."""
    out = {}
    for path in sorted((data_dir / "be").rglob("*")):
        if path.is_file():
            st = path.stat()
            out[str(path.relative_to(data_dir))] = (st.st_size, st.st_mtime_ns)
    return out


def stored_roots(data_dir: Path) -> dict[int, str]:
    repo = CatalogRepository(data_dir / "fe" / "catalog.db")
    try:
        return {o.backend_id: o.root_path for o in repo.load_all() if isinstance(o, Backend)}
    finally:
        repo.close()


def store_absolute_roots(data_dir: Path) -> None:
    """Rewrite the catalog's backend roots the way versions before relative paths stored them
    (absolute: `<data_dir>/be/<id>`), through the catalog's own repository."""
    repo = CatalogRepository(data_dir / "fe" / "catalog.db")
    try:
        mutation = Mutation()
        for obj in repo.load_all():
            if isinstance(obj, Backend):
                absolute = str(data_dir.resolve() / "be" / str(obj.backend_id))
                mutation.put(dataclasses.replace(obj, root_path=absolute))
        repo.apply(mutation)
    finally:
        repo.close()


def copy_dir(src: Path, dst: Path) -> None:
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)


@pytest.mark.parametrize("legacy_absolute_roots", [False, True], ids=["relative", "legacy-absolute"])
def test_a_copied_data_dir_is_an_independent_copy(tmp_path: Path, legacy_absolute_roots: bool) -> None:
    original, copy = tmp_path / "a", tmp_path / "b"
    a = ServerProcess(original, backends=2)
    with a:
        with a.connect() as conn, conn.cursor() as cur:
            cur.execute("CREATE DATABASE d")
            cur.execute(TABLE)
        insert(a, 0, 100, "before_copy")
    assert all(not os.path.isabs(r) for r in stored_roots(original).values())
    if legacy_absolute_roots:
        store_absolute_roots(original)
        assert all(os.path.isabs(r) for r in stored_roots(original).values())
    copy_dir(original, copy)

    with a:  # the original goes on: loads after the copy are its own
        insert(a, 100, 200, "after_copy")
        assert rows_by_tag(a) == {"before_copy": 100, "after_copy": 100}
        before_b = file_state(original)
        b = ServerProcess(copy, backends=2)
        with b:  # started while A runs: its start-up clean-up must keep to its own dir
            assert rows_by_tag(b) == {"before_copy": 100}
            insert(b, 1000, 1050, "copy_only")
            assert rows_by_tag(b) == {"before_copy": 100, "copy_only": 50}
        assert b.proc is not None and b.proc.returncode == 0
        assert file_state(original) == before_b  # nothing of A's was deleted or rewritten
        assert rows_by_tag(a) == {"before_copy": 100, "after_copy": 100}
    # Both catalogs now store their roots relative to their own dir.
    assert stored_roots(copy) == {be: f"be/{be}" for be in stored_roots(copy)}
    assert stored_roots(original) == {be: f"be/{be}" for be in stored_roots(original)}
    with b:  # the copy keeps working on its own after restarts
        assert rows_by_tag(b) == {"before_copy": 100, "copy_only": 50}


def test_a_root_that_cannot_be_rebased_stops_the_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with ServerProcess(data, backends=1) as srv:
        with srv.connect() as conn, conn.cursor() as cur:
            cur.execute("CREATE DATABASE d")
            cur.execute(TABLE)
        insert(srv, 0, 50, "x")
    elsewhere = tmp_path / "elsewhere" / "disk7"  # not <old data dir>/be/<id>
    elsewhere.mkdir(parents=True)
    (elsewhere / "keep.seg").write_bytes(b"not ours")
    repo = CatalogRepository(data / "fe" / "catalog.db")
    try:
        mutation = Mutation()
        for obj in repo.load_all():
            if isinstance(obj, Backend):
                mutation.put(dataclasses.replace(obj, root_path=str(elsewhere)))
        repo.apply(mutation)
    finally:
        repo.close()
    before = file_state(data)
    srv = ServerProcess(data, backends=1)
    with pytest.raises(ServerStartError) as err:
        srv.start()
    assert srv.proc is not None and srv.proc.returncode == 1
    assert "cannot be rebased onto this data dir" in str(err.value)
    assert str(elsewhere) in str(err.value)
    assert (elsewhere / "keep.seg").read_bytes() == b"not ours"
    assert file_state(data) == before


def test_a_second_server_on_the_same_data_dir_fails_fast(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with ServerProcess(data, backends=1) as first:
        with first.connect() as conn, conn.cursor() as cur:
            cur.execute("CREATE DATABASE d")
            cur.execute(TABLE)
        insert(first, 0, 30, "x")
        assert (data / "LOCK").read_text().strip() == str(first.proc.pid)  # type: ignore[union-attr]
        before = file_state(data)
        second = ServerProcess(data, backends=1)
        with pytest.raises(ServerStartError) as err:
            second.start(timeout=60)
        assert second.proc is not None and second.proc.returncode == 1
        message = str(err.value)
        assert f"data dir {data.resolve()} is in use by another ShaleDB server" in message
        assert f"pid {first.proc.pid}" in message  # type: ignore[union-attr]
        assert file_state(data) == before
        assert rows_by_tag(first) == {"x": 30}  # the first server is unaffected
    # Once the first one stopped, the dir opens again (a kill -9 frees the lock too).
    again = ServerProcess(data, backends=1)
    with again:
        assert rows_by_tag(again) == {"x": 30}
        again.kill()
    with ServerProcess(data, backends=1) as after_crash:
        assert rows_by_tag(after_crash) == {"x": 30}
