"""parquet, ORC and Arrow bodies -> Arrow record batches of the file's typed columns that the
load reads, matched to the load's columns by name (case-insensitively, as Doris does).

- `arrow` is the Arrow IPC *stream* format (what Doris' arrow format and pyarrow's
  `RecordBatchStreamWriter` send): read straight off the body, a record batch at a time.
- parquet and ORC keep their metadata at the end of the file, so their readers need a seekable
  file: the body is spooled a block at a time to a temporary file under the server's data dir
  (never held in memory), then read a row group (parquet, `iter_batches`) or a stripe (ORC) at
  a time, only the columns the load needs. The spool file is removed when the load ends.
Typed columns are converted to the table's types by convert.py.
Upstream: Doris `ParquetReader`, `OrcReader`, `ArrowStreamReader`.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.orc as paorc
import pyarrow.parquet as pq

from executor.load.chunks import READ_BLOCK
from executor.load.spec import LoadFailed, LoadSpec

PARQUET_BATCH_ROWS = 65536


def _wanted(spec: LoadSpec, file_names: list[str]) -> dict[str, str]:
    """file column name -> load column name, for the load's columns the file carries."""
    by_lower = {n.lower(): n for n in file_names}
    out = {}
    for c in spec.targets:
        found = by_lower.get(c.name.lower())
        if found is not None:
            out[found] = c.name
    return out


def _renamed(rb: pa.RecordBatch | pa.Table, wanted: dict[str, str]) -> pa.RecordBatch:
    if isinstance(rb, pa.Table):
        rb = rb.combine_chunks().to_batches()[0] if rb.num_rows else \
            pa.RecordBatch.from_pylist([], schema=rb.schema)
    names = [n for n in rb.schema.names if n in wanted]
    if not names:
        return _no_columns(rb.num_rows)
    return pa.RecordBatch.from_arrays([rb.column(n) for n in names],
                                      names=[wanted[n] for n in names])


def _no_columns(n: int) -> pa.RecordBatch:
    """`n` rows carrying none of the load's columns (every column takes its DEFAULT)."""
    return pa.RecordBatch.from_pydict({"__no_load_column": pa.nulls(n)})


def arrow_batches(stream: BinaryIO | pa.NativeFile, spec: LoadSpec) -> Iterator[pa.RecordBatch]:
    source = stream if isinstance(stream, pa.NativeFile) else pa.PythonFile(stream, mode="r")
    try:
        reader = pa.ipc.open_stream(source)
    except pa.ArrowInvalid as e:
        raise LoadFailed(f"[INTERNAL_ERROR]failed to read arrow stream: {e}") from None
    wanted = _wanted(spec, reader.schema.names)
    for rb in reader:
        yield _renamed(rb, wanted)


def _spool(stream: BinaryIO | pa.NativeFile, spool_dir: Path | None, suffix: str) -> Path:
    if spool_dir is not None:
        spool_dir.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix="stream_load_", suffix=suffix,
                                dir=str(spool_dir) if spool_dir else None)
    try:
        with open(fd, "wb") as out:
            shutil.copyfileobj(stream, out, READ_BLOCK)
    except BaseException:  # a broken upload or decompression: no spool file left behind
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name)


def parquet_batches(stream: BinaryIO | pa.NativeFile, spec: LoadSpec,
                    spool_dir: Path | None) -> Iterator[pa.RecordBatch]:
    path = _spool(stream, spool_dir, ".parquet")
    try:
        try:
            pf = pq.ParquetFile(path)
        except (pa.ArrowInvalid, OSError) as e:
            raise LoadFailed(f"[INTERNAL_ERROR]Failed to init parquet reader: {e}") from None
        wanted = _wanted(spec, pf.schema_arrow.names)
        if not wanted:  # no column of the load in the file: rows of DEFAULTs
            for i in range(pf.metadata.num_row_groups):
                yield _no_columns(pf.metadata.row_group(i).num_rows)
            return
        for rb in pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=list(wanted),
                                  use_threads=False):
            yield _renamed(rb, wanted)
    finally:
        path.unlink(missing_ok=True)


def orc_batches(stream: BinaryIO | pa.NativeFile, spec: LoadSpec,
                spool_dir: Path | None) -> Iterator[pa.RecordBatch]:
    path = _spool(stream, spool_dir, ".orc")
    try:
        try:
            of = paorc.ORCFile(str(path))
        except (pa.ArrowInvalid, OSError) as e:
            raise LoadFailed(f"[INTERNAL_ERROR]Failed to init orc reader: {e}") from None
        wanted = _wanted(spec, of.schema.names)
        for i in range(of.nstripes):
            if wanted:
                yield _renamed(of.read_stripe(i, columns=list(wanted)), wanted)
            else:
                yield _no_columns(of.read_stripe(i).num_rows)
    finally:
        path.unlink(missing_ok=True)
