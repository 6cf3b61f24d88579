"""`shaledb load FILE db.table`: Stream Load a file in labelled chunks, with progress, resumable.

Each chunk (server/load_chunks.py) is one `PUT /api/{db}/{table}/_stream_load` under the label
`<prefix>_<n>`, sent with urllib3 and streamed from the file. Loads are idempotent by label:
- a state file (`$XDG_CACHE_HOME/shaledb/load/<hash>.json`, else `~/.cache/...`) records each
  chunk Doris answered `Success` for, with its byte or row-group range, so a rerun of the same
  command skips them without contacting the server;
- the chunk that was in flight when the client died is probed first with an empty body: Doris
  answers `Label Already Exists` / `ExistingJobStatus: FINISHED` if it committed (it is then
  skipped), and "No valid data to load" (nothing loaded, label still free) otherwise;
- a chunk whose label the server already knows (`Label Already Exists`, FINISHED) is skipped,
  so even without the state file no chunk loads twice.
The default label prefix is derived from the file (path, size, mtime) and the table, so
rerunning the same command resumes; pass `--label` to resume after fixing a file in place.

Progress: a tqdm bar on stderr (bytes, rows, MB/s, rows/s) when stderr is a terminal, else one
line per chunk. The summary uses Doris' Stream Load counter names. Exit status: 0 on success,
1 when a chunk fails (Doris' Status and Message on stderr), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.load_chunks import Chunk, ChunkedFile, parse_size

COUNTERS = ("NumberTotalRows", "NumberLoadedRows", "NumberFilteredRows", "NumberUnselectedRows",
            "LoadBytes")
FORMAT_UNSUPPORTED = "format [parquet] is not supported yet"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path, help="the file to load")
    p.add_argument("target", metavar="db.table", help="the table to load into")
    p.add_argument("--format", default=None,
                   help="csv, csv_with_names, json (lines), parquet, orc, arrow (default: from "
                        "the file name, else csv)")
    p.add_argument("--label", dest="label_prefix",
                   help="label prefix; chunk n is labelled PREFIX_n (default: derived from the "
                        "file and the table, so rerunning resumes)")
    p.add_argument("--columns", help="Doris' `columns` header: the file's columns, in order")
    p.add_argument("--column-separator", help="Doris' `column_separator` (default \\t)")
    p.add_argument("-H", "--header", action="append", default=[], metavar="NAME:VALUE",
                   help="any other Stream Load header, e.g. -H max_filter_ratio:0.1 (repeatable)")
    p.add_argument("--host", default="127.0.0.1", help="server address (default 127.0.0.1)")
    p.add_argument("--http-port", type=int, default=8030, help="HTTP port (default 8030)")
    p.add_argument("--user", default="root", help="user (default root)")
    p.add_argument("--password", default="", help="password (default empty)")
    p.add_argument("--chunk-size", default="64MB", help="bytes per chunk (default 64MB)")
    p.add_argument("--timeout", type=float, default=3600.0,
                   help="seconds to wait for one chunk's answer (default 3600)")
    p.add_argument("--state-dir", type=Path,
                   help="where resume state is kept (default ~/.cache/shaledb/load)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar (default: when stderr is a terminal)")


class LoadError(Exception):
    """A chunk failed: Doris' answer is in `body`."""

    def __init__(self, message: str, body: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.body = body or {}


@dataclass
class Totals:
    """Doris' counters summed over chunks, plus what this run did."""

    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    chunks_loaded: int = 0
    chunks_skipped: int = 0
    chunks_unknown: int = 0  # skipped by label without counters (state file lost)
    run_bytes: int = 0  # LoadBytes / loaded rows of the chunks this run sent (for the speed)
    run_rows: int = 0

    def add(self, body: dict[str, Any], this_run: bool) -> None:
        for k in COUNTERS:
            self.counters[k] += int(body.get(k) or 0)
        if this_run:
            self.run_bytes += int(body.get("LoadBytes") or 0)
            self.run_rows += int(body.get("NumberLoadedRows") or 0)


class State:
    """The resume file: finished chunks by index, and the chunk in flight."""

    def __init__(self, path: Path, identity: dict[str, Any]) -> None:
        self.path = path
        self.data: dict[str, Any] = {"identity": identity, "chunks": {}, "in_flight": None}
        if path.exists():
            try:
                loaded = json.loads(path.read_text())
            except ValueError:
                loaded = None
            if isinstance(loaded, dict) and loaded.get("identity", {}).get("label_prefix") == \
                    identity["label_prefix"]:
                self.data = loaded

    @property
    def chunk_size(self) -> int | None:
        return self.data["identity"].get("chunk_size")

    def finished(self, chunk: Chunk) -> dict[str, Any] | None:
        rec = self.data["chunks"].get(str(chunk.index))
        if rec is None:
            return None
        if rec["range"] != chunk.key():
            raise LoadError(f"the file changed since chunk {chunk.index} was loaded under label "
                            f"prefix {self.data['identity']['label_prefix']} (range "
                            f"{rec['range']} now {chunk.key()}); load it under a new --label")
        return rec

    def in_flight(self) -> int | None:
        return self.data.get("in_flight")

    def begin(self, chunk: Chunk) -> None:
        self.data["in_flight"] = chunk.index
        self._save()

    def finish(self, chunk: Chunk, body: dict[str, Any] | None) -> None:
        rec: dict[str, Any] = {"range": chunk.key()}
        if body is not None:
            rec.update({k: body.get(k, 0) for k in (*COUNTERS, "LoadTimeMs", "Label")})
        self.data["chunks"][str(chunk.index)] = rec
        self.data["in_flight"] = None
        self._save()

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1))
        os.replace(tmp, self.path)  # atomic: a kill leaves the old or the new state


