"""Doris' privilege model over the MySQL protocol (pymysql against a live server).

The matrix: for each statement family and privilege level, a user without the grant gets Doris'
error (1142 for a table, 1044 for a database, 1227 for a global privilege) and the same user
with the grant runs the statement. Then roles, a REVOKE seen by an open session at its next
statement, SHOW GRANTS / SHOW ROLES output, KILL and SHOW PROCESSLIST of other users' sessions,
SHOW DATABASES / SHOW TABLES / information_schema filtered to what the user may see, host
patterns, SET PASSWORD and max_user_connections.
"""

from __future__ import annotations

import hashlib
import secrets
import ssl
import subprocess
from dataclasses import dataclass

import pymysql
import pytest

TABLE_DDL = ("CREATE TABLE {db}.{t} (a INT, b INT) DUPLICATE KEY(a) DISTRIBUTED BY HASH(a) "
             "BUCKETS 1 PROPERTIES ('replication_num' = '1')")


def _name(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(4)}"


def login(server, user: str, password: str = "pw", **kw) -> pymysql.connections.Connection:
    # plain TCP unless a test asks for TLS (PyMySQL takes TLS unasked whenever it is offered)
    kw.setdefault("ssl_disabled", True)
    return pymysql.connect(host="127.0.0.1", port=server.port, user=user, password=password,
                           autocommit=True, **kw)


def run(conn, sql: str) -> list[tuple]:
    with conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def error_of(conn, sql: str) -> tuple[int, str]:
    with pytest.raises(pymysql.err.MySQLError) as ei:
        run(conn, sql)
    return ei.value.args[0], ei.value.args[1]


@pytest.fixture
def root(server):
    c = server.connect()
    yield c
    c.close()


@pytest.fixture
def users(root):
    """Factory: a fresh user 'name'@'%' with password 'pw'; all dropped afterwards."""
    made: list[str] = []

    def make(host: str = "%", password: str = "pw") -> str:
        name = _name("u")
        run(root, f"CREATE USER '{name}'@'{host}' IDENTIFIED BY '{password}'")
        made.append(f"'{name}'@'{host}'")
        return name

    yield make
    for ident in made:
        run(root, f"DROP USER IF EXISTS {ident}")


@pytest.fixture
def dbs(root, make_db):
    """Two databases: `db` with tables t (rows 1, 2) and other (row 1); `db2` with table t."""
    db, db2 = make_db("priv"), make_db("priv2")
    for d, t in ((db, "t"), (db, "other"), (db2, "t")):
        run(root, TABLE_DDL.format(db=d, t=t))
    run(root, f"INSERT INTO {db}.t VALUES (1, 10), (2, 20)")
    run(root, f"INSERT INTO {db}.other VALUES (1, 10)")
    return db, db2


@dataclass(frozen=True)
class Case:
    family: str
    grants: tuple[str, ...]  # GRANT <priv> ON <resource>, formatted with {db}
    sql: str  # formatted with {db}, {db2}, {new} (a fresh name)
    denied: int


