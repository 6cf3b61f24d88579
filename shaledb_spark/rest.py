"""HTTP calls to a ShaleDB (or Doris) frontend: the connector REST API
(server/connector_api.py: `_schema`, `_query_plan`), `/api/bootstrap` (the MySQL port), and
Stream Load with two-phase commit (`_stream_load`, `_stream_load_2pc`). urllib3 streams a
load's body from a generator with chunked transfer encoding, so a task never holds its whole
partition in memory."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import urllib3

from shaledb_spark.options import ConnectorOptions

_POOL = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=30, read=3600))


class ShaleDBError(RuntimeError):
    """The server refused a request; the message carries its Doris JSON reason."""


def _headers(opts: ConnectorOptions, extra: dict[str, str] | None = None) -> dict[str, str]:
    headers = urllib3.make_headers(basic_auth=f"{opts.user}:{opts.password}")
    headers.update(extra or {})
    return headers


def _json(resp: Any, what: str) -> dict[str, Any]:
    try:
        body = json.loads(resp.data.decode() or "{}")
    except ValueError:
        raise ShaleDBError(f"{what}: HTTP {resp.status}: {resp.data[:200]!r}") from None
    if resp.status != 200:
        raise ShaleDBError(f"{what}: HTTP {resp.status}: {body}")
    return body


def _data(opts: ConnectorOptions, body: dict[str, Any], what: str) -> Any:
    if body.get("code") != 0:
        raise ShaleDBError(f"{what} of {opts.db}.{opts.table}: {body.get('data')}")
    return body["data"]


def table_schema(opts: ConnectorOptions) -> list[dict[str, Any]]:
    """The table's columns as `_schema` lists them (Doris' TableSchemaAction)."""
    resp = _POOL.request("GET", f"{opts.base_url}/api/{opts.db}/{opts.table}/_schema",
                         headers=_headers(opts))
    data = _data(opts, _json(resp, "schema"), "schema")
    return list(data["properties"])


def query_plan(opts: ConnectorOptions, sql: str) -> dict[str, Any]:
    """`_query_plan` of a single-table query: `{tablet_id: {routings, version, ..}}`."""
    resp = _POOL.request("POST", f"{opts.base_url}/api/{opts.db}/{opts.table}/_query_plan",
                         body=json.dumps({"sql": sql}).encode(),
                         headers=_headers(opts, {"Content-Type": "application/json"}))
    data = _data(opts, _json(resp, "query plan"), "query plan")
    if data.get("status") != 200:
        raise ShaleDBError(f"query plan of {opts.db}.{opts.table}: {data.get('exception')}")
    return dict(data["partitions"])


def advertised_flight_port(opts: ConnectorOptions) -> int | None:
    """The Arrow Flight SQL port `/api/backends` advertises (a ShaleDB field), None if off or
    not advertised (Doris' own BackendsAction has no such field)."""
    resp = _POOL.request("GET", f"{opts.base_url}/api/backends?is_alive=true",
                         headers=_headers(opts))
    backends = _data(opts, _json(resp, "backends"), "backends").get("backends") or []
    ports = [int(b.get("arrow_flight_sql_port", -1)) for b in backends]
    return ports[0] if ports and ports[0] > 0 else None


def query_port(opts: ConnectorOptions) -> int:
    """The MySQL port: the `query_port` option, else the frontend's `/api/bootstrap`."""
    if opts.query_port is not None:
        return opts.query_port
    resp = _POOL.request("GET", f"{opts.base_url}/api/bootstrap", headers=_headers(opts))
    return int(_json(resp, "bootstrap")["data"]["queryPort"])


def stream_load(opts: ConnectorOptions, table: str, label: str, body: Iterable[bytes],
                headers: dict[str, str]) -> dict[str, Any]:
    """One two-phase Stream Load of `body` into `opts.db`.`table`: returns Doris' result
    JSON (its TxnId). Raises ShaleDBError unless the load precommitted."""
    h = _headers(opts, {"label": label, "two_phase_commit": "true", **headers})
    resp = _POOL.request("PUT", f"{opts.base_url}/api/{opts.db}/{table}/_stream_load",
                         body=body, headers=h, chunked=True, preload_content=True)
    result = _json(resp, "stream load")
    if result.get("Status") != "Success":
        raise ShaleDBError(f"stream load {label} into {opts.db}.{table} failed: "
                           f"{result.get('Status')}: {result.get('Message')} "
                           f"{result.get('ErrorURL', '')}".rstrip())
    return result


def two_phase(opts: ConnectorOptions, table: str, operation: str, *, txn_ids: Iterable[int] = (),
              label: str = "") -> dict[str, Any]:
    """`_stream_load_2pc`: commit or abort txns (several ids: one atomic commit, a ShaleDB
    extension) or the txn of a label."""
    extra = {"txn_operation": operation}
    ids = ",".join(str(t) for t in txn_ids)
    if ids:
        extra["txn_id"] = ids
    else:
        extra["label"] = label
    resp = _POOL.request("PUT", f"{opts.base_url}/api/{opts.db}/{table}/_stream_load_2pc",
                         headers=_headers(opts, extra))
    return _json(resp, f"two-phase {operation}")