def state_dir(explicit: Path | None) -> Path:
    if explicit is not None:
        return explicit
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "shaledb" / "load"


def default_label_prefix(path: Path, db: str, table: str) -> str:
    st = path.stat()
    ident = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{db}.{table}"
    return f"shaledb_load_{hashlib.sha1(ident.encode()).hexdigest()[:16]}"


def guess_format(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    for fmt, exts in (("parquet", (".parquet", ".pq")), ("orc", (".orc",)),
                      ("json", (".json", ".jsonl", ".ndjson")), ("arrow", (".arrow", ".ipc"))):
        if any(s in exts for s in suffixes):
            return fmt
    return "csv"


class StreamLoadClient:
    """PUTs chunks to one table's `_stream_load` endpoint (urllib3, basic auth, no retries: a
    retry is the next run, made safe by the labels)."""

    def __init__(self, args: argparse.Namespace, db: str, table: str) -> None:
        import urllib3  # keep `shaledb --help` fast

        self._urllib3 = urllib3
        self.url = f"http://{args.host}:{args.http_port}/api/{db}/{table}/_stream_load"
        token = base64.b64encode(f"{args.user}:{args.password}".encode()).decode()
        self.auth = {"Authorization": f"Basic {token}"}
        self.pool = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(
            connect=30.0, read=args.timeout))

    def put(self, headers: dict[str, str], length: int, body: Iterator[bytes] | bytes,
            ) -> dict[str, Any]:
        """One Stream Load; Doris' JSON answer (or a LoadError for a non-JSON answer)."""
        all_headers = {**headers, **self.auth, "Content-Length": str(length)}
        url = self.url
        for _ in range(3):  # Doris' FE answers 307 to the BE that takes the load
            try:
                resp = self.pool.request("PUT", url, body=body, headers=all_headers,
                                         redirect=False, preload_content=True)
            except self._urllib3.exceptions.HTTPError as e:
                raise LoadError(f"cannot reach the server at {url}: {e}") from None
            if resp.status in (301, 302, 307, 308) and resp.headers.get("Location"):
                url = resp.headers["Location"]
                continue
            try:
                parsed = json.loads(resp.data)
            except ValueError:
                raise LoadError(f"HTTP {resp.status}: {resp.data[:500]!r}") from None
            if "Status" not in parsed:  # 401/403: Doris' REST envelope {msg, code, data}
                raise LoadError(f"HTTP {resp.status}: {parsed.get('msg')}: "
                                f"{parsed.get('data')}", parsed)
            return dict(parsed)
        raise LoadError(f"too many redirects from {self.url}")