MATRIX = [
    # queries: SELECT on every table read, at each level
    Case("select/table", ("SELECT_PRIV ON {db}.t",), "SELECT a FROM {db}.t", 1142),
    Case("select/database", ("SELECT_PRIV ON {db}.*",), "SELECT a FROM {db}.t", 1142),
    Case("select/catalog", ("SELECT_PRIV ON internal.*.*",), "SELECT a FROM {db}.t", 1142),
    Case("select/global", ("SELECT_PRIV ON *.*.*",), "SELECT a FROM {db}.t", 1142),
    Case("select/three-part", ("SELECT_PRIV ON internal.{db}.t",), "SELECT a FROM {db}.t", 1142),
    Case("select/subquery", ("SELECT_PRIV ON {db}.other", "SELECT_PRIV ON {db}.t"),
         "SELECT a FROM {db}.other WHERE a IN (SELECT a FROM {db}.t)", 1142),
    Case("select/cte", ("SELECT_PRIV ON {db}.t",),
         "WITH x AS (SELECT a FROM {db}.t) SELECT a FROM x", 1142),
    Case("select/join", ("SELECT_PRIV ON {db}.other", "SELECT_PRIV ON {db}.t"),
         "SELECT o.a FROM {db}.other o JOIN {db}.t t ON o.a = t.a", 1142),
    Case("select/union", ("SELECT_PRIV ON {db}.other", "SELECT_PRIV ON {db}.t"),
         "SELECT a FROM {db}.other UNION ALL SELECT a FROM {db}.t", 1142),
    Case("explain", ("SELECT_PRIV ON {db}.t",), "EXPLAIN SELECT a FROM {db}.t", 1142),
    # writes: LOAD on the target, SELECT on an INSERT .. SELECT's sources
    Case("insert/values", ("LOAD_PRIV ON {db}.t",), "INSERT INTO {db}.t VALUES (3, 30)", 1142),
    Case("insert/expression", ("LOAD_PRIV ON {db}.*",),
         "INSERT INTO {db}.t VALUES (1 + 2, 30)", 1142),
    Case("insert/select-source", ("LOAD_PRIV ON {db}.t", "SELECT_PRIV ON {db}.other"),
         "INSERT INTO {db}.t SELECT a, b FROM {db}.other", 1142),
    Case("delete", ("LOAD_PRIV ON {db}.t",), "DELETE FROM {db}.t WHERE a = 1", 1142),
    Case("truncate", ("LOAD_PRIV ON {db}.t",), "TRUNCATE TABLE {db}.t", 1142),
    # DDL
    Case("create table", ("CREATE_PRIV ON {db}.*",),
         TABLE_DDL.replace("{t}", "{new}"), 1227),
    Case("drop table", ("DROP_PRIV ON {db}.other",), "DROP TABLE {db}.other", 1142),
    Case("alter table", ("ALTER_PRIV ON {db}.t",),
         "ALTER TABLE {db}.t SET (\"group_commit_interval_ms\" = \"200\")", 1142),
    Case("create index", ("ALTER_PRIV ON {db2}.t",),  # an ALTER TABLE in Doris
         "CREATE INDEX {new} ON {db2}.t (b) USING BITMAP", 1142),
    Case("drop index", ("ALTER_PRIV ON {db2}.t",), "DROP INDEX IF EXISTS {new} ON {db2}.t", 1142),
    Case("create database", ("CREATE_PRIV ON {new}.*",), "CREATE DATABASE {new}", 1044),
    Case("drop database", ("DROP_PRIV ON {db2}.*",), "DROP DATABASE {db2}", 1044),
    # metadata
    Case("use", ("SELECT_PRIV ON {db}.t",), "USE {db}", 1044),
    Case("show create table", ("SELECT_PRIV ON {db}.t",), "SHOW CREATE TABLE {db}.t", 1142),
    Case("desc", ("LOAD_PRIV ON {db}.t",), "DESC {db}.t", 1142),
    Case("show tables", ("SELECT_PRIV ON {db}.t",), "SHOW TABLES FROM {db}", 1044),
    # global (the values are the defaults: the session-wide server stays as other tests expect)
    Case("set global", ("ADMIN_PRIV ON *.*.*",), "SET GLOBAL query_timeout = 900", 1227),
    Case("set @@global", ("ADMIN_PRIV ON *.*.*",), "SET @@GLOBAL.query_timeout = 900", 1227),
    Case("admin compact", ("ADMIN_PRIV ON *.*.*",),
         "ADMIN COMPACT TABLE {db}.t WHERE type = 'cumulative'", 1227),
    Case("show proc", ("ADMIN_PRIV ON *.*.*",), "SHOW PROC '/colocation_group'", 1227),
    Case("show backends", ("ADMIN_PRIV ON *.*.*",), "SHOW BACKENDS", 1227),
    Case("create user", ("GRANT_PRIV ON *.*.*",), "CREATE USER '{new}' IDENTIFIED BY 'x'", 1227),
    Case("create role", ("GRANT_PRIV ON *.*.*",), "CREATE ROLE {new}", 1227),
    Case("show all grants", ("GRANT_PRIV ON *.*.*",), "SHOW ALL GRANTS", 1227),
]


