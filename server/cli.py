"""Command line: `shaledb serve [--data-dir DIR] [--port P] [--http-port H] [--backends N] [--conf FILE]`.

argparse (standard library) is enough for our few flags. `python -m server` with no command
runs `serve`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from server.config import ConfigError, load_config


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="shaledb", description="ShaleDB: a Doris-compatible analytic SQL server")
    sub = parser.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="run the server (MySQL protocol + HTTP)")
    serve.add_argument("--conf", type=Path, help="config file (default: conf/shaledb.toml)")
    serve.add_argument("--data-dir", help="data directory (default: ./shaledb-data)")
    serve.add_argument("--host", help="address to bind (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, help="MySQL protocol port (default 9030; 0 = pick a free one)")
    serve.add_argument("--http-port", type=int, help="HTTP port (default 8030; 0 = pick a free one)")
    serve.add_argument("--backends", type=int, help="embedded backends created on first start (default 3)")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in ("serve", "-h", "--help"):
        argv.insert(0, "serve")  # `shaledb --port 0` / `python -m server` mean `serve`
    args = build_parser().parse_args(argv)
    if args.command in (None, "serve"):
        from server.app import serve  # noqa: PLC0415 - keep `--help` fast

        overrides = {
            "data_dir": getattr(args, "data_dir", None),
            "host": getattr(args, "host", None),
            "query_port": getattr(args, "port", None),
            "http_port": getattr(args, "http_port", None),
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
