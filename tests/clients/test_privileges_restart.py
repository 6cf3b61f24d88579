"""Accounts, roles and grants live in the catalog: they survive a restart (and a kill -9), a
users.json from before grants existed is imported on start, and root's password once set
holds on both ports."""

from __future__ import annotations

import json

import pymysql
import pytest
from support.http import fetch
from support.server import ServerProcess
from test_privileges import login, run

from server.privileges.manager import password_hashes


def test_grants_roles_and_passwords_survive_restart(tmp_path) -> None:
    srv = ServerProcess(tmp_path / "data", backends=1)
    with srv:
        with srv.connect() as root:
            run(root, "CREATE DATABASE d")
            run(root, "CREATE TABLE d.t (a INT) DUPLICATE KEY(a) DISTRIBUTED BY HASH(a) "
                      "BUCKETS 1 PROPERTIES ('replication_num' = '1')")
            run(root, "INSERT INTO d.t VALUES (1)")
            run(root, "CREATE USER 'reader'@'%' IDENTIFIED BY 'r-pw'")
            run(root, "CREATE USER 'loader'@'127.0.0.%' IDENTIFIED BY 'l-pw'")
            run(root, "CREATE ROLE writers")
            run(root, "GRANT LOAD_PRIV ON d.* TO ROLE 'writers'")
            run(root, "GRANT 'writers' TO 'loader'@'127.0.0.%'")
            run(root, "GRANT SELECT_PRIV ON d.t TO 'reader'@'%'")
            run(root, "SET PASSWORD FOR 'root' = PASSWORD('root-pw')")
        before = {r[0]: r for r in run(login(srv, "root", "root-pw"), "SHOW ALL GRANTS")}
    srv.start()
    try:
        with pytest.raises(pymysql.err.OperationalError):
            login(srv, "root", "")
        root = login(srv, "root", "root-pw")
        assert {r[0]: r for r in run(root, "SHOW ALL GRANTS")} == before
        assert "writers" in {r[0] for r in run(root, "SHOW ROLES")}
        with login(srv, "reader", "r-pw") as reader:
            assert run(reader, "SELECT a FROM d.t") == [(1,)]
            with pytest.raises(pymysql.err.MySQLError) as ei:
                run(reader, "INSERT INTO d.t VALUES (2)")
            assert ei.value.args[0] == 1142
        with login(srv, "loader", "l-pw") as loader:
            run(loader, "INSERT INTO d.t VALUES (2)")
        # the HTTP port checks the same (changed) root password
        assert fetch(f"http://127.0.0.1:{srv.http_port}/api/health", auth=("root", ""))[0] == 401
        assert fetch(f"http://127.0.0.1:{srv.http_port}/api/health",
                     auth=("root", "root-pw"))[0] == 200
        # a grant committed just before kill -9 is there after the restart
        run(root, "GRANT SELECT_PRIV ON d.* TO 'loader'@'127.0.0.%'")
        root.close()
        srv.kill()
        srv.start()
        with login(srv, "loader", "l-pw") as loader:
            assert run(loader, "SELECT count(*) FROM d.t") == [(2,)]
    finally:
        srv.stop()


def test_users_json_is_imported_into_the_catalog(tmp_path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    hashes = password_hashes("old-secret")
    (data / "users.json").write_text(json.dumps([{
        "name": "legacy", "plugin": "mysql_native_password", **hashes}]))
    srv = ServerProcess(data, backends=1)
    with srv, login(srv, "legacy", "old-secret") as conn:
        assert run(conn, "SELECT CURRENT_USER()") == [("'legacy'@'%'",)]
    assert not (data / "users.json").exists()
    assert (data / "users.json.migrated").exists()
    with srv:  # second start: from the catalog, not the file
        login(srv, "legacy", "old-secret").close()