@pytest.mark.parametrize("case", MATRIX, ids=[c.family for c in MATRIX])
def test_privilege_matrix(server, root, users, dbs, case: Case) -> None:
    db, db2 = dbs
    new = _name("n")
    names = {"db": db, "db2": db2, "new": new}
    sql = case.sql.format(**names)
    user = users()
    conn = login(server, user)
    try:
        # without the grant: Doris' error for the level checked, and nothing happened
        grants = [g.format(**names) for g in case.grants]
        for g in grants[:-1]:  # every grant but the one under test
            run(root, f"GRANT {g} TO '{user}'@'%'")
        code, message = error_of(conn, sql)
        assert code == case.denied, message
        if code == 1142:
            assert f"command denied to user '{user}'@'127.0.0.1' for table 'internal: " in message
        elif code == 1227:
            assert "Access denied; you need (at least one of) the" in message
        else:
            assert f"Access denied for user '{user}'@'%' to database '" in message
        # with it: the same statement on the same connection (the next statement sees it)
        run(root, f"GRANT {grants[-1]} TO '{user}'@'%'")
        run(conn, sql)
    finally:
        conn.close()
        run(root, f"DROP DATABASE IF EXISTS {new}")
        run(root, f"DROP USER IF EXISTS '{new}'")
        run(root, f"DROP ROLE IF EXISTS {new}")


def test_denial_wording(server, users, dbs) -> None:
    db, _ = dbs
    user = users()
    with login(server, user) as conn:
        assert error_of(conn, f"SELECT * FROM {db}.t") == (
            1142, (f"errCode = 2, detailMessage = SELECT command denied to user '{user}'@"
                   f"'127.0.0.1' for table 'internal: {db}: t'"))
        assert error_of(conn, f"USE {db}") == (
            1044, (f"errCode = 2, detailMessage = Access denied for user '{user}'@'%' to "
                   f"database '{db}'"))
        assert error_of(conn, "SET GLOBAL query_timeout = 5") == (
            1227, ("errCode = 2, detailMessage = Access denied; you need (at least one of) "
                   "the ADMIN privilege(s) for this operation"))


def test_subqueries_the_engine_rejects_are_checked_first(server, root, users, dbs) -> None:
    """Subqueries in DELETE's WHERE or in VALUES are not supported by the engine (nor by
    Doris), but their tables are checked before that error: nobody learns about a table
    they may not read from the error they get."""
    db, _ = dbs
    user = users()
    run(root, f"GRANT LOAD_PRIV ON {db}.t TO '{user}'@'%'")
    with login(server, user) as conn:
        for sql in (f"DELETE FROM {db}.t WHERE a IN (SELECT a FROM {db}.other)",
                    f"INSERT INTO {db}.t VALUES ((SELECT max(a) FROM {db}.other), 1)"):
            code, message = error_of(conn, sql)
            assert code == 1142 and f"'internal: {db}: other'" in message, sql


def test_a_cte_name_does_not_hide_a_real_table(server, root, users, dbs) -> None:
    """A WITH clause names a CTE only inside its own query: a table of the same name read
    outside it is still checked."""
    db, _ = dbs
    user = users()
    run(root, f"GRANT SELECT_PRIV ON {db}.other TO '{user}'@'%'")
    with login(server, user, database=db) as conn:
        assert run(conn, "WITH t AS (SELECT 1 AS a) SELECT a FROM t") == [(1,)]
        assert run(conn, "WITH t AS (SELECT a FROM other) SELECT a FROM t") == [(1,)]
        code, message = error_of(
            conn, "SELECT a FROM t WHERE a IN (WITH t AS (SELECT 1 AS a) SELECT a FROM t)")
        assert code == 1142 and f"'internal: {db}: t'" in message


def test_database_at_connect_needs_a_privilege(server, root, users, dbs) -> None:
    db, _ = dbs
    user = users()
    with pytest.raises(pymysql.err.OperationalError) as ei:
        login(server, user, database=db)
    assert ei.value.args[0] == 1044
    run(root, f"GRANT SELECT_PRIV ON {db}.t TO '{user}'@'%'")
    with login(server, user, database=db) as conn:
        assert run(conn, "SELECT a FROM t ORDER BY a") == [(1,), (2,)]


def test_table_grant_does_not_reach_other_tables(server, root, users, dbs) -> None:
    db, db2 = dbs
    user = users()
    run(root, f"GRANT SELECT_PRIV ON {db}.t TO '{user}'@'%'")
    with login(server, user) as conn:
        assert run(conn, f"SELECT count(*) FROM {db}.t") == [(2,)]
        assert error_of(conn, f"SELECT * FROM {db}.other")[0] == 1142
        assert error_of(conn, f"SELECT * FROM {db2}.t")[0] == 1142
        # SELECT does not imply LOAD
        assert error_of(conn, f"INSERT INTO {db}.t VALUES (5, 50)")[0] == 1142


