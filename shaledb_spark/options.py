"""The data source's options: ours (`table`, `fenodes`, `user`, `password`, ...) and
spark-doris-connector's names for the same things, so a Doris job runs unchanged.

| ours                 | spark-doris-connector          | meaning                                  |
|----------------------|--------------------------------|------------------------------------------|
| table                | doris.table.identifier         | `db.table`                               |
| fenodes              | doris.fenodes                  | `host:http_port[,..]` (first one used)   |
| user / password      | doris.user / doris.password    | basic auth and MySQL login               |
| read_field           | doris.read.field               | columns to read, comma separated         |
| filter_query         | doris.filter.query             | a SQL condition added to every read      |
| tablet_size          | doris.request.tablet.size      | tablets per Spark input partition (1)    |
| label_prefix         | doris.sink.label.prefix        | Stream Load label prefix (`spark`)       |
| sink.properties.X    | doris.sink.properties.X        | Stream Load header X (e.g. `format`)     |
| query_port           | doris.query.port               | MySQL port (default: /api/bootstrap's)   |
| arrow_flight_sql_port| doris.read.arrow-flight-sql.port | Flight SQL port: reads use it  |
| read_mode            | doris.read.mode                | `arrow` (Flight SQL) / `thrift` (MySQL)  |
| bitmap_to_string     | doris.read.bitmap-to-string    | read BITMAP as `1,2,3` text (StringType) |
| bitmap_to_base64     | doris.read.bitmap-to-base64    | read BITMAP as base64 text (StringType)  |
| write_fields         | doris.write.fields             | load `columns` (`a,b,bm=to_bitmap(b)`)   |
| partitions           | doris.sink.properties.partitions | load/overwrite only these partitions |
| staging_ttl_seconds  |                                | overwrite: drop older staging tables     |

Reads go through Arrow Flight SQL when a Flight port is given (`read_mode` then defaults to
`arrow`; Doris' jobs set both). Without a port, `read_mode=arrow` and an unset `read_mode`
ask the server: `/api/backends` advertises its `arrow_flight_sql_port` (reader.py); the
former fails when Flight SQL is off there, the latter reads over the MySQL protocol then.
`read_mode=thrift` (Doris' default) always reads over the MySQL protocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

_ALIASES = {
    "doris.table.identifier": "table",
    "doris.fenodes": "fenodes",
    "doris.user": "user",
    "doris.request.auth.user": "user",
    "doris.password": "password",
    "doris.request.auth.password": "password",
    "doris.read.field": "read_field",
    "doris.filter.query": "filter_query",
    "doris.request.tablet.size": "tablet_size",
    "doris.sink.label.prefix": "label_prefix",
    "doris.query.port": "query_port",
    "doris.read.arrow-flight-sql.port": "arrow_flight_sql_port",
    "doris.read.mode": "read_mode",
    "doris.read.bitmap-to-string": "bitmap_to_string",
    "doris.read.bitmap-to-base64": "bitmap_to_base64",
    "doris.write.fields": "write_fields",
}
_SINK_PROPS = ("doris.sink.properties.", "sink.properties.")


class OptionError(ValueError):
    """A missing or malformed option (raised on the driver, before any task runs)."""


@dataclass(frozen=True)
class ConnectorOptions:
    db: str
    table: str
    host: str
    http_port: int
    user: str = "root"
    password: str = ""
    read_fields: tuple[str, ...] = ()
    filter_query: str = ""
    tablet_size: int = 1
    label_prefix: str = "spark"
    query_port: int | None = None
    # Arrow Flight SQL port: set means reads stream Arrow batches over Flight (fetch.py)
    flight_port: int | None = None
    # `arrow`, `thrift` or `auto` (unset: Flight when the server advertises it)
    read_mode: str = "auto"
    sink_properties: dict[str, str] = field(default_factory=dict)
    # BITMAP read as text: "" (binary, the serialized value), "string" or "base64"
    bitmap_text: str = ""
    # the load's `columns` list (doris.write.fields or the sink property `columns`)
    write_columns: str = ""
    # overwrite mode: replace only these partitions (empty: the whole table)
    partitions: tuple[str, ...] = ()
    # overwrite mode: staging tables older than this are a dead driver's, dropped (writer.py)
    staging_ttl_seconds: int = 259200

    @property
    def write_sources(self) -> tuple[str, ...]:
        """The source (file) column names of `write_columns`: its entries without `=`."""
        return tuple(c.strip().strip("`") for c in _split_columns(self.write_columns)
                     if "=" not in c and c.strip())

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.http_port}"


def _split_columns(columns: str) -> list[str]:
    """A `columns` list split at its top-level commas (an expression may hold commas)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(columns):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(columns[start:i])
            start = i + 1
    parts.append(columns[start:])
    return [p.strip() for p in parts if p.strip()]


