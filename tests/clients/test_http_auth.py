"""HTTP basic auth on the HTTP port, against the MySQL port's accounts: every route but
/metrics needs credentials (401 with Doris' JSON body without or with wrong ones), admin routes
need ADMIN_PRIV (403 for a user without it), /metrics stays open as in Doris. Requests go
through urllib and curl."""

from __future__ import annotations

import json
import secrets
import subprocess

import pytest
from support.http import fetch


def url(server, path: str) -> str:
    return f"http://127.0.0.1:{server.http_port}{path}"


@pytest.fixture
def plain_user(server):
    name = f"h_{secrets.token_hex(4)}"
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE USER '{name}' IDENTIFIED BY 'pw'")
    yield name
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"DROP USER IF EXISTS '{name}'")


@pytest.mark.parametrize("method,path", [
    ("GET", "/api/health"), ("GET", "/api/bootstrap"), ("GET", "/api/colocate"),
    ("DELETE", "/api/colocate/group_stable?db_id=1&group_id=1"),
    ("GET", "/api/compaction/run_status"), ("POST", "/api/debug_point/clear"),
    ("GET", "/api/no/such/route"),
])
def test_every_route_needs_credentials(server, method: str, path: str) -> None:
    status, headers, body = fetch(url(server, path), method, auth=None)
    assert status == 401
    assert headers["WWW-Authenticate"].startswith("Basic")
    assert json.loads(body) == {"msg": "Unauthorized", "code": 401, "count": 0,
                                "data": "Need auth information: send HTTP basic auth "
                                        "(curl -u user:password)"}


def test_wrong_password_and_unknown_user_are_401(server, plain_user) -> None:
    for auth in ((plain_user, "wrong"), ("nobody_here", ""), ("root", "not-empty")):
        status, _, body = fetch(url(server, "/api/health"), auth=auth)
        assert status == 401, auth
        assert json.loads(body)["data"] == (
            f"Access denied for user '{auth[0]}'@'127.0.0.1' (using password: "
            f"{'YES' if auth[1] else 'NO'})")


def test_admin_routes_need_admin_priv(server, plain_user) -> None:
    status, _, body = fetch(url(server, "/api/health"), auth=(plain_user, "pw"))
    assert status == 200 and json.loads(body)["status"] == "OK"
    for method, path in (("GET", "/api/colocate"), ("GET", "/api/compaction/run_status"),
                         ("DELETE", "/api/colocate/group_stable?db_id=1&group_id=1")):
        status, _, body = fetch(url(server, path), method, auth=(plain_user, "pw"))
        assert status == 403, path
        assert json.loads(body)["data"] == ("Access denied; you need (at least one of) the "
                                            "ADMIN privilege(s) for this operation")
    with server.connect() as c, c.cursor() as cur:
        cur.execute(f"GRANT ADMIN_PRIV ON *.*.* TO '{plain_user}'")
    status, _, body = fetch(url(server, "/api/colocate"), auth=(plain_user, "pw"))
    assert status == 200 and json.loads(body)["msg"] == "success"


def test_root_and_admin_with_their_empty_passwords(server) -> None:
    for user in ("root", "admin"):
        status, _, body = fetch(url(server, "/api/compaction/run_status"), auth=(user, ""))
        assert status == 200, body


def test_metrics_is_open_as_in_doris(server) -> None:
    status, _, body = fetch(url(server, "/metrics"), auth=None)
    assert status == 200 and "doris_fe_query_total" in body


def test_curl_with_and_without_credentials(server, plain_user) -> None:
    def curl(*args: str) -> tuple[int, str]:
        out = subprocess.run(["curl", "-s", "-w", "\n%{http_code}", *args,
                              url(server, "/api/health")],
                             capture_output=True, text=True, timeout=30, check=True).stdout
        body, _, code = out.rpartition("\n")
        return int(code), body

    assert curl()[0] == 401
    assert curl("-u", f"{plain_user}:wrong")[0] == 401
    code, body = curl("-u", f"{plain_user}:pw")
    assert code == 200 and json.loads(body)["msg"] == "Success"
