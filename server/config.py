"""Server configuration: the only reader of `conf/shaledb.toml`.

`load_config(path, overrides)` returns a frozen `Config` whose defaults equal the shipped file;
command-line flags override file values. Lower layers receive plain arguments from it, never
the object itself.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from server.audit import AuditSettings, delete_age_seconds
from storage.compaction.config import CompactionConfig

DEFAULT_CONF = Path(__file__).resolve().parent.parent / "conf" / "shaledb.toml"


@dataclass(frozen=True, slots=True)
class Config:
    host: str = "127.0.0.1"
    query_port: int = 9030
    http_port: int = 8030
    # Arrow Flight SQL (server/flight_sql/): -1 = off, as in Doris; 0 = pick a free port
    arrow_flight_sql_port: int = -1
    # serve the Flight SQL port over TLS (grpc+tls) with the MySQL port's certificate and key
    arrow_flight_sql_tls: bool = False
    # Flight SQL bearer tokens: valid this long after the login (Doris 3's name; Doris 2.1's
    # arrow_flight_token_alive_time is the same 3 days in minutes), at most this many kept
    arrow_flight_token_alive_time_second: int = 4320 * 60
    arrow_flight_token_cache_size: int = 512
    # Flight calls served at once (each on a gRPC thread) and waiting; past both: UNAVAILABLE
    arrow_flight_sql_max_calls: int = 64
    arrow_flight_sql_call_queue_size: int = 256
    worker_threads: int = 0
    qe_max_connection: int = 1024
    # TLS on the MySQL port (server/tls.py): a self-signed pair under <data_dir>/ssl unless both
    # paths are set (relative paths are against the data dir)
    enable_ssl: bool = True
    ssl_certificate: str = ""
    ssl_private_key: str = ""
    require_secure_transport: bool = False
    enable_https: bool = False
    data_dir: str = "./shaledb-data"
    backends: int = 3
    # decoded-page cache: bytes ("2G", "512M", "1048576") or a share of memory ("20%"); "0" = off
    storage_page_cache_limit: str = "20%"
    # segment metadata cache (storage/segment/meta_cache.py): segments, % of physical memory
    segment_cache_capacity: int = 1000000
    segment_cache_memory_percentage: int = 2
    log_level: str = "INFO"
    # [compaction] and [load]: Doris BE tunables, passed to the storage engine as one object
    compaction: CompactionConfig = field(default_factory=CompactionConfig)
    # [load] import_dir / export_dir: where local() reads and OUTFILE / EXPORT write
    # (executor/file_dirs.py); "" = <data_dir>/import, <data_dir>/export; relative = under data_dir
    import_dir: str = ""
    export_dir: str = ""
    # [log] audit_*: fe.audit.log rotation and retention (server/audit.py), Doris' fe.conf names
    audit: AuditSettings = field(default_factory=AuditSettings)

    @property
    def workers(self) -> int:
        return self.worker_threads or (os.cpu_count() or 2)


_SECTIONS = {
    ("server", "host"): "host",
    ("server", "query_port"): "query_port",
    ("server", "http_port"): "http_port",
    ("server", "arrow_flight_sql_port"): "arrow_flight_sql_port",
    ("server", "arrow_flight_sql_tls"): "arrow_flight_sql_tls",
    ("server", "arrow_flight_token_alive_time_second"): "arrow_flight_token_alive_time_second",
    ("server", "arrow_flight_token_cache_size"): "arrow_flight_token_cache_size",
    ("server", "arrow_flight_sql_max_calls"): "arrow_flight_sql_max_calls",
    ("server", "arrow_flight_sql_call_queue_size"): "arrow_flight_sql_call_queue_size",
    ("server", "worker_threads"): "worker_threads",
    ("server", "qe_max_connection"): "qe_max_connection",
    ("server", "enable_ssl"): "enable_ssl",
    ("server", "ssl_certificate"): "ssl_certificate",
    ("server", "ssl_private_key"): "ssl_private_key",
    ("server", "require_secure_transport"): "require_secure_transport",
    ("server", "enable_https"): "enable_https",
    ("storage", "data_dir"): "data_dir",
    ("storage", "backends"): "backends",
    ("storage", "storage_page_cache_limit"): "storage_page_cache_limit",
    ("storage", "segment_cache_capacity"): "segment_cache_capacity",
    ("storage", "segment_cache_memory_percentage"): "segment_cache_memory_percentage",
    ("log", "level"): "log_level",
    ("load", "import_dir"): "import_dir",
    ("load", "export_dir"): "export_dir",
}


# Sections whose keys are CompactionConfig fields under their Doris names.
_COMPACTION_SECTIONS = ("compaction", "load")


class ConfigError(ValueError):
    pass


def _compaction_value(conf_path: Path, section: str, key: str, value: Any) -> Any:
    default = getattr(CompactionConfig(), key, None)
    if key not in CompactionConfig.__dataclass_fields__:
        raise ConfigError(f"{conf_path}: unknown setting [{section}] {key}")
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    else:
        ok = isinstance(value, int) and not isinstance(value, bool)
    if not ok:
        raise ConfigError(f"{conf_path}: setting [{section}] {key} must be "
                          f"{type(default).__name__}, got {value!r}")
    return value


def _audit_value(conf_path: Path, key: str, value: Any) -> Any:
    default = getattr(AuditSettings(), key)
    ok = isinstance(value, type(default)) and not isinstance(value, bool)
    if ok and key == "audit_log_roll_interval":
        ok = value.upper() in ("DAY", "HOUR")
    elif ok and key == "audit_log_delete_age":
        try:
            delete_age_seconds(value)
        except ValueError:
            ok = False
    if not ok:
        expected = {"audit_log_roll_interval": '"DAY" or "HOUR"',
                    "audit_log_delete_age": 'an age like "30d", "12h", "90m" or "60s"'}
        raise ConfigError(f"{conf_path}: setting [log] {key} must be "
                          f"{expected.get(key, type(default).__name__)}, got {value!r}")
    return value


def load_config(path: Path | None = None, overrides: dict[str, Any] | None = None) -> Config:
    """Read `path` (default: conf/shaledb.toml if present), then apply non-None overrides."""
    values: dict[str, Any] = {}
    compaction: dict[str, Any] = {}
    audit: dict[str, Any] = {}
    conf_path = path or (DEFAULT_CONF if DEFAULT_CONF.exists() else None)
    if conf_path is not None:
        try:
            with open(conf_path, "rb") as f:
                doc = tomllib.load(f)
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise ConfigError(f"cannot read config file {conf_path}: {e}") from None
        for section, table in doc.items():
            if not isinstance(table, dict):
                raise ConfigError(f"{conf_path}: [{section}] must be a table")
            for key, value in table.items():
                if section in _COMPACTION_SECTIONS and (section, key) not in _SECTIONS:
                    compaction[key] = _compaction_value(conf_path, section, key, value)
                    continue
                if section == "log" and key in AuditSettings.__dataclass_fields__:
                    audit[key] = _audit_value(conf_path, key, value)
                    continue
                field = _SECTIONS.get((section, key))
                if field is None:
                    raise ConfigError(f"{conf_path}: unknown setting [{section}] {key}")
                values[field] = value
    for key, value in (overrides or {}).items():
        if value is not None:
            values[key] = value
    config = Config()
    types = {f.name: type(getattr(config, f.name)) for f in fields(Config)}
    for key, value in values.items():
        if not isinstance(value, types[key]):
            raise ConfigError(f"setting {key} must be {types[key].__name__}, got {value!r}")
    config = replace(config, **values)
    if compaction:
        config = replace(config, compaction=replace(config.compaction, **compaction))
    if audit:
        config = replace(config, audit=replace(config.audit, **audit))
    from storage.page_cache import parse_limit

    try:
        parse_limit(config.storage_page_cache_limit)
    except ValueError:
        raise ConfigError("setting storage_page_cache_limit must be bytes (with an optional "
                          "K/M/G suffix) or a percentage like \"20%\", got "
                          f"{config.storage_page_cache_limit!r}") from None
    return config