def test_roles_grant_and_revoke(server, root, users, dbs) -> None:
    db, _ = dbs
    role = _name("r")
    user = users()
    run(root, f"CREATE ROLE {role}")
    try:
        run(root, f"GRANT SELECT_PRIV, LOAD_PRIV ON {db}.* TO ROLE '{role}'")
        with login(server, user) as conn:
            assert error_of(conn, f"SELECT * FROM {db}.t")[0] == 1142
            run(root, f"GRANT '{role}' TO '{user}'@'%'")
            assert run(conn, f"SELECT count(*) FROM {db}.t") == [(2,)]  # same session
            run(conn, f"INSERT INTO {db}.t VALUES (3, 30)")
            run(root, f"REVOKE LOAD_PRIV ON {db}.* FROM ROLE '{role}'")
            assert error_of(conn, f"INSERT INTO {db}.t VALUES (4, 40)")[0] == 1142
            assert run(conn, f"SELECT count(*) FROM {db}.t") == [(3,)]
            run(root, f"REVOKE '{role}' FROM '{user}'@'%'")
            assert error_of(conn, f"SELECT * FROM {db}.t")[0] == 1142
            # a user created with a DEFAULT ROLE holds it from the start
            other = _name("u")
            run(root, f"CREATE USER '{other}' IDENTIFIED BY 'pw' DEFAULT ROLE '{role}'")
            try:
                with login(server, other) as c2:
                    assert run(c2, f"SELECT count(*) FROM {db}.t") == [(3,)]
                assert error_of(root, f"ALTER USER '{other}' DEFAULT ROLE 'no_such_role'")[0] \
                    == 1105
                run(root, f"ALTER USER '{other}' DEFAULT ROLE 'admin'")
                assert run(root, f"SHOW GRANTS FOR '{other}'")[0][3] == "admin"
                run(root, f"ALTER USER '{other}' DEFAULT ROLE '{role}'")
                # dropping the role takes its privileges from its users
                run(root, f"DROP ROLE {role}")
                with login(server, other) as c2:
                    assert error_of(c2, f"SELECT * FROM {db}.t")[0] == 1142
            finally:
                run(root, f"DROP USER IF EXISTS '{other}'")
    finally:
        run(root, f"DROP ROLE IF EXISTS {role}")


def test_revoke_takes_effect_in_an_open_session(server, root, users, dbs) -> None:
    db, _ = dbs
    user = users()
    run(root, f"GRANT SELECT_PRIV ON *.*.* TO '{user}'@'%'")
    with login(server, user) as conn:
        assert run(conn, f"SELECT count(*) FROM {db}.t") == [(2,)]
        run(root, f"REVOKE SELECT_PRIV ON *.*.* FROM '{user}'@'%'")
        assert error_of(conn, f"SELECT count(*) FROM {db}.t")[0] == 1142


def test_show_grants_and_roles(server, root, users, dbs) -> None:
    db, _ = dbs
    user = users()
    run(root, f"GRANT SELECT_PRIV, LOAD_PRIV ON {db}.* TO '{user}'@'%'")
    run(root, f"GRANT ALTER_PRIV ON {db}.t TO '{user}'@'%'")
    run(root, f"GRANT GRANT_PRIV ON *.*.* TO '{user}'@'%'")
    with root.cursor() as cur:
        cur.execute(f"SHOW GRANTS FOR '{user}'@'%'")
        names = [d[0] for d in cur.description]
        rows = cur.fetchall()
    assert names == ["UserIdentity", "Comment", "Password", "Roles", "GlobalPrivs",
                     "CatalogPrivs", "DatabasePrivs", "TablePrivs", "ColPrivs",
                     "ResourcePrivs", "WorkloadGroupPrivs"]
    assert rows == ((f"'{user}'@'%'", "", "Yes", "", "Grant_priv", None,
                     f"internal.{db}: Select_priv,Load_priv", f"internal.{db}.t: Alter_priv",
                     None, None, "normal: Usage_priv"),)
    with login(server, user) as conn:  # own grants without FOR, and SHOW ALL GRANTS with GRANT
        assert run(conn, "SHOW GRANTS")[0][0] == f"'{user}'@'%'"
        everyone = {r[0]: r for r in run(conn, "SHOW ALL GRANTS")}
        assert everyone["'root'@'%'"][3:5] == ("operator", "Node_priv,Admin_priv")
        assert everyone["'admin'@'%'"][3:5] == ("admin", "Admin_priv")
    with root.cursor() as cur:
        cur.execute("SHOW ROLES")
        assert [d[0] for d in cur.description] == [
            "Name", "Comment", "Users", "GlobalPrivs", "CatalogPrivs", "DatabasePrivs",
            "TablePrivs", "ResourcePrivs", "WorkloadGroupPrivs"]
        roles = {r[0]: r for r in cur.fetchall()}
    assert roles["operator"][2:4] == ("'root'@'%'", "Node_priv,Admin_priv")
    assert roles["admin"][2:4] == ("'admin'@'%'", "Admin_priv")


