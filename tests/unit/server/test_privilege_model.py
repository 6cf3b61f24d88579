"""The privilege vocabulary and the manager on a real catalog file: host patterns and which
account a login is, resource levels and inheritance, role privileges, grant merging."""

from __future__ import annotations

import pytest

from server.privileges import Access, check
from server.privileges.manager import PrivilegeManager
from server.privileges.model import (
    ADMIN,
    LOAD,
    SELECT,
    Identity,
    Privilege,
    Resource,
    host_matches,
    host_specificity,
    parse_privilege,
)
from storage.catalog.catalog import Catalog
from storage.catalog.meta import UserMeta
from storage.errors import ShaleError


@pytest.mark.parametrize("pattern,host,matches", [
    ("%", "10.1.2.3", True), ("192.168.%", "192.168.0.7", True), ("192.168.%", "10.0.0.1", False),
    ("127.0.0._", "127.0.0.1", True), ("127.0.0._", "127.0.0.10", False),
    ("localhost", "LOCALHOST", True), ("a.b", "axb", False),
])
def test_host_patterns(pattern: str, host: str, matches: bool) -> None:
    assert host_matches(pattern, host) is matches


def test_most_specific_host_sorts_first() -> None:
    patterns = ["%", "10.%", "10.1.%", "10.1.2.3"]
    assert sorted(patterns, key=host_specificity) == ["10.1.2.3", "10.1.%", "10.%", "%"]


def test_resource_levels_cover_what_is_below() -> None:
    assert Resource().covers("internal", "db", "t")
    assert Resource("internal", "db", "*").covers("internal", "DB", "t")
    assert not Resource("internal", "db", "*").covers("internal", "other", "t")
    assert not Resource("internal", "db", "t").covers("internal", "db", None)  # a db-level ask
    assert not Resource("hive", "*", "*").covers("internal", "db", "t")
    assert [Resource().level, Resource("internal").level, Resource("internal", "d").level,
            Resource("internal", "d", "t").level] == ["GLOBAL", "CATALOG", "DATABASE", "TABLE"]


def test_privilege_words() -> None:
    assert parse_privilege("select_priv") == (Privilege.SELECT_PRIV,)
    assert set(parse_privilege("ALL") or ()) == {
        Privilege.SELECT_PRIV, Privilege.LOAD_PRIV, Privilege.ALTER_PRIV, Privilege.CREATE_PRIV,
        Privilege.DROP_PRIV}
    assert parse_privilege("FLY_PRIV") is None


@pytest.fixture
def manager(tmp_path):
    catalog = Catalog(tmp_path / "fe" / "catalog.db")
    yield PrivilegeManager(catalog)
    catalog.close()


def test_login_account_and_role_grants(manager: PrivilegeManager) -> None:
    for host in ("%", "10.%"):
        manager.create_user(UserMeta("", "u", host), if_not_exists=False)
    assert manager.login_account("u", "10.0.0.1").host == "10.%"
    assert manager.login_account("u", "127.0.0.1").host == "%"
    assert manager.login_account("nobody", "127.0.0.1") is None
    ident = Identity("u", "%")
    manager.create_role("r", if_not_exists=False)
    manager.grant(Resource("internal", "db", "*"), frozenset({Privilege.LOAD_PRIV}), None, "r")
    assert not manager.has(ident, LOAD, "db", "t")
    manager.grant_roles(["r"], ident, add=True)
    assert manager.has(ident, LOAD, "db", "t")
    assert not manager.has(Identity("u", "10.%"), LOAD, "db", "t")  # another account
    assert not manager.has(ident, SELECT, "db", "t")
    with pytest.raises(ShaleError) as ei:
        check(Access(manager, ident), SELECT, "db", "t")
    assert ei.value.code == 1142
    with pytest.raises(ShaleError) as ei:
        check(Access(manager, ident), ADMIN)
    assert ei.value.code == 1227
    assert manager.has(Identity("root"), ADMIN) and manager.has(Identity("admin"), SELECT, "x")


def test_grants_merge_and_revoke(manager: PrivilegeManager) -> None:
    manager.create_user(UserMeta("", "g", "%"), if_not_exists=False)
    ident = Identity("g")
    on = Resource("internal", "db", "t")
    manager.grant(on, frozenset({Privilege.SELECT_PRIV}), ident, None)
    manager.grant(on, frozenset({Privilege.LOAD_PRIV}), ident, None)
    [grant] = manager.account(ident).grants
    assert grant.privileges == ("SELECT_PRIV", "LOAD_PRIV")
    manager.revoke(on, frozenset({Privilege.SELECT_PRIV, Privilege.LOAD_PRIV}), ident, None)
    assert manager.account(ident).grants == ()
    with pytest.raises(ShaleError) as ei:
        manager.revoke(on, frozenset({Privilege.SELECT_PRIV}), ident, None)
    assert ei.value.code == 1141
    with pytest.raises(ShaleError):  # ADMIN_PRIV is global only
        manager.grant(on, frozenset({Privilege.ADMIN_PRIV}), ident, None)


def test_http_require_for_a_table(manager: PrivilegeManager) -> None:
    """The API a Stream Load handler calls: `require(request, LOAD, db, tbl)` after the
    middleware's basic auth (a real aiohttp server on a socket)."""
    import asyncio
    import base64

    from aiohttp import web
    from aiohttp.test_utils import TestClient, TestServer

    from server.privileges.http_auth import auth_middleware, require
    from server.privileges.manager import password_hashes

    manager.create_user(UserMeta("", "loader", "%", **password_hashes("pw")), False)
    manager.grant(Resource("internal", "db", "t"), frozenset({Privilege.LOAD_PRIV}),
                  Identity("loader"), None)

    async def stream_load(request: web.Request) -> web.Response:
        access = require(request, LOAD, request.match_info["db"], request.match_info["tbl"])
        return web.json_response({"Status": "Success", "User": access.identity.name})

    async def scenario() -> list[tuple[int, dict]]:
        app = web.Application(middlewares=[auth_middleware(manager)])
        app.router.add_put("/api/{db}/{tbl}/_stream_load", stream_load)
        auth = {"Authorization": "Basic " + base64.b64encode(b"loader:pw").decode()}
        out = []
        async with TestClient(TestServer(app)) as client:
            for path, headers in (("/api/db/t/_stream_load", auth),
                                  ("/api/db/other/_stream_load", auth),
                                  ("/api/db/t/_stream_load", {})):
                resp = await client.put(path, headers=headers)
                out.append((resp.status, await resp.json()))
        return out

    ok, denied, anonymous = asyncio.run(scenario())
    assert ok == (200, {"Status": "Success", "User": "loader"})
    assert denied == (403, {"msg": "Unauthorized", "code": 401, "count": 0,
                            "data": "LOAD command denied to user 'loader'@'127.0.0.1' for "
                                    "table 'internal: db: other'"})
    assert anonymous[0] == 401
