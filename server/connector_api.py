"""The REST API Doris' connectors plan with (spark-doris-connector, flink-doris-connector):

- `GET /api/{db}/{table}/_schema`: the table's columns in Doris' TableSchemaAction JSON
  (`{"msg": "success", "code": 0, "data": {"properties": [{"type", "name", "comment",
  "aggregation_type", "is_nullable"[, "precision", "scale"]}..], "keysType": "DUP_KEYS",
  "status": 200}, "count": 0}`); `type` is Doris' PrimitiveType name (INT, DATETIMEV2,
  DECIMAL128, ...), what the connectors map to their own types. Needs SELECT on the table.
- `GET /api/backends[?is_alive=true]`: the backends (Doris' BackendsAction:
  `{"data": {"backends": [{"ip", "http_port", "is_alive"}]}}`). Our backends are embedded in
  this process, so each names this HTTP listener's port: a Stream Load sent there is served here.
  ShaleDB adds `arrow_flight_sql_port` (what Doris' SHOW BACKENDS calls ArrowFlightSqlPort; -1
  when Flight SQL is off), so a reader finds the Flight port without being told it.
- `POST /api/{db}/{table}/_query_plan` with `{"sql": "select .. from db.t [where ..]"}`:
  Doris' TableQueryPlanAction: the tablets the planner keeps for that single-table
  filter/project query (partition and bucket pruning applied), each with its routing, the
  partition's visible version and a schema hash, and `opaqued_query_plan`. Doris' plan is a
  serialized thrift TQueryPlanInfo its BEs execute; ours is base64 JSON `{"db", "table",
  "sql", "tablets"}` that our own readers use (shaledb_spark reads the tablets with
  `SELECT .. FROM t TABLET(..)`), opaque to everybody else as in Doris. Needs SELECT.

Errors follow Doris' ResponseEntityBuilder: HTTP 200 with `{"msg": "Bad Request", "code": 403,
"data": <why>}` for a malformed request, `{"msg": "Error", "code": 1, "data": <why>}` for a
missing database or table, and for a query Doris' planner refuses, `data: {"status": 400,
"exception": <why>}` as TableQueryPlanAction puts it. Credentials and privileges are checked
as for Stream Load (server/privileges/http_auth.py): 401 / 403 with Doris' Unauthorized body.
Upstream: Doris FE `httpv2/rest/TableSchemaAction`, `BackendsAction`, `TableQueryPlanAction`.
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import zlib
from typing import TYPE_CHECKING, Any

from aiohttp import web
from sqlglot import exp

from server.privileges.http_auth import ACCESS_KEY, require
from server.privileges.model import SELECT
from storage.catalog.meta import ColumnMeta, TableMeta
from storage.errors import ShaleError
from storage.types import TypeKind

if TYPE_CHECKING:
    from server.services import HttpServices

# Doris' RestApiStatusCode values used here.
CODE_OK, CODE_COMMON_ERROR, CODE_BAD_REQUEST = 0, 1, 403


def _ok(data: object) -> web.Response:
    return web.json_response({"msg": "success", "code": CODE_OK, "data": data, "count": 0})


def _bad_request(why: str) -> web.Response:
    return web.json_response({"msg": "Bad Request", "code": CODE_BAD_REQUEST, "data": why,
                              "count": 0})


def _common_error(why: str) -> web.Response:
    return web.json_response({"msg": "Error", "code": CODE_COMMON_ERROR, "data": why,
                              "count": 0})


def primitive_type(col: ColumnMeta) -> str:
    """Doris' PrimitiveType name of a column (what TableSchemaAction's `type` carries)."""
    t = col.type
    if t.kind is TypeKind.DATE:
        return "DATEV2"
    if t.kind is TypeKind.DATETIME:
        return "DATETIMEV2"
    if t.kind is TypeKind.DECIMAL:
        return "DECIMAL32" if t.precision <= 9 else "DECIMAL64" if t.precision <= 18 \
            else "DECIMAL128"
    return t.kind.value


def schema_properties(table: TableMeta) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for c in table.columns:
        agg = c.agg_type.value if c.agg_type is not None and c.agg_type.value != "NONE" else ""
        prop: dict[str, object] = {"type": primitive_type(c), "name": c.name,
                                   "comment": c.comment, "aggregation_type": agg,
                                   "is_nullable": "Yes" if c.nullable else "No"}
        if c.type.kind is TypeKind.DECIMAL:
            prop["precision"] = c.type.precision
            prop["scale"] = c.type.scale
        elif c.type.kind is TypeKind.DATETIME:
            prop["scale"] = c.type.scale  # DATETIMEV2's fractional digits
        elif c.type.kind in (TypeKind.CHAR, TypeKind.VARCHAR):
            prop["length"] = c.type.length
        elif c.type.is_nested:
            # ShaleDB addition: the element types, as DESC prints them (ARRAY<INT>,
            # MAP<TEXT,INT>, STRUCT<f1:INT,f2:TEXT>); `type` stays Doris' ARRAY / MAP / STRUCT
            prop["full_type"] = c.type.desc_sql()
        out.append(prop)
    return out


def schema_hash(table: TableMeta, index_id: int) -> int:
    """A stable int32 standing in for Doris' index schema hash: changes with the columns."""
    text = f"{index_id}:" + ",".join(f"{c.name} {c.type.sql()}" for c in table.columns)
    return zlib.crc32(text.encode()) & 0x7FFFFFFF


