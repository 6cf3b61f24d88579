"""HTTP listener (Doris FE http_port, 8030): health, bootstrap and Prometheus metrics.

Every endpoint but `/metrics` (open in Doris too) takes HTTP basic auth against the MySQL
port's accounts; admin routes need ADMIN_PRIV (server/privileges/http_auth.py).
Runs on the same event loop as the MySQL listener (aiohttp, a well-kept HTTP server, rather
than a hand-written one). Stream Load (`PUT /api/{db}/{table}/_stream_load`) is served from
server/stream_load.py; the REST admin endpoints arrive with the operations issue. The
embedded backends' compaction actions (Doris BE `/api/compaction/*`) are served here too, from
server/compaction_api.py.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

from aiohttp import web

from server import compaction_api, connector_api, load_status, metrics, stream_load
from server.privileges.http_auth import auth_middleware, requires
from server.privileges.model import ADMIN

if TYPE_CHECKING:
    from server.services import HttpServices


def build_app(server: HttpServices) -> web.Application:
    async def health(_: web.Request) -> web.Response:
        body = {"status": "OK", "msg": "Success",
                "data": {"online_backend_num": len(server.engine.catalog.backends()),
                         "total_backend_num": len(server.engine.catalog.backends())}}
        return web.json_response(body)

    async def bootstrap(_: web.Request) -> web.Response:
        return web.json_response({"code": 0, "msg": "success",
                                  "data": {"replayedJournalId": 0, "queryPort": server.mysql_port(),
                                           "rpcPort": 0, "version": "shaledb-0.1.0"}})

    registry = metrics.registry_for(server)

    async def scrape(_: web.Request) -> web.Response:
        # Scores and version counts read every tablet's rowsets: not on the event loop.
        body = await asyncio.to_thread(metrics.exposition, registry)
        return web.Response(body=body, headers={"Content-Type": metrics.CONTENT_TYPE})

    @requires(ADMIN)
    async def colocate(_: web.Request) -> web.Response:
        """GET /api/colocate: the colocate groups (Doris ColocateMetaService)."""
        from sql.show.statements import show_colocation_groups

        r = show_colocation_groups(server.engine.catalog)
        return web.json_response({"msg": "success", "code": 0,
                                  "data": [dict(zip(r.names, row)) for row in r.rows], "count": 0})

    @requires(ADMIN)
    async def group_stable(request: web.Request) -> web.Response:
        """POST marks a group stable, DELETE unstable: ?db_id=..&group_id=.."""
        from storage.catalog.service import set_group_stable
        from storage.errors import ShaleError

        try:
            db_id, group_id = int(request.query["db_id"]), int(request.query["group_id"])
            set_group_stable(server.engine, db_id, group_id, request.method == "POST")
        except (KeyError, ValueError, ShaleError) as e:
            msg = getattr(e, "detail", None) or f"invalid parameter: {e}"
            return web.json_response({"msg": msg, "code": 1, "data": None, "count": 0}, status=400)
        return web.json_response({"msg": "success", "code": 0, "data": None, "count": 0})

    @requires(ADMIN)
    async def debug_point(request: web.Request) -> web.Response:
        """POST /api/debug_point/add/<name>[?execute=n] | remove/<name> | clear (Doris' FE debug
        points; a test hook: storage/faults.py)."""
        from storage import faults

        if not faults.debug_points_enabled():
            return web.json_response({"msg": "Disable debug points. please check "
                                      "Config::enable_debug_points", "code": 1, "data": None,
                                      "count": 0}, status=400)
        op, name = request.match_info["op"], request.match_info.get("name", "")
        execute = request.query.get("execute", "")
        if op == "add" and name and (not execute or execute.isdigit()):
            faults.add_debug_point(name, int(execute) if execute else None)
        elif op == "remove" and name:
            faults.remove_debug_point(name)
        elif op == "clear" and not name:
            faults.clear_debug_points()
        else:
            return web.json_response({"msg": f"invalid debug point request: {request.path}",
                                      "code": 1, "data": None, "count": 0}, status=400)
        return web.json_response({"msg": "OK", "code": 0, "data": None, "count": 0})

    async def not_found(request: web.Request) -> web.Response:
        body = {"status": "FAILED", "msg": f"no such API: {request.path}"}
        return web.Response(status=404, text=json.dumps(body), content_type="application/json")

    # every route but /metrics needs HTTP basic auth (server/privileges/http_auth.py)
    app = web.Application(middlewares=[auth_middleware(server.privileges)])
    app.router.add_get("/api/health", health)
    app.router.add_get("/api/bootstrap", bootstrap)
    app.router.add_get("/metrics", scrape)
    app.router.add_get("/api/colocate", colocate)
    app.router.add_post("/api/colocate/group_stable", group_stable)
    app.router.add_delete("/api/colocate/group_stable", group_stable)
    app.router.add_post("/api/debug_point/{op}", debug_point)
    app.router.add_post("/api/debug_point/{op}/{name}", debug_point)
    compaction_api.add_routes(app, server.engine)
    stream_load.add_routes(app, server)
    load_status.add_routes(app, server)  # _stream_load_2pc, get_load_state, error logs
    connector_api.add_routes(app, server)  # _schema, backends, _query_plan (connectors)
    app.router.add_route("*", "/{tail:.*}", not_found)
    return app