def test_show_databases_tables_and_information_schema_are_filtered(server, root, users,
                                                                   dbs) -> None:
    db, db2 = dbs
    user = users()
    run(root, f"GRANT SELECT_PRIV ON {db}.t TO '{user}'@'%'")
    with login(server, user) as conn:
        shown = {r[0] for r in run(conn, "SHOW DATABASES")}
        assert db in shown and db2 not in shown and "information_schema" in shown
        assert run(conn, f"SHOW TABLES FROM {db}") == [("t",)]
        assert run(conn, "SELECT table_schema, table_name FROM information_schema.tables "
                         "WHERE table_type = 'BASE TABLE'") == [(db, "t")]
        assert {r[0] for r in run(conn, "SELECT schema_name FROM information_schema.schemata")} \
            == {db, "information_schema"}
        assert run(conn, "SELECT DISTINCT table_name FROM information_schema.columns "
                         f"WHERE table_schema IN ('{db}', '{db2}')") == [("t",)]


def test_kill_and_processlist_of_other_users(server, root, users) -> None:
    a, b = users(), users()
    with login(server, a) as ca, login(server, b) as cb:
        b_id = run(cb, "SELECT CONNECTION_ID()")[0][0]
        assert error_of(ca, f"KILL {b_id}") == (
            1095, f"errCode = 2, detailMessage = You are not owner of thread {b_id}")
        assert {r[1] for r in run(ca, "SHOW PROCESSLIST")} == {a}
        assert {a, b} <= {r[1] for r in run(root, "SHOW PROCESSLIST")}
        own = run(ca, "SELECT CONNECTION_ID()")[0][0]
        with login(server, a) as ca2:  # the same user may kill its own sessions
            run(ca2, f"KILL {own}")
        run(root, f"KILL {b_id}")  # ADMIN may kill anyone's
        with pytest.raises(pymysql.err.MySQLError):
            run(cb, "SELECT 1")


def test_query_profiles_of_other_users_are_hidden(server, root, users, dbs) -> None:
    db, _ = dbs
    a, b = users(), users()
    for u in (a, b):
        run(root, f"GRANT SELECT_PRIV ON {db}.t TO '{u}'@'%'")
    with login(server, a) as ca, login(server, b) as cb:
        run(ca, "SET enable_profile = true")
        run(ca, f"SELECT count(*) FROM {db}.t")
        mine = [r for r in run(ca, 'SHOW QUERY PROFILE "/"') if r[6] == a]
        assert mine and {r[6] for r in run(ca, 'SHOW QUERY PROFILE "/"')} == {a}
        profile_id = mine[0][0]
        assert run(cb, 'SHOW QUERY PROFILE "/"') == []
        assert error_of(cb, f'SHOW QUERY PROFILE "/{profile_id}"')[0] == 1105  # not found
        assert run(ca, f'SHOW QUERY PROFILE "/{profile_id}"')
        assert profile_id in {r[0] for r in run(root, 'SHOW QUERY PROFILE "/"')}


