"""Stream Load from tests with the real curl binary, as Doris users run it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path


def curl_load(server, db: str, table: str, path: Path, *headers: str, user: str = "root:",
              ) -> tuple[int, int, dict | str]:
    """(HTTP status, bytes curl uploaded, parsed JSON body or raw text) of one Stream Load."""
    args = ["curl", "-s", "--location-trusted", "-u", user, "-H", "Expect:100-continue"]
    for h in headers:
        args += ["-H", h]
    args += ["-T", str(path), "-w", "\n%{http_code} %{size_upload}",
             f"http://127.0.0.1:{server.http_port}/api/{db}/{table}/_stream_load"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=120, check=True).stdout
    body, _, tail = out.rpartition("\n")
    code, uploaded = tail.split()
    try:
        parsed: dict | str = json.loads(body)
    except ValueError:
        parsed = body
    return int(code), int(float(uploaded)), parsed