class QueryPlanError(Exception):
    """A `_query_plan` request Doris refuses: `status` goes into the JSON as Doris puts it."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _single_table(sql: str, db: str, table: str) -> exp.Select:
    """Parse `sql`; it must be one SELECT of exactly `db`.`table` (Doris' checks, its words)."""
    from sql.parser.dialect import SqlSyntaxError, parse_one

    try:
        stmt = parse_one(sql)
    except (SqlSyntaxError, ShaleError) as e:  # Doris: BAD_REQUEST with the parser's text
        raise QueryPlanError(400, str(e)) from None
    if not isinstance(stmt, exp.Select):
        raise QueryPlanError(400, f"Select statement needed, but found [{sql} ]")
    if list(stmt.find_all(exp.Subquery)):
        raise QueryPlanError(400, "Select statement must not embed another statement")
    tables = list(stmt.find_all(exp.Table))
    if len(tables) != 1:
        raise QueryPlanError(400, "Select statement must have only one table")
    t = tables[0]
    sql_db = t.text("db") or db
    if sql_db.lower() != db.lower() or t.name.lower() != table.lower():
        raise QueryPlanError(400, "requested database and table must consistent with sql: "
                             f"request [ {db}.{table}]and sql [{sql_db}.{t.name}]")
    if stmt.args.get("group") or stmt.args.get("joins") or stmt.args.get("having") \
            or stmt.args.get("order") or stmt.args.get("limit") or stmt.args.get("distinct") \
            or any(isinstance(e, exp.AggFunc) for e in stmt.find_all(exp.AggFunc)):
        raise QueryPlanError(400, f"only support single table filter-prune-scan, but found "
                             f"[ {sql}]")
    return stmt


def _scans(plan: Any) -> list[Any]:
    from planner.logical import LogicalScan

    found: list[Any] = []
    stack = [plan]
    while stack:
        node = stack.pop()
        if isinstance(node, LogicalScan):
            found.append(node)
        stack.extend(node.children)
    return found


def query_plan(server: HttpServices, db_name: str, table: TableMeta, sql: str, user: str
               ) -> dict[str, object]:
    """Plan `sql` (blocking) and describe its tablets in Doris' `_query_plan` data shape."""
    from planner.query import plan_select
    from server.variables import GlobalVariables, SessionVariables, query_options
    from sql.options import SessionContext

    stmt = _single_table(sql, db_name, table.name)
    catalog = server.engine.catalog
    ctx = SessionContext(database=db_name, connection_id=0, user=f"{user}@%",
                         current_user=f"'{user}'@'%'",
                         options=query_options(SessionVariables(GlobalVariables())),
                         cancel=threading.Event())
    try:
        prepared = plan_select(stmt, catalog, ctx, sql=sql)
    except ShaleError as e:
        raise QueryPlanError(400, getattr(e, "detail", None) or e.message) from None
    scans = _scans(prepared.plan)
    if len(scans) > 1:
        raise QueryPlanError(500, f"Planner should plan just only one ScanNode but found "
                                  f"[ {len(scans)}]")
    tablets: dict[str, dict[str, object]] = {}
    if scans:
        scan = scans[0]
        backends = {b.backend_id: b for b in catalog.backends()}
        shash = schema_hash(table, scan.index_id)
        for r in scan.ranges:
            be = backends.get(r.tablet.backend_id)
            routing = f"{be.host}:{be.be_port}" if be is not None else ""
            tablets[str(r.tablet.tablet_id)] = {
                "routings": [routing], "version": r.version, "versionHash": 0,
                "schemaHash": shash}
    opaque = {"db": db_name, "table": table.name, "sql": sql,
              "tablets": [int(t) for t in tablets]}
    return {"partitions": tablets,
            "opaqued_query_plan": base64.b64encode(json.dumps(opaque).encode()).decode(),
            "status": 200}


def add_routes(app: web.Application, server: HttpServices) -> None:
    """Register the connector endpoints (before the catch-all 404 route)."""

    def table_of(request: web.Request) -> TableMeta | web.Response:
        db_name, tbl_name = request.match_info["db"], request.match_info["table"]
        require(request, SELECT, db_name, tbl_name)
        catalog = server.engine.catalog
        if catalog.get_database(db_name) is None:
            return _common_error(f"unknown database, database={db_name}")
        table = catalog.get_table(db_name, tbl_name)
        if table is None:
            return _common_error(f"table not found, tableName={tbl_name}")
        return table

    async def table_schema(request: web.Request) -> web.Response:
        table = table_of(request)
        if isinstance(table, web.Response):
            return table
        return _ok({"properties": schema_properties(table), "keysType": table.keys_type.value,
                    "status": 200})

    async def backends(request: web.Request) -> web.Response:
        alive_only = request.query.get("is_alive", "false").strip().lower() == "true"
        port = request.url.port or 8030  # embedded backends: this listener serves their loads
        flight = server.flight_port()
        out = [{"ip": b.host, "http_port": port, "is_alive": b.alive,
                "arrow_flight_sql_port": flight}
               for b in server.engine.catalog.backends() if b.alive or not alive_only]
        return _ok({"backends": out})

    async def table_query_plan(request: web.Request) -> web.Response:
        table = table_of(request)
        if isinstance(table, web.Response):
            return table
        raw = await request.text()
        if not raw.strip():
            return _bad_request("POST body must contains [sql] root object")
        try:
            body = json.loads(raw)
        except ValueError:
            return _bad_request(f"malformed json: {raw}")
        sql = body.get("sql") if isinstance(body, dict) else None
        if not isinstance(sql, str) or not sql.strip():
            return _bad_request("POST body must contains [sql] root object")
        access = request.get(ACCESS_KEY)
        user = access.identity.name if access is not None else "root"
        try:
            data = await asyncio.to_thread(query_plan, server, request.match_info["db"], table,
                                           sql, user)
        except QueryPlanError as e:
            return _ok({"status": e.status, "exception": e.message})
        return _ok(data)

    app.router.add_get("/api/backends", backends)
    app.router.add_get("/api/{db}/{table}/_schema", table_schema)
    app.router.add_route("GET", "/api/{db}/{table}/_query_plan", table_query_plan)
    app.router.add_route("POST", "/api/{db}/{table}/_query_plan", table_query_plan)