def test_host_patterns_pick_the_most_specific_account(server, root) -> None:
    name = _name("h")
    try:
        run(root, f"CREATE USER '{name}'@'%' IDENTIFIED BY 'any-host'")
        run(root, f"CREATE USER '{name}'@'127.0.0.%' IDENTIFIED BY 'local-net'")
        run(root, f"CREATE USER '{name}'@'10.%' IDENTIFIED BY 'elsewhere'")
        with login(server, name, "local-net") as conn:
            assert run(conn, "SELECT CURRENT_USER()") == [(f"'{name}'@'127.0.0.%'",)]
        with pytest.raises(pymysql.err.OperationalError) as ei:
            login(server, name, "any-host")  # '%' is not the account a 127.0.0.1 login is
        assert ei.value.args[0] == 1045
        with pytest.raises(pymysql.err.OperationalError):
            login(server, name, "elsewhere")
        run(root, f"DROP USER '{name}'@'127.0.0.%'")
        with login(server, name, "any-host") as conn:
            assert run(conn, "SELECT CURRENT_USER()") == [(f"'{name}'@'%'",)]
    finally:
        for host in ("%", "127.0.0.%", "10.%"):
            run(root, f"DROP USER IF EXISTS '{name}'@'{host}'")


def test_set_password_own_and_others(server, root, users) -> None:
    user, other = users(), users()
    with login(server, user) as conn:
        run(conn, "SET PASSWORD = PASSWORD('new-pw')")
        assert error_of(conn, f"SET PASSWORD FOR '{other}'@'%' = PASSWORD('x')")[0] == 1227
        assert error_of(conn, f"DROP USER '{other}'")[0] == 1227
    with pytest.raises(pymysql.err.OperationalError):
        login(server, user, "pw")
    login(server, user, "new-pw").close()
    # a hash as MySQL's PASSWORD() prints it: *SHA1(SHA1('hashed'))
    digest = hashlib.sha1(hashlib.sha1(b"hashed").digest()).hexdigest().upper()
    run(root, f"SET PASSWORD FOR '{other}'@'%' = '*{digest}'")
    with pytest.raises(pymysql.err.OperationalError):
        login(server, other, "pw")
    login(server, other, "hashed").close()


def test_grant_on_backquoted_names(server, root, users, dbs) -> None:
    db, _ = dbs
    user = users()
    run(root, f"GRANT SELECT_PRIV ON `{db}`.`t` TO '{user}'@'%'")
    run(root, f"GRANT LOAD_PRIV ON `{db}`.* TO '{user}'@'%'")
    assert run(root, f"SHOW GRANTS FOR '{user}'@'%'")[0][6:8] == (
        f"internal.{db}: Load_priv", f"internal.{db}.t: Select_priv")


def test_usage_priv_on_resources_and_workload_groups(server, root, users, dbs) -> None:
    db, _ = dbs
    user = users()
    run(root, f"GRANT USAGE_PRIV ON RESOURCE 'spark0' TO '{user}'@'%'")
    run(root, f"GRANT USAGE_PRIV ON WORKLOAD GROUP 'etl' TO '{user}'@'%'")
    row = run(root, f"SHOW GRANTS FOR '{user}'@'%'")[0]
    assert row[9:] == ("spark0: Usage_priv", "etl: Usage_priv; normal: Usage_priv")
    run(root, f"REVOKE USAGE_PRIV ON RESOURCE 'spark0' FROM '{user}'@'%'")
    assert run(root, f"SHOW GRANTS FOR '{user}'@'%'")[0][9] is None
    assert error_of(root, f"GRANT USAGE_PRIV ON {db}.* TO '{user}'@'%'")[0] == 1105
    assert error_of(root, f"GRANT SELECT_PRIV ON RESOURCE 'spark0' TO '{user}'@'%'")[0] == 1105
    with login(server, user) as conn:  # a workload-group grant is no table privilege
        assert error_of(conn, f"SELECT a FROM {db}.t")[0] == 1142


def test_grant_errors(root, users, dbs) -> None:
    db, _ = dbs
    user = users()
    code, message = error_of(root, f"GRANT ADMIN_PRIV ON {db}.* TO '{user}'@'%'")
    assert code == 1105 and "global level" in message
    assert error_of(root, f"GRANT NOSUCH_PRIV ON {db}.* TO '{user}'@'%'")[0] == 1105
    assert error_of(root, f"GRANT SELECT_PRIV ON {db}.(t) TO '{user}'@'%'")[0] == 1064
    assert error_of(root, f"REVOKE SELECT_PRIV ON {db}.* FROM '{user}'@'%'")[0] == 1141
    assert error_of(root, f"GRANT SELECT_PRIV ON {db}.* TO 'nobody_{user}'@'%'")[0] == 1396
    assert error_of(root, "DROP USER 'root'")[0] == 1396
    assert error_of(root, "DROP ROLE operator")[0] == 1396
    assert error_of(root, f"CREATE USER '{user}'@'%'")[0] == 1396
    run(root, f"CREATE USER IF NOT EXISTS '{user}'@'%'")


