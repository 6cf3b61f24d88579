"""Command line:
`shaledb serve [--data-dir DIR] [--port P] [--http-port H] [--arrow-flight-sql-port F]
[--backends N] [--conf FILE]`,
`shaledb load FILE db.table [...]` (server/load_cli.py), `shaledb warm-up` (server/warm_up.py)
and `shaledb --version`.

argparse (standard library) is enough for our few flags. `python -m server` with no command
runs `serve`.
"""

from __future__ import annotations

import argparse
import sys
from importlib import metadata
from pathlib import Path

from server.config import ConfigError, load_config


def version() -> str:
    try:
        return metadata.version("shaledb")
    except metadata.PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shaledb", description="ShaleDB: a Doris-compatible analytic SQL server"
    )
    parser.add_argument("--version", action="version", version=f"shaledb {version()}")
    sub = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND")
    serve = sub.add_parser("serve", help="run the server (MySQL protocol + HTTP)",
                           description="Run the server (MySQL protocol + HTTP).")
    serve.add_argument("--conf", type=Path, help="config file (default: conf/shaledb.toml)")
    serve.add_argument("--data-dir", help="data directory (default: ./shaledb-data)")
    serve.add_argument("--host", help="address to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=int,
                       help="MySQL protocol port (default 9030; 0 = pick a free one)")
    serve.add_argument("--http-port", type=int,
                       help="HTTP port (default 8030; 0 = pick a free one)")
    serve.add_argument("--arrow-flight-sql-port", type=int,
                       help="Arrow Flight SQL port (default: off; 0 = pick a free one)")
    serve.add_argument("--backends", type=int,
                       help="embedded backends created on first start (default 3)")
    load = sub.add_parser(
        "load", help="Stream Load a file into a table in chunks, with progress; resumable",
        description="Stream Load FILE into db.table over HTTP in labelled chunks (PREFIX_1, "
                    "PREFIX_2, ...), with a progress bar; rerunning resumes without loading a "
                    "chunk twice.")
    from server.load_cli import add_arguments

    add_arguments(load)
    sub.add_parser(
        "warm-up", help="compile the load path's kernels into the cache (scripts/run.sh runs it)",
        description="Compile the numba kernels of the load path into numba's on-disk cache with "
                    "small loads on a throwaway data dir, so a fresh install's first Stream Load "
                    "does not compile them inside the server (time and peak memory).")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("serve", "load", "warm-up", "-h", "--help", "--version"):
        argv.insert(0, "serve")  # `shaledb --port 0` / `python -m server` mean `serve`
    args = build_parser().parse_args(argv)
    if args.command == "load":
        from server.load_cli import run

        return run(args)
    if args.command == "warm-up":
        from server.warm_up import run as warm_up

        return warm_up()
    if args.command in (None, "serve"):
        from server.app import serve  # keep `--help` fast

        overrides = {
            "data_dir": getattr(args, "data_dir", None),
            "host": getattr(args, "host", None),
            "query_port": getattr(args, "port", None),
            "http_port": getattr(args, "http_port", None),
            "arrow_flight_sql_port": getattr(args, "arrow_flight_sql_port", None),
            "backends": getattr(args, "backends", None),
        }
        if overrides["backends"] is not None and overrides["backends"] < 1:
            print("shaledb: --backends must be at least 1", file=sys.stderr)
            return 2
        try:
            config = load_config(getattr(args, "conf", None), overrides)
        except ConfigError as e:
            print(f"shaledb: {e}", file=sys.stderr)
            return 2
        return serve(config)
    return 2