def _flag(opts: dict[str, str], name: str) -> bool:
    value = opts.get(name, "false").strip().lower()
    if value not in ("true", "false"):
        raise OptionError(f"option {name} must be true or false, got {value!r}")
    return value == "true"


def parse_options(raw: Mapping[str, str]) -> ConnectorOptions:
    """Normalise Spark's (case-insensitive) options into a ConnectorOptions."""
    opts: dict[str, str] = {}
    sink: dict[str, str] = {}
    for key, value in raw.items():
        low = key.lower()
        prefix = next((p for p in _SINK_PROPS if low.startswith(p)), None)
        if prefix is not None:
            sink[key[len(prefix):]] = value
            continue
        opts[_ALIASES.get(low, low)] = value
    ident = opts.get("table", "")
    if ident.count(".") != 1 or not all(ident.split(".")):
        raise OptionError("option `table` (doris.table.identifier) must be `db.table`, "
                          f"got {ident!r}")
    fenodes = opts.get("fenodes", "")
    first = fenodes.split(",")[0].strip()
    host, _, port = first.rpartition(":")
    if not host or not port.isdigit():
        raise OptionError("option `fenodes` (doris.fenodes) must be `host:http_port`, "
                          f"got {fenodes!r}")
    db, table = ident.split(".")
    try:
        tablet_size = int(opts.get("tablet_size", "1"))
        query_port = int(opts["query_port"]) if opts.get("query_port") else None
        flight_port = (int(opts["arrow_flight_sql_port"])
                       if opts.get("arrow_flight_sql_port") else None)
        staging_ttl = int(opts.get("staging_ttl_seconds", "259200"))
    except ValueError as e:
        raise OptionError(f"invalid numeric option: {e}") from None
    if tablet_size < 1:
        raise OptionError("doris.request.tablet.size must be at least 1")
    read_mode = opts.get("read_mode", "arrow" if flight_port else "auto").strip().lower()
    if read_mode not in ("arrow", "thrift", "auto"):
        raise OptionError(f"doris.read.mode must be `arrow` or `thrift`, got {read_mode!r}")
    if read_mode == "thrift":
        flight_port = None  # the job asked for the MySQL-protocol read explicitly
    fields = tuple(f.strip() for f in opts.get("read_field", "").split(",") if f.strip())
    bitmap_text = ("string" if _flag(opts, "bitmap_to_string") else
                   "base64" if _flag(opts, "bitmap_to_base64") else "")
    lowered = {k.lower(): k for k in sink}
    write_columns = opts.get("write_fields", "") or sink.pop(lowered.get("columns", ""), "")
    named = opts.get("partitions", "") or sink.get(lowered.get("partitions", ""), "")
    partitions = tuple(p.strip().strip("`") for p in named.split(",") if p.strip())
    if partitions:  # every load of the job names them (rows of other partitions are refused)
        sink[lowered.get("partitions", "partitions")] = ",".join(partitions)
    return ConnectorOptions(db=db, table=table, host=host, http_port=int(port),
                            user=opts.get("user", "root"), password=opts.get("password", ""),
                            read_fields=fields, filter_query=opts.get("filter_query", ""),
                            tablet_size=tablet_size,
                            label_prefix=opts.get("label_prefix", "spark"),
                            query_port=query_port, flight_port=flight_port,
                            read_mode=read_mode,
                            sink_properties=sink, bitmap_text=bitmap_text,
                            write_columns=write_columns, partitions=partitions,
                            staging_ttl_seconds=staging_ttl)