def test_grant_priv_lets_a_user_grant_on_its_level(server, root, users, dbs) -> None:
    db, db2 = dbs
    granter, grantee = users(), users()
    run(root, f"GRANT GRANT_PRIV ON {db}.* TO '{granter}'@'%'")
    with login(server, granter) as conn:
        run(conn, f"GRANT SELECT_PRIV ON {db}.t TO '{grantee}'@'%'")
        assert error_of(conn, f"GRANT SELECT_PRIV ON {db2}.t TO '{grantee}'@'%'")[0] == 1227
        assert error_of(conn, f"GRANT SELECT_PRIV ON *.*.* TO '{grantee}'@'%'")[0] == 1227
    with login(server, grantee) as conn:
        assert run(conn, f"SELECT count(*) FROM {db}.t") == [(2,)]


def test_max_user_connections(server, root, users) -> None:
    user = users()
    run(root, f"SET PROPERTY FOR '{user}' 'max_user_connections' = '2'")
    first, second = login(server, user), login(server, user)
    try:
        with pytest.raises(pymysql.err.OperationalError) as ei:
            login(server, user)
        assert ei.value.args == (
            1203, f"User {user} already has more than 'max_user_connections' active connections")
        first.close()
        login(server, user).close()
    finally:
        second.close()
    assert error_of(root, f"SET PROPERTY FOR '{user}' 'max_user_connections' = '0'")[0] == 1105
    assert error_of(root, f"SET PROPERTY FOR '{user}' 'no_such' = '1'")[0] == 1105


def test_failed_login_attempts_lock_the_account(server, root, users) -> None:
    user = users()
    run(root, f"ALTER USER '{user}'@'%' FAILED_LOGIN_ATTEMPTS 2 PASSWORD_LOCK_TIME 1 DAY")
    for _ in range(2):
        with pytest.raises(pymysql.err.OperationalError) as ei:
            login(server, user, "wrong")
        assert ei.value.args[0] == 1045
    with pytest.raises(pymysql.err.OperationalError) as ei:
        login(server, user, "pw")  # the right password, but locked now
    assert ei.value.args[0] == 3955
    assert ei.value.args[1].startswith(
        f"Access denied for user '{user}'@'127.0.0.1'. Account is blocked for 86400 second(s) (")
    assert "due to 2 consecutive failed logins" in ei.value.args[1]
    assert "ACCOUNT_UNLOCK" in ei.value.args[1]
    run(root, f"ALTER USER '{user}'@'%' ACCOUNT_UNLOCK")
    login(server, user, "pw").close()


def test_password_expire_and_history(server, root, users) -> None:
    user = users()
    run(root, f"ALTER USER '{user}'@'%' PASSWORD_HISTORY 2")
    run(root, f"SET PASSWORD FOR '{user}'@'%' = PASSWORD('second')")
    code, message = error_of(root, f"SET PASSWORD FOR '{user}'@'%' = PASSWORD('second')")
    assert (code, message) == (3638, (f"errCode = 2, detailMessage = Cannot use these "
                                      f"credentials for '{user}'@'%' because they contradict "
                                      "the password history policy"))
    run(root, f"ALTER USER '{user}'@'%' PASSWORD_EXPIRE")
    with pytest.raises(pymysql.err.OperationalError) as ei:
        login(server, user, "second")
    assert ei.value.args == (1862, ("Your password has expired. To log in you must change it "
                                    "using a client that supports expired passwords."))
    run(root, f"SET PASSWORD FOR '{user}'@'%' = PASSWORD('third')")  # a new one ends it
    login(server, user, "third").close()
    run(root, f"ALTER USER '{user}'@'%' PASSWORD_EXPIRE INTERVAL 10 DAY")
    login(server, user, "third").close()
    with login(server, user, "third") as conn:  # a user may not lift policies on itself
        assert error_of(conn, f"ALTER USER '{user}'@'%' PASSWORD_EXPIRE NEVER")[0] == 1227


