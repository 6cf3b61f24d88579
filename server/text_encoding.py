"""Columnar MySQL text-protocol encoding of a Batch into ready-to-send packet bytes.

Each column becomes its text layout (int64 offsets + uint8 bytes) in bulk: numba kernels for
integers, decimals (int64 unscaled), dates and datetimes (executor/kernels/text_protocol.py),
doubles and floats (executor/kernels/float_text.py); strings are already in that layout (zero-copy);
LARGEINT, wide DECIMAL and the values a kernel declines (doubles needing 16-17 digits, float32 ties,
years outside 0000-9999) are formatted per value by the rules of `server.results.format_column`. The
per-column texts are then concatenated and `frame_rows` writes all row packets of the batch into one
buffer, continuing the connection's sequence id (mod 256). Rows of 16 MB or more are split into
several packets in Python. Everything here runs in a worker thread; the kernels release the GIL.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from executor.kernels import float_text as float_kernels
from executor.kernels import text_protocol as kernels
from server.results import format_column, lenenc_int
from storage.batch import Batch, Column
from storage.types import TypeKind, format_float, parse_type

_INT_KINDS = frozenset({
    TypeKind.BOOLEAN, TypeKind.TINYINT, TypeKind.SMALLINT, TypeKind.INT, TypeKind.BIGINT,
})
Chunk = np.ndarray | bytes


def texts_to_layout(texts: Sequence[bytes | None]) -> tuple[np.ndarray, np.ndarray]:
    """Offsets + bytes of a list of byte strings (None counts as empty)."""
    parts = [b"" if t is None else t for t in texts]
    lengths = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets, np.frombuffer(b"".join(parts), dtype=np.uint8)


def _python_layout(col: Column) -> tuple[np.ndarray, np.ndarray]:
    return texts_to_layout(format_column(col))


def _double_texts(values: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """`format_float` of finite doubles (the kernel handles NaN and infinities), in bulk."""
    texts = [t.removesuffix(".0") for t in map(float.__repr__, values)]
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))  # ASCII
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets, np.frombuffer("".join(texts).encode("ascii"), dtype=np.uint8)


def column_text(col: Column) -> tuple[np.ndarray, np.ndarray]:
    """Text of every row of `col` as (offsets int64 n+1, data uint8); NULL rows: any text."""
    kind = col.type.kind
    if col.type.is_nested:  # cells are canonical blobs: print Doris' text
        return _python_layout(col)
    if col.offsets is not None:
        return col.offsets, col.data
    if kind in _INT_KINDS:
        return kernels.int_text(col.data.astype(np.int64, copy=False))
    if kind is TypeKind.DECIMAL and col.data.dtype == np.int64:
        return kernels.decimal_text(col.data, col.type.scale)
    if kind is TypeKind.DATE:
        offsets, data, ok = kernels.date_text(col.data.astype(np.int32, copy=False))
        return (offsets, data) if ok else _python_layout(col)
    if kind is TypeKind.DATETIME:
        micros = col.data.astype(np.int64, copy=False)
        offsets, data, ok = kernels.datetime_text(micros, col.type.scale)
        return (offsets, data) if ok else _python_layout(col)
    if kind is TypeKind.DOUBLE:
        values = col.data.astype(np.float64, copy=False)
        offsets, data, fallback = float_kernels.double_text(values)
        if len(fallback):
            rep_offsets, rep_data = _double_texts(values[fallback].tolist())
            offsets, data = kernels.splice_text(offsets, data, fallback, rep_offsets, rep_data)
        return offsets, data
    if kind is TypeKind.FLOAT:
        values32 = col.data.astype(np.float32, copy=False)
        offsets, data, fallback = float_kernels.float_text(values32)
        if len(fallback):
            texts = [format_float(v, single=True).encode() for v in values32[fallback].tolist()]
            rep_offsets, rep_data = texts_to_layout(texts)
            offsets, data = kernels.splice_text(offsets, data, fallback, rep_offsets, rep_data)
        return offsets, data
    if kind is TypeKind.NULL:
        return np.zeros(len(col) + 1, dtype=np.int64), np.zeros(0, dtype=np.uint8)
    return _python_layout(col)  # LARGEINT, DECIMAL(p > 18)


def _null_rows(col: Column) -> np.ndarray:
    if col.type.kind is TypeKind.NULL:
        return np.ones(len(col), dtype=np.uint8)
    if col.validity is None:
        return np.zeros(len(col), dtype=np.uint8)
    return (~col.validity).view(np.uint8)


def batch_layout(batch: Batch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(offsets (ncols, n+1), flat data, nulls (ncols, n) uint8) of all columns' texts."""
    n = batch.num_rows
    ncols = len(batch.columns)
    offsets = np.empty((ncols, n + 1), dtype=np.int64)
    nulls = np.empty((ncols, n), dtype=np.uint8)
    datas = []
    base = 0
    for c, col in enumerate(batch.columns):
        offs, data = column_text(col)
        offsets[c] = offs + base
        datas.append(data)
        base += len(data)
        nulls[c] = _null_rows(col)
    flat = np.concatenate(datas) if datas else np.zeros(0, dtype=np.uint8)
    return offsets, flat, nulls


