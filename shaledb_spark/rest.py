"""HTTP calls to a ShaleDB (or Doris) frontend: the connector REST API
(server/connector_api.py: `_schema`, `_query_plan`), `/api/bootstrap` (the MySQL port), and
Stream Load with two-phase commit (`_stream_load`, `_stream_load_2pc`). A load's body is
streamed from a generator with chunked transfer encoding, so a task never holds its whole
partition in memory: on an `http.client` connection of its own, each chunk's size line and
its bytes sent as they are (urllib3 copies every chunk into a new `bytes` to frame it, a
copy of the task's whole body on the task's critical path: docs/performance.md, spark14b)."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterable
from typing import Any

import urllib3

from shaledb_spark.options import ConnectorOptions

CONNECT_TIMEOUT_S = 30
READ_TIMEOUT_S = 3600
_POOL = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT_S,
                                                                   read=READ_TIMEOUT_S))


class ShaleDBError(RuntimeError):
    """The server refused a request; the message carries its Doris JSON reason."""


def _headers(opts: ConnectorOptions, extra: dict[str, str] | None = None) -> dict[str, str]:
    headers = urllib3.make_headers(basic_auth=f"{opts.user}:{opts.password}")
    headers.update(extra or {})
    return headers


def _json(resp: Any, what: str) -> dict[str, Any]:
    return _parsed(resp.status, resp.data, what)


def _parsed(status: int, data: bytes, what: str) -> dict[str, Any]:
    try:
        body = json.loads(data.decode() or "{}")
    except ValueError:
        raise ShaleDBError(f"{what}: HTTP {status}: {data[:200]!r}") from None
    if status != 200:
        raise ShaleDBError(f"{what}: HTTP {status}: {body}")
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


def put_chunked(host: str, port: int, path: str, headers: dict[str, str],
                body: Iterable[Any]) -> tuple[int, bytes]:
    """PUT `body` (bytes-like chunks, e.g. pyarrow Buffers) with chunked transfer encoding,
    no chunk copied: its size line, then the chunk itself. Returns (status, response body).
    A server that answers before the body's end (a refused load) and closes the connection
    still has its answer read, as urllib3 does."""
    conn = http.client.HTTPConnection(host, port, timeout=CONNECT_TIMEOUT_S)
    try:
        conn.connect()
        assert conn.sock is not None
        conn.sock.settimeout(READ_TIMEOUT_S)
        # size lines are small writes between large ones: no Nagle wait for the last ack
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.putrequest("PUT", path, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        sock = conn.sock
        try:
            end = b""
            for chunk in body:
                size = len(memoryview(chunk))
                if size:  # an empty chunk would end the body
                    sock.sendall(b"%s%x\r\n" % (end, size))
                    sock.sendall(chunk)
                    end = b"\r\n"
            sock.sendall(end + b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server refused the load mid-body: its answer says why
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def stream_load(opts: ConnectorOptions, table: str, label: str, body: Iterable[Any],
                headers: dict[str, str]) -> dict[str, Any]:
    """One two-phase Stream Load of `body` (bytes-like chunks) into `opts.db`.`table`:
    returns Doris' result JSON (its TxnId). Raises ShaleDBError unless the load
    precommitted."""
    h = _headers(opts, {"label": label, "two_phase_commit": "true", **headers})
    status, data = put_chunked(opts.host, opts.http_port,
                               f"/api/{opts.db}/{table}/_stream_load", h, body)
    result = _parsed(status, data, "stream load")
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