def test_global_password_history_applies_to_default_accounts(root, users) -> None:
    user = users()  # PASSWORD_HISTORY DEFAULT: the global password_history (0 = off)
    run(root, f"SET PASSWORD FOR '{user}'@'%' = PASSWORD('again')")
    run(root, f"SET PASSWORD FOR '{user}'@'%' = PASSWORD('again')")
    run(root, "SET GLOBAL password_history = 3")
    try:
        assert error_of(root, f"SET PASSWORD FOR '{user}'@'%' = PASSWORD('again')")[0] == 3638
        run(root, f"ALTER USER '{user}'@'%' PASSWORD_HISTORY 0")  # the account's own wins
        run(root, f"SET PASSWORD FOR '{user}'@'%' = PASSWORD('again')")
    finally:
        run(root, "SET GLOBAL password_history = 0")


def test_require_ssl_refuses_plain_connections(server, root, users) -> None:
    user = users()
    run(root, f"ALTER USER '{user}'@'%' REQUIRE SSL")
    with pytest.raises(pymysql.err.OperationalError) as ei:
        login(server, user)
    assert ei.value.args[0] == 1045 and "REQUIRE SSL" in ei.value.args[1]
    with login(server, user, ssl_disabled=False,
               ssl={"check_hostname": False, "verify_mode": ssl.CERT_NONE}) as secure:
        assert run(secure, "SHOW STATUS LIKE 'Ssl_version'")[0][1].startswith("TLS")
    run(root, f"ALTER USER '{user}'@'%' REQUIRE NONE")
    login(server, user).close()


def test_com_field_list_and_prepared_statements_are_checked(server, root, users, dbs) -> None:
    """COM_FIELD_LIST (the CLI's tab completion) and server-side prepared statements reach
    tables without COM_QUERY: the same checks apply."""
    import mysql.connector
    from pymysql.constants import COMMAND

    db, _ = dbs
    user = users()
    run(root, f"GRANT SELECT_PRIV ON {db}.other TO '{user}'@'%'")
    with login(server, user, database=db) as conn:
        with pytest.raises(pymysql.err.MySQLError) as ei:
            conn._execute_command(COMMAND.COM_FIELD_LIST, "t\0")
            conn._read_packet()
        assert ei.value.args[0] == 1142
    prepared = mysql.connector.connect(host="127.0.0.1", port=server.port, user=user,
                                       password="pw", ssl_disabled=True, use_pure=True)
    try:
        cur = prepared.cursor(prepared=True)
        cur.execute(f"SELECT a FROM {db}.other WHERE a = ?", (1,))
        assert cur.fetchall() == [(1,)]
        with pytest.raises(mysql.connector.Error) as ci:
            cur.execute(f"SELECT a FROM {db}.t WHERE a = ?", (1,))
            cur.fetchall()
        assert ci.value.errno == 1142
    finally:
        prepared.close()


def test_mariadb_cli_sees_doris_errors_and_set_password(server, root, users, dbs) -> None:
    """The `mariadb` CLI as another real client: a denial is its `ERROR 1142 (42000)` line,
    and a password set with SET PASSWORD is the one the CLI logs in with."""
    db, _ = dbs
    user = users()

    def cli(password: str, sql: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["mariadb", "-h127.0.0.1", f"-P{server.port}", "--protocol=TCP", f"-u{user}",
             f"-p{password}", "--skip-ssl", "--batch", "-e", sql],
            capture_output=True, text=True, timeout=60, check=False)

    denied = cli("pw", f"SELECT a FROM {db}.t")
    assert denied.returncode == 1
    assert "ERROR 1142 (42000) at line 1" in denied.stderr, denied.stderr
    assert f"SELECT command denied to user '{user}'@'127.0.0.1'" in denied.stderr
    run(root, f"GRANT SELECT_PRIV ON {db}.t TO '{user}'@'%'")
    assert cli("pw", f"SELECT a FROM {db}.t ORDER BY a").stdout.split() == ["a", "1", "2"]
    assert cli("pw", "SET PASSWORD = PASSWORD('cli-pw')").returncode == 0
    assert "ERROR 1045 (28000)" in cli("pw", "SELECT 1").stderr
    assert cli("cli-pw", "SELECT CURRENT_USER()").stdout.split() == ["CURRENT_USER()",
                                                                      f"'{user}'@'%'"]