def row_payload(offsets: np.ndarray, data: np.ndarray, nulls: np.ndarray, row: int) -> bytes:
    """Payload of one row packet, built in Python (for rows too big for `frame_rows`)."""
    parts = []
    for c in range(offsets.shape[0]):
        if nulls[c, row]:
            parts.append(b"\xfb")
        else:
            text = data[offsets[c, row]: offsets[c, row + 1]].tobytes()
            parts.append(lenenc_int(len(text)))
            parts.append(text)
    return b"".join(parts)


def frame_payload(payload: bytes, seq: int) -> tuple[bytes, int]:
    """One logical packet as physical packets of < 0xFFFFFF bytes (an empty one ends a run)."""
    out = []
    limit = kernels.MAX_PACKET_PAYLOAD
    pos = 0
    while True:
        part = payload[pos: pos + limit]
        out.append(len(part).to_bytes(3, "little") + bytes((seq,)) + part)
        seq = (seq + 1) & 0xFF
        pos += limit
        if len(part) < limit:
            return b"".join(out), seq


def encode_batch(batch: Batch, seq: int) -> tuple[list[Chunk], int]:
    """All row packets of `batch` starting at sequence id `seq`: (byte chunks, next seq)."""
    n = batch.num_rows
    if n == 0:
        return [], seq
    offsets, data, nulls = batch_layout(batch)
    lengths = kernels.payload_lengths(offsets, nulls)
    big = np.flatnonzero(lengths >= kernels.MAX_PACKET_PAYLOAD).tolist()
    chunks: list[Chunk] = []
    start = 0
    for row in [*big, n]:
        if row > start:
            buf, seq = kernels.frame_rows(offsets, data, nulls, lengths, start, row, seq)
            chunks.append(buf)
        if row < n:
            framed, seq = frame_payload(row_payload(offsets, data, nulls, row), seq)
            chunks.append(framed)
        start = row + 1
    return chunks, seq


# One column of every kind the encoder has a kernel for (DECIMAL(10, 2) is int64-unscaled).
_WARM_UP_VALUES = (("BIGINT", "7"), ("DECIMAL(10, 2)", "1.25"), ("DATE", "2024-03-15"),
                   ("DATETIME", "2024-03-15 10:11:12"), ("DOUBLE", "0.1"), ("FLOAT", "0.5"),
                   ("VARCHAR(8)", "x"))


def warm_up() -> None:
    """Encode one two-row batch (a value and a NULL) of every kernel-encoded type, so that every
    encoding kernel is loaded before the server accepts connections.

    A numba kernel's first call in a process loads it from numba's cache (initialising LLVM on
    the very first one), ~0.5-1 s in all; compiling it on a fresh install takes seconds more
    and holds the GIL. Without this, the first result a new server sends (a driver's
    connect-time `SELECT @@max_allowed_packet, ...`) paid that, past Connector/J's 500 ms for
    its connect-time statements ("could not load system variables")."""
    columns = []
    for i, (type_text, value) in enumerate(_WARM_UP_VALUES):
        dtype = parse_type(type_text)
        columns.append((f"c{i}", Column.from_physical(dtype, [dtype.to_physical(value), None])))
    encode_batch(Batch.of(columns), 0)
