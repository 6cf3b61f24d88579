"""Doris' connector REST API (server/connector_api.py) over real HTTP with `requests`:
`_schema`, `backends` and `_query_plan` in Doris' JSON, their auth and error bodies."""

from __future__ import annotations

import base64
import json

import pytest
import requests

DDL = ("CREATE TABLE sales (k INT, dt DATE, amount DECIMAL(20,4) SUM, ts DATETIME(6) MAX, "
       "name VARCHAR(16) REPLACE) AGGREGATE KEY(k, dt) "
       "PARTITION BY RANGE(dt) (PARTITION p1 VALUES LESS THAN ('2024-01-01'), "
       "PARTITION p2 VALUES LESS THAN ('2025-01-01')) "
       "DISTRIBUTED BY HASH(k) BUCKETS 3 PROPERTIES('replication_num'='1')")


@pytest.fixture
def sales(server, db, db_conn) -> str:
    with db_conn.cursor() as cur:
        cur.execute(DDL)
        cur.execute("INSERT INTO sales VALUES (1, '2023-05-01', 1.5, '2023-05-01 00:00:00', 'a'),"
                    " (2, '2024-05-01', 2.5, '2024-05-01 00:00:00.5', 'b')")
    return db


def url(server, path: str) -> str:
    return f"http://127.0.0.1:{server.http_port}{path}"


def test_schema_in_doris_json(server, sales) -> None:
    r = requests.get(url(server, f"/api/{sales}/sales/_schema"), auth=("root", ""))
    body = r.json()
    assert r.status_code == 200 and body["code"] == 0 and body["msg"] == "success"
    data = body["data"]
    assert data["keysType"] == "AGG_KEYS" and data["status"] == 200
    props = {p["name"]: p for p in data["properties"]}
    assert [p["name"] for p in data["properties"]] == ["k", "dt", "amount", "ts", "name"]
    assert props["k"]["type"] == "INT" and props["k"]["aggregation_type"] == ""
    assert props["dt"]["type"] == "DATEV2"
    assert (props["amount"]["type"], props["amount"]["precision"], props["amount"]["scale"],
            props["amount"]["aggregation_type"]) == ("DECIMAL128", 20, 4, "SUM")
    assert (props["ts"]["type"], props["ts"]["aggregation_type"]) == ("DATETIMEV2", "MAX")
    assert props["name"]["type"] == "VARCHAR"


def test_schema_errors_and_auth(server, sales) -> None:
    r = requests.get(url(server, f"/api/{sales}/nope/_schema"), auth=("root", ""))
    assert r.json() == {"msg": "Error", "code": 1, "data": "table not found, tableName=nope",
                        "count": 0}
    r = requests.get(url(server, f"/api/{sales}/sales/_schema"))
    assert r.status_code == 401 and r.json()["msg"] == "Unauthorized"


def test_backends(server) -> None:
    r = requests.get(url(server, "/api/backends?is_alive=true"), auth=("root", ""))
    backends = r.json()["data"]["backends"]
    assert len(backends) == 3
    assert all(b["is_alive"] is True and b["http_port"] == server.http_port for b in backends)
    # Arrow Flight SQL is off on this server: the advertised port says so
    assert all(b["arrow_flight_sql_port"] == -1 for b in backends)


def test_query_plan_all_tablets_and_pruned(server, sales, db_conn) -> None:
    with db_conn.cursor() as cur:
        cur.execute("SHOW TABLETS FROM sales")
        names = [d[0] for d in cur.description]
        shown = [dict(zip(names, row)) for row in cur.fetchall()]
    all_ids = {str(r["TabletId"]) for r in shown}
    assert len(all_ids) == 6
    r = requests.post(url(server, f"/api/{sales}/sales/_query_plan"), auth=("root", ""),
                      json={"sql": f"select k, amount from {sales}.sales"})
    body = r.json()
    assert body["code"] == 0
    data = body["data"]
    assert data["status"] == 200 and set(data["partitions"]) == all_ids
    one = next(iter(data["partitions"].values()))
    assert set(one) == {"routings", "version", "versionHash", "schemaHash"}
    assert len(one["routings"]) == 1 and one["version"] == 2
    opaque = json.loads(base64.b64decode(data["opaqued_query_plan"]))
    assert sorted(map(str, opaque["tablets"])) == sorted(all_ids)
    # partition pruning: only p2's three tablets
    r = requests.post(url(server, f"/api/{sales}/sales/_query_plan"), auth=("root", ""),
                      json={"sql": f"select k from {sales}.sales where dt >= '2024-02-01'"})
    pruned = set(r.json()["data"]["partitions"])
    with db_conn.cursor() as cur:
        cur.execute("SHOW TABLETS FROM sales PARTITION (p2)")
        p2 = {str(row[0]) for row in cur.fetchall()}
    assert pruned == p2 and len(pruned) == 3


def test_query_plan_errors(server, sales) -> None:
    u = url(server, f"/api/{sales}/sales/_query_plan")
    r = requests.post(u, auth=("root", ""), data="")
    assert r.json() == {"msg": "Bad Request", "code": 403,
                        "data": "POST body must contains [sql] root object", "count": 0}
    r = requests.post(u, auth=("root", ""), json={"sql": "select * from other.t"})
    data = r.json()["data"]
    assert data["status"] == 400
    assert data["exception"].startswith("requested database and table must consistent with sql")
    r = requests.post(u, auth=("root", ""),
                      json={"sql": f"select k, count(*) from {sales}.sales group by k"})
    assert "only support single table filter-prune-scan" in r.json()["data"]["exception"]