class Progress:
    """A tqdm bar (bytes, with rows and rows/s) or, without a terminal, a line per chunk."""

    def __init__(self, enabled: bool, total_bytes: int, nchunks: int) -> None:
        self.enabled = enabled
        self.nchunks = nchunks
        self.rows = 0
        self.started = time.perf_counter()
        self.bar = None
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total_bytes, unit="B", unit_scale=True, unit_divisor=1024,
                            file=sys.stderr, dynamic_ncols=True, desc="loading",
                            bar_format="{desc} {percentage:3.0f}%|{bar:10}| {n_fmt}/{total_fmt}"
                                       " {rate_fmt}{postfix} {elapsed}")

    def sent(self, nbytes: int, rows: int) -> None:
        self.rows += rows
        if self.bar is not None:
            self.bar.update(nbytes)
            rate = self.rows / max(time.perf_counter() - self.started, 1e-9)
            self.bar.set_postfix_str(f"{self.rows:,} rows, {rate:,.0f} rows/s", refresh=False)

    def chunk_done(self, chunk: Chunk, what: str) -> None:
        line = f"chunk {chunk.index}/{self.nchunks}: {what}"
        if self.bar is not None:
            self.bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _counted(blocks: Iterator[bytes], progress: Progress) -> Iterator[bytes]:
    for block in blocks:
        progress.sent(len(block), block.count(b"\n"))
        yield block


class Loader:
    """One `shaledb load` run: the chunks in order, each skipped, probed or sent."""

    def __init__(self, args: argparse.Namespace, db: str, table: str) -> None:
        self.args = args
        self.db, self.table = db, table
        self.format = (args.format or guess_format(args.file)).lower()
        self.prefix = args.label_prefix or default_label_prefix(args.file, db, table)
        self.state = State(state_dir(args.state_dir) / (hashlib.sha1(
            f"{args.host}:{args.http_port}/{db}.{table}/{self.prefix}".encode()).hexdigest()[:20]
            + ".json"), {"label_prefix": self.prefix, "file": str(args.file.resolve()),
                         "format": self.format, "chunk_size": parse_size(args.chunk_size)})
        # a resumed load keeps the chunk size it started with, so the chunks are the same
        chunk_size = self.state.chunk_size or parse_size(args.chunk_size)
        self.file = ChunkedFile(args.file, self.format, chunk_size)
        self.client = StreamLoadClient(args, db, table)
        self.totals = Totals()
        self.csv_fallback = False  # parquet sent as CSV to a server without parquet loads

    def headers(self, chunk: Chunk) -> dict[str, str]:
        h: dict[str, str] = {"label": f"{self.prefix}_{chunk.index}", "format": self.format}
        if self.format == "json":
            h["read_json_by_line"] = "true"
        if self.args.columns:
            h["columns"] = self.args.columns
        if self.args.column_separator:
            h["column_separator"] = self.args.column_separator
        for item in self.args.header:
            name, _, value = item.partition(":")
            h[name.strip()] = value.strip()
        if self.csv_fallback:
            h.update({"format": "csv", "column_separator": "\\x01"})
            h.setdefault("columns", ", ".join(f"`{c}`" for c in self.file.parquet_columns()))
        return h

    def run(self, progress_enabled: bool) -> Totals:
        chunks = list(self.file.chunks())
        progress = Progress(progress_enabled, self.file.size, len(chunks))
        try:
            for chunk in chunks:
                self._one(chunk, progress)
        finally:
            progress.close()
        return self.totals

    def _one(self, chunk: Chunk, progress: Progress) -> None:
        label = f"{self.prefix}_{chunk.index}"
        rec = self.state.finished(chunk)
        if rec is not None:
            self._skipped(chunk, rec if "NumberTotalRows" in rec else None, progress,
                          "already loaded (state file)")
            return
        if self.state.in_flight() == chunk.index and self._committed(chunk):
            self.state.finish(chunk, None)
            self._skipped(chunk, None, progress, f"label {label} already FINISHED")
            return
        self.state.begin(chunk)
        body = self._send(chunk, progress)
        if body.get("Status") == "Label Already Exists" and \
                body.get("ExistingJobStatus") == "FINISHED":
            self.state.finish(chunk, None)
            self._skipped(chunk, None, progress, f"label {label} already FINISHED")
            return
        if body.get("Status") != "Success":
            raise LoadError(f"chunk {chunk.index} (label {label}) failed", body)
        self.state.finish(chunk, body)
        self.totals.add(body, this_run=True)
        self.totals.chunks_loaded += 1
        progress.chunk_done(chunk, f"Success, label {label}, {body['NumberLoadedRows']:,} rows, "
                                   f"{body['LoadTimeMs']} ms")

    def _skipped(self, chunk: Chunk, rec: dict[str, Any] | None, progress: Progress,
                 why: str) -> None:
        self.totals.chunks_skipped += 1
        if rec is None:
            self.totals.chunks_unknown += 1
        else:
            self.totals.add(rec, this_run=False)
        progress.sent(chunk.nbytes, 0)
        progress.chunk_done(chunk, f"skipped, {why}")

    def _committed(self, chunk: Chunk) -> bool:
        """Did the chunk in flight when the last run died commit? An empty body under its
        label answers `Label Already Exists` if so, and loads nothing otherwise."""
        body = self.client.put(self.headers(chunk), 0, b"")
        return body.get("Status") == "Label Already Exists" and \
            body.get("ExistingJobStatus") == "FINISHED"

    def _send(self, chunk: Chunk, progress: Progress) -> dict[str, Any]:
        if self.format == "parquet":
            if not self.csv_fallback:
                data = self.file.parquet_chunk(chunk)
                body = self.client.put(self.headers(chunk), len(data), data)
                if FORMAT_UNSUPPORTED not in str(body.get("Message", "")):
                    progress.sent(chunk.nbytes, chunk.rows or 0)
                    return body
                self.csv_fallback = True
                print("shaledb load: the server has no parquet Stream Load; sending the row "
                      "groups as CSV", file=sys.stderr)
            data = self.file.csv_chunk(chunk, "\x01")
            body = self.client.put(self.headers(chunk), len(data), data)
            progress.sent(chunk.nbytes, chunk.rows or 0)
            return body
        length, blocks = self.file.body(chunk)
        return self.client.put(self.headers(chunk), length, _counted(blocks, progress))


