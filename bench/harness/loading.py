"""Loading a data set into a running server the way users load, and waiting for compaction.

- Stream Load (`PUT /api/{db}/{table}/_stream_load`, Doris' headers: label, column_separator,
  format, basic auth), one load per chunk of `chunk_rows` rows, each chunk `|`-separated CSV
  written by pyarrow; what `curl -T chunk.csv` per file does, through `requests`.
- Multi-row INSERT through pymysql, `batch_rows` rows per statement (`--load insert`).
- `settle`: polls SHOW TABLETS (VersionCount per tablet) and the compaction REST endpoint
  `/api/compaction/run_status` (server/compaction_api.py) until no compaction runs and the
  version counts stayed unchanged for longer than the quiet-tablet delay.
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
import time
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.csv as pacsv
import requests

AUTH = ("root", "")


@dataclass
class LoadStats:
    table: str
    rows: int
    seconds: float
    loads: int  # Stream Loads or INSERT statements
    csv_bytes: int = 0

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else float("inf")


def csv_chunk(table: pa.Table) -> bytes:
    # pyarrow's CSV writer does not take string_view (tpchgen-cli's parquet strings)
    schema = pa.schema([pa.field(f.name, pa.string()) if pa.types.is_string_view(f.type) else f
                        for f in table.schema])
    table = table.cast(schema)
    sink = io.BytesIO()
    pacsv.write_csv(table, sink, pacsv.WriteOptions(include_header=False, delimiter="|",
                                                    quoting_style="none"))
    return sink.getvalue()


class StreamLoadError(RuntimeError):
    pass


def stream_load(http_port: int, db: str, name: str, table: pa.Table, chunk_rows: int,
                session: requests.Session | None = None) -> LoadStats:
    """Load `table` into db.name in chunks of `chunk_rows` rows, one labelled Stream Load each.
    The CSV of a chunk is built before its timer starts (a user's files already exist)."""
    http = session or requests.Session()
    url = f"http://127.0.0.1:{http_port}/api/{db}/{name}/_stream_load"
    elapsed, loads, nbytes = 0.0, 0, 0
    for start in range(0, max(table.num_rows, 1), chunk_rows):
        body = csv_chunk(table.slice(start, chunk_rows))
        if not body:
            break
        headers = {"label": f"bench_{name}_{start}_{uuid.uuid4().hex[:8]}",
                   "column_separator": "|", "format": "csv"}
        t0 = time.perf_counter()
        resp = http.put(url, data=body, headers=headers, auth=AUTH, timeout=3600)
        elapsed += time.perf_counter() - t0
        result = resp.json()
        if result.get("Status") != "Success":
            raise StreamLoadError(f"Stream Load into {db}.{name} failed: {result}")
        loads += 1
        nbytes += len(body)
    return LoadStats(name, table.num_rows, elapsed, loads, nbytes)


def _sql_literal(v: object) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (int, float, decimal.Decimal)):
        return str(v)
    if isinstance(v, (dt.date, dt.datetime)):
        return f"'{v.isoformat()}'"
    return "'" + str(v).replace("\\", "\\\\").replace("'", "''") + "'"


def insert(conn, name: str, table: pa.Table, batch_rows: int) -> LoadStats:
    """Multi-row INSERT statements of `batch_rows` rows over one pymysql connection (statement
    text built before the timer starts, as a client with its rows in hand would)."""
    elapsed, loads = 0.0, 0
    with conn.cursor() as cur:
        for start in range(0, table.num_rows, batch_rows):
            rows = zip(*(c.to_pylist() for c in table.slice(start, batch_rows).columns))
            stmt = (f"INSERT INTO {name} VALUES "
                    + ",".join("(" + ",".join(map(_sql_literal, r)) + ")" for r in rows))
            t0 = time.perf_counter()
            cur.execute(stmt)
            elapsed += time.perf_counter() - t0
            loads += 1
    return LoadStats(name, table.num_rows, elapsed, loads)


def version_counts(conn, tables: list[str]) -> list[int]:
    out: list[int] = []
    with conn.cursor() as cur:
        for t in tables:
            cur.execute(f"SHOW TABLETS FROM {t}")
            names = [d[0] for d in cur.description]
            out += [int(r[names.index("VersionCount")]) for r in cur.fetchall()]
    return out


def compaction_running(http_port: int) -> bool:
    resp = requests.get(f"http://127.0.0.1:{http_port}/api/compaction/run_status", auth=AUTH,
                        timeout=60)
    body = resp.json()
    return any(t for dirs in body.values() if isinstance(dirs, dict)
               for ts in dirs.values() for t in ts)


@dataclass
class Settled:
    seconds: float
    versions_before: int  # total versions over all tablets right after the load
    versions_after: int
    timed_out: bool


def settle(conn, http_port: int, tables: list[str], quiet: float,
           timeout: float = 900.0) -> Settled:
    """Wait until no compaction runs and the tablets' version counts did not move for `quiet`
    seconds (set it just above the server's cumulative_compaction_quiet_seconds)."""
    t0 = time.perf_counter()
    first = last = version_counts(conn, tables)
    stable_since = time.perf_counter()
    while (waited := time.perf_counter() - t0) < timeout:
        counts = version_counts(conn, tables)
        if counts != last or compaction_running(http_port):
            last, stable_since = counts, time.perf_counter()
        elif time.perf_counter() - stable_since >= quiet:
            return Settled(waited, sum(first), sum(counts), False)
        time.sleep(0.25)
    return Settled(time.perf_counter() - t0, sum(first), sum(last), True)
