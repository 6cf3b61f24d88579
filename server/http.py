"""HTTP listener (Doris FE http_port, 8030): health, bootstrap and Prometheus metrics.

Runs on the same event loop as the MySQL listener (aiohttp, a well-kept HTTP server, rather
than a hand-written one). Stream Load (`PUT /api/{db}/{table}/_stream_load`) and the REST admin
endpoints arrive with the loading and operations issues; this module is where they go.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from aiohttp import web

from storage.group_commit import committer_for

if TYPE_CHECKING:
    from server.app import ShaleServer


def build_app(server: ShaleServer) -> web.Application:
    async def health(_: web.Request) -> web.Response:
        body = {"status": "OK", "msg": "Success",
                "data": {"online_backend_num": len(server.engine.catalog.backends()),
                         "total_backend_num": len(server.engine.catalog.backends())}}
        return web.json_response(body)

    async def bootstrap(_: web.Request) -> web.Response:
        return web.json_response({"code": 0, "msg": "success",
                                  "data": {"replayedJournalId": 0, "queryPort": server.mysql_port,
                                           "rpcPort": 0, "version": "shaledb-0.1.0"}})

    async def metrics(_: web.Request) -> web.Response:
        s = server.stats
        lines = [
            "# HELP doris_fe_connection_total Connections accepted since start.",
            "# TYPE doris_fe_connection_total counter",
            f"doris_fe_connection_total {s.connections_total}",
            "# HELP doris_fe_query_total Queries received since start.",
            "# TYPE doris_fe_query_total counter",
            f"doris_fe_query_total {s.queries_total}",
            "# HELP shaledb_insert_fast_path_total INSERT VALUES statements loaded by the literal scanner.",
            "# TYPE shaledb_insert_fast_path_total counter",
            f"shaledb_insert_fast_path_total {s.insert_fast_path_total}",
            "# HELP shaledb_group_commit_loads_total Shared loads written by group commit.",
            "# TYPE shaledb_group_commit_loads_total counter",
            f"shaledb_group_commit_loads_total {committer_for(server.engine).loads}",
            "# HELP shaledb_backends Embedded backends.",
            "# TYPE shaledb_backends gauge",
            f"shaledb_backends {len(server.engine.catalog.backends())}",
        ]
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")

    async def not_found(request: web.Request) -> web.Response:
        return web.Response(status=404, text=json.dumps({"status": "FAILED", "msg": f"no such API: {request.path}"}),
                            content_type="application/json")

    app = web.Application()
    app.router.add_get("/api/health", health)
    app.router.add_get("/api/bootstrap", bootstrap)
    app.router.add_get("/metrics", metrics)
    app.router.add_route("*", "/{tail:.*}", not_found)
    return app