def summary(totals: Totals, status: str, elapsed: float, prefix: str, nchunks: int,
            ) -> dict[str, Any]:
    """Doris' counters over every chunk of the file (loaded now or before); the time and
    speed are this run's."""
    elapsed = max(elapsed, 1e-9)
    return {"Status": status, "LabelPrefix": prefix, "Chunks": nchunks,
            "ChunksLoaded": totals.chunks_loaded, "ChunksSkipped": totals.chunks_skipped,
            **totals.counters, "LoadTimeMs": int(elapsed * 1000),
            "MBPerSecond": round(totals.run_bytes / (1 << 20) / elapsed, 2),
            "RowsPerSecond": int(totals.run_rows / elapsed)}


def print_summary(s: dict[str, Any], as_json: bool, unknown: int) -> None:
    if as_json:
        print(json.dumps(s, indent=4))
        return
    for k, v in s.items():
        print(f"{k}: {v}")
    if unknown:
        print(f"({unknown} chunk(s) found already loaded by label; their rows are not counted "
              "above)")


def run(args: argparse.Namespace) -> int:
    db, dot, table = args.target.partition(".")
    if not dot or not db or not table:
        print(f"shaledb load: target must be db.table, got {args.target!r}", file=sys.stderr)
        return 2
    if not args.file.is_file():
        print(f"shaledb load: no such file: {args.file}", file=sys.stderr)
        return 2
    try:
        loader = Loader(args, db.strip("`"), table.strip("`"))
    except ValueError as e:
        print(f"shaledb load: {e}", file=sys.stderr)
        return 2
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    started = time.perf_counter()
    try:
        loader.run(progress)
    except LoadError as e:
        body = e.body
        print(f"shaledb load: {e}", file=sys.stderr)
        for key in ("Status", "Message", "FirstErrorMsg", "ErrorURL"):
            if body.get(key):
                print(f"  {key}: {body[key]}", file=sys.stderr)
        print(f"  rerun with --label {loader.prefix} to resume (loaded chunks are skipped)",
              file=sys.stderr)
        s = summary(loader.totals, "Fail", time.perf_counter() - started, loader.prefix,
                    loader.totals.chunks_loaded + loader.totals.chunks_skipped)
        s["Message"] = body.get("Message") or str(e)
        print_summary(s, args.json, loader.totals.chunks_unknown)
        return 1
    except KeyboardInterrupt:
        print(f"\nshaledb load: interrupted; rerun the same command (or with --label "
              f"{loader.prefix}) to resume", file=sys.stderr)
        return 130
    elapsed = time.perf_counter() - started
    s = summary(loader.totals, "Success", elapsed, loader.prefix,
                loader.totals.chunks_loaded + loader.totals.chunks_skipped)
    print_summary(s, args.json, loader.totals.chunks_unknown)
    return 0
