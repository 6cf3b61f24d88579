"""Column and Batch: the columnar data unit passed between storage, executor and server.

A `Column` is a numpy array plus an optional bool validity mask (None = no nulls; True = valid).
Values under a null are always defined (zero / empty), so kernels can run branch-free.
Variable-length values (CHAR/VARCHAR/STRING, HLL/BITMAP blobs) use the Arrow large_string
layout: `offsets` (int64, n+1) into a flat uint8 `data` buffer, so numba can hash and compare.
A `DictColumn` is a string Column still held as integer codes into a sorted dictionary (a scan
of DICT-encoded pages produces it): operators that understand it work on the codes (GROUP BY
keys, executor/grouped_state.py), every other reader of `data` / `offsets` gets the strings,
decoded once on first access, so nothing downstream has to know the encoded form exists.
A `Batch` is an immutable set of named Columns of equal length (about 64K rows).
pyarrow appears only at the edges (`to_arrow` / `from_arrow`).
Upstream concepts: DuckDB `Vector` / `DataChunk`, Doris `vectorized::Block`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from storage import nested
from storage.types import BLOB_KINDS, DataType

DEFAULT_BATCH_SIZE = 65536


def selection(mask: np.ndarray) -> np.ndarray | None:
    """Row numbers selected by a bool mask, or None when most rows are selected.

    Boolean indexing costs up to ~5 ns per row at middling selectivity (branch misses) while
    `flatnonzero` + `take` costs ~1 ns, and the row numbers serve every column of a batch;
    above ~80% selected, boolean indexing wins again."""
    n = len(mask)
    if n and np.count_nonzero(mask) > 0.8 * n:
        return None
    return np.flatnonzero(mask)


@dataclass(frozen=True, slots=True, eq=False)
class Column:
    """One column of a Batch. For var-len types `data` is uint8 bytes and `offsets` int64 (n+1)."""

    type: DataType
    data: np.ndarray
    validity: np.ndarray | None = None
    offsets: np.ndarray | None = None

    def __len__(self) -> int:
        if self.offsets is not None:
            return len(self.offsets) - 1
        return len(self.data)

    @property
    def has_nulls(self) -> bool:
        return self.validity is not None and not bool(self.validity.all())

    @property
    def nbytes(self) -> int:
        """Bytes of the column's arrays (object arrays counted at 8 bytes a value)."""
        n = self.data.nbytes + (self.offsets.nbytes if self.offsets is not None else 0)
        return int(n + (self.validity.nbytes if self.validity is not None else 0))

    def null_mask(self) -> np.ndarray:
        """Bool array, True where NULL."""
        if self.validity is None:
            return np.zeros(len(self), dtype=np.bool_)
        return ~self.validity

    # ---- construction ---------------------------------------------------------------------
    @staticmethod
    def from_physical(dtype: DataType, values: Sequence[object]) -> Column:
        """Build from physical Python values (as `DataType.to_physical` returns); None = NULL."""
        n = len(values)
        valid = np.fromiter((v is not None for v in values), dtype=np.bool_, count=n)
        validity = None if valid.all() else valid
        if dtype.is_varlen:
            encoded = [
                b"" if v is None else (v if isinstance(v, bytes) else str(v).encode("utf-8"))
                for v in values
            ]
            lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=n)
            offsets = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            data = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
            return Column(dtype, data, validity, offsets)
        npd = dtype.numpy_dtype
        if npd == np.dtype(object):
            objs = np.empty(n, dtype=object)
            objs[:] = [0 if v is None else v for v in values]
            return Column(dtype, objs, validity)
        data = np.array([0 if v is None else v for v in values], dtype=npd)
        return Column(dtype, data, validity)

    @staticmethod
    def constant(dtype: DataType, value: object, n: int) -> Column:
        return Column.from_physical(dtype, [value] * n)

    @staticmethod
    def nulls(dtype: DataType, n: int) -> Column:
        return Column.from_physical(dtype, [None] * n)

    # ---- access ---------------------------------------------------------------------------
    def value_at(self, i: int) -> object:
        """Physical value at row i (str for strings, bytes for blobs), None for NULL."""
        if self.validity is not None and not self.validity[i]:
            return None
        if self.offsets is not None:
            raw = self.data[self.offsets[i]: self.offsets[i + 1]].tobytes()
            return raw if self.type.kind in BLOB_KINDS else raw.decode("utf-8")
        v = self.data[i]
        return v.item() if isinstance(v, np.generic) else v

    def to_pylist(self) -> list[object]:
        """Physical values as Python objects (None for NULL)."""
        n = len(self)
        if self.offsets is not None:
            buf = self.data.tobytes()
            offs = self.offsets.tolist()
            blob = self.type.kind in BLOB_KINDS
            out: list[object] = [
                buf[offs[i]: offs[i + 1]] if blob else buf[offs[i]: offs[i + 1]].decode("utf-8")
                for i in range(n)
            ]
        else:
            out = self.data.tolist()
        if self.validity is not None:
            for i in np.flatnonzero(~self.validity).tolist():
                out[i] = None
        return out

    def string_values(self) -> np.ndarray:
        """Var-len column as a numpy object array of str (for comparisons and sorting)."""
        vals = self.to_pylist()
        arr = np.empty(len(vals), dtype=object)
        arr[:] = ["" if v is None else v for v in vals]
        return arr

    # ---- transforms -----------------------------------------------------------------------
    def take(self, indices: np.ndarray) -> Column:
        indices = np.asarray(indices, dtype=np.int64)
        validity = None if self.validity is None else self.validity.take(indices)
        if self.offsets is None:
            return Column(self.type, self.data.take(indices), validity)
        from storage.gather import gather_varlen

        offsets, data = gather_varlen(self.offsets, self.data, indices)
        return Column(self.type, data, validity, offsets)

    def filter(self, mask: np.ndarray) -> Column:
        rows = selection(mask)
        if rows is None:  # dense: numpy's boolean indexing is fastest there
            validity = None if self.validity is None else self.validity[mask]
            if self.offsets is None:
                return Column(self.type, self.data[mask], validity)
            rows = np.flatnonzero(mask)
        return self.take(rows)

    def slice(self, start: int, stop: int) -> Column:
        validity = None if self.validity is None else self.validity[start:stop]
        if self.offsets is None:
            return Column(self.type, self.data[start:stop], validity)
        offs = self.offsets[start: stop + 1]
        data = self.data[offs[0]: offs[-1]]
        return Column(self.type, data, validity, offs - offs[0])

    def with_type(self, dtype: DataType) -> Column:
        return Column(dtype, self.data, self.validity, self.offsets)

    @staticmethod
    def concat(columns: Sequence[Column]) -> Column:
        if len(columns) == 1:
            return columns[0]
        if isinstance(columns[0], DictColumn):
            encoded = DictColumn.concat_codes(columns)
            if encoded is not None:
                return encoded
        dtype = columns[0].type
        if any(c.validity is not None for c in columns):
            validity: np.ndarray | None = np.concatenate(
                [c.validity if c.validity is not None else np.ones(len(c), np.bool_)
                 for c in columns]
            )
        else:
            validity = None
        if columns[0].offsets is None:
            return Column(dtype, np.concatenate([c.data for c in columns]), validity)
        parts = [columns[0].offsets]
        base = columns[0].offsets[-1]
        for c in columns[1:]:
            parts.append(c.offsets[1:] + base)  # type: ignore[index]
            base += c.offsets[-1]  # type: ignore[index]
        return Column(dtype, np.concatenate([c.data for c in columns]), validity,
                      np.concatenate(parts))

    # ---- arrow edge -----------------------------------------------------------------------
    def to_arrow(self) -> pa.Array:
        n = len(self)
        mask = (None if self.validity is None
                else pa.py_buffer(np.packbits(self.validity, bitorder="little")))
        if self.type.is_nested:
            return nested.to_arrow(self.type, self.to_pylist())  # type: ignore[arg-type]
        if self.offsets is not None:
            binary = self.type.kind in BLOB_KINDS
            atype = pa.large_binary() if binary else pa.large_string()
            return pa.Array.from_buffers(
                atype, n, [mask, pa.py_buffer(self.offsets), pa.py_buffer(self.data)]
            )
        if self.data.dtype == np.dtype(object):
            # LARGEINT / wide DECIMAL: exact unscaled integers (up to 39 digits) as decimal256.
            return pa.array(self.to_pylist(), type=pa.decimal256(76, 0))
        return pa.Array.from_buffers(
            pa.from_numpy_dtype(self.data.dtype), n,
            [mask, pa.py_buffer(np.ascontiguousarray(self.data))]
        )

    @staticmethod
    def from_arrow(dtype: DataType, arr: pa.Array) -> Column:
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        n = len(arr)
        validity = None
        if arr.null_count:
            validity = _arrow_bits(arr.is_valid())
        if dtype.is_nested and pa.types.is_nested(arr.type):
            return Column.from_physical(dtype, nested.from_arrow(dtype, arr))
        if dtype.is_nested and (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            return Column.from_physical(dtype, nested.from_arrow(dtype, arr))
        if dtype.is_varlen:
            if pa.types.is_string(arr.type) or pa.types.is_binary(arr.type):
                arr = arr.cast(pa.large_binary() if pa.types.is_binary(arr.type)
                               else pa.large_string())
            bufs = arr.buffers()
            offsets = np.frombuffer(bufs[1], dtype=np.int64, count=n + 1,
                                    offset=arr.offset * 8).copy()
            data = (np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None
                    else np.zeros(0, np.uint8))
            data = data[offsets[0]: offsets[-1]].copy()
            offsets -= offsets[0]
            return Column(dtype, data, validity, offsets)
        if dtype.numpy_dtype == np.dtype(object):
            vals = arr.to_pylist()
            data = np.empty(n, dtype=object)
            data[:] = [0 if v is None else int(v) for v in vals]
            return Column(dtype, data, validity)
        view = _arrow_fixed_view(arr)
        if view is None:
            filled = arr.fill_null(0) if arr.null_count else arr
            view = np.asarray(filled.to_numpy(zero_copy_only=False))
        data = view.astype(dtype.numpy_dtype, copy=True)
        if validity is not None and view is not None:
            data[~validity] = 0  # Arrow leaves the values under a NULL undefined
        return Column(dtype, data, validity)


def _arrow_bits(arr: pa.Array) -> np.ndarray:
    """A boolean Arrow array's bits as a numpy bool array (any value under a NULL), read from
    its bit buffer (`to_numpy(zero_copy_only=False)` would import pandas, ~0.5-1 CPU-s on a
    server's first load: docs/performance.md)."""
    n = len(arr)
    bits = np.frombuffer(arr.buffers()[1], dtype=np.uint8)
    first = arr.offset
    raw = np.unpackbits(bits[first // 8:(first + n + 7) // 8 + 1], bitorder="little")
    return raw[first % 8:first % 8 + n].astype(np.bool_)


def _arrow_fixed_view(arr: pa.Array) -> np.ndarray | None:
    """A fixed-width Arrow array's values (any value under a NULL) as a numpy view of its
    data buffer (no copy, no pandas import), or None for a type read some other way."""
    ty = arr.type
    if pa.types.is_boolean(ty):
        return _arrow_bits(arr)
    if not (pa.types.is_integer(ty) or pa.types.is_floating(ty) or pa.types.is_date32(ty)
            or pa.types.is_date64(ty) or pa.types.is_timestamp(ty) or pa.types.is_time(ty)
            or pa.types.is_duration(ty)) or pa.types.is_float16(ty):
        return None
    width = ty.bit_width // 8
    if pa.types.is_floating(ty):
        np_type = np.dtype(f"f{width}")
    else:
        signed = not pa.types.is_unsigned_integer(ty)
        np_type = np.dtype(f"{'i' if signed else 'u'}{width}")
    buf = arr.buffers()[1]
    if buf is None:
        return np.zeros(len(arr), np_type)
    return np.frombuffer(buf, dtype=np_type, count=len(arr), offset=arr.offset * width)


# Column's own slots for the decoded strings: a DictColumn fills them on first access.
_DATA_SLOT = Column.__dict__["data"]
_OFFSETS_SLOT = Column.__dict__["offsets"]


class DictColumn(Column):
    """A string column as `codes` into `dictionary`: row i is `dictionary[codes[i]]` (NULL
    where `validity` says so; the code under a NULL is any valid code).

    The dictionary is a plain string Column without NULLs whose values are distinct and sorted
    in byte order, so codes order like the values (a DICT page's dictionary, or a segment's
    page dictionaries merged: storage/segment/dict_codes.py). Transforms (`take`, `filter`,
    `slice`, `concat` of columns sharing a dictionary) stay on the codes; `data` / `offsets`
    are the decoded strings, gathered once on first access and kept (decoding twice in racing
    threads is harmless: both write the same arrays).
    """

    __slots__ = ("codes", "dictionary")
    codes: np.ndarray
    dictionary: Column

    def __init__(self, dictionary: Column, codes: np.ndarray,
                 validity: np.ndarray | None = None, dtype: DataType | None = None) -> None:
        object.__setattr__(self, "type", dictionary.type if dtype is None else dtype)
        object.__setattr__(self, "validity", validity)
        object.__setattr__(self, "codes", codes)
        object.__setattr__(self, "dictionary", dictionary)

    # ---- the decoded strings (what every other reader sees) -------------------------------
    def _decode(self) -> None:
        from storage.segment.encoding import dict_gather

        d = self.dictionary
        assert d.offsets is not None
        offsets, data = dict_gather(d.offsets, d.data, self.codes)
        _DATA_SLOT.__set__(self, data)
        _OFFSETS_SLOT.__set__(self, offsets)

    @property
    def data(self) -> np.ndarray:
        try:
            return _DATA_SLOT.__get__(self)
        except AttributeError:
            self._decode()
            return _DATA_SLOT.__get__(self)

    @property
    def offsets(self) -> np.ndarray:
        try:
            return _OFFSETS_SLOT.__get__(self)
        except AttributeError:
            self._decode()
            return _OFFSETS_SLOT.__get__(self)

    @property
    def is_decoded(self) -> bool:
        """Whether the strings were gathered already (tests prove GROUP BY never needs it)."""
        try:
            _DATA_SLOT.__get__(self)
        except AttributeError:
            return False
        return True

    def decoded(self) -> Column:
        """The same rows as a plain Column."""
        return Column(self.type, self.data, self.validity, self.offsets)

    def __len__(self) -> int:
        return len(self.codes)

    def __repr__(self) -> str:
        return (f"DictColumn({self.type}, {len(self.codes)} rows, "
                f"{len(self.dictionary)} dictionary entries)")

    @property
    def nbytes(self) -> int:
        n = self.codes.nbytes + self.dictionary.nbytes
        return int(n + (self.validity.nbytes if self.validity is not None else 0))

    # ---- access ---------------------------------------------------------------------------
    def value_at(self, i: int) -> object:
        if self.validity is not None and not self.validity[i]:
            return None
        return self.dictionary.value_at(int(self.codes[i]))

    def to_pylist(self) -> list[object]:
        values = self.dictionary.to_pylist()
        out = [values[c] for c in self.codes.tolist()]
        if self.validity is not None:
            for i in np.flatnonzero(~self.validity).tolist():
                out[i] = None
        return out

    # ---- transforms: on the codes ---------------------------------------------------------
    def take(self, indices: np.ndarray) -> Column:
        indices = np.asarray(indices, dtype=np.int64)
        validity = None if self.validity is None else self.validity.take(indices)
        return DictColumn(self.dictionary, self.codes.take(indices), validity, self.type)

    def filter(self, mask: np.ndarray) -> Column:
        validity = None if self.validity is None else self.validity[mask]
        return DictColumn(self.dictionary, self.codes[mask], validity, self.type)

    def slice(self, start: int, stop: int) -> Column:
        validity = None if self.validity is None else self.validity[start:stop]
        return DictColumn(self.dictionary, self.codes[start:stop], validity, self.type)

    def with_type(self, dtype: DataType) -> Column:
        return DictColumn(self.dictionary, self.codes, self.validity, dtype)

    @staticmethod
    def concat_codes(columns: Sequence[Column]) -> DictColumn | None:
        """`columns` as one DictColumn when they are all DictColumns: on their shared
        dictionary, or on the union of their dictionaries (sorted, codes remapped) when that is
        small next to the rows (segments and pages each have their own dictionary); else None
        (the caller concatenates the decoded strings)."""
        if not all(isinstance(c, DictColumn) for c in columns):
            return None
        cols = [c for c in columns if isinstance(c, DictColumn)]
        dictionaries = list({id(c.dictionary): c.dictionary for c in cols}.values())
        if len(dictionaries) == 1:
            dictionary = dictionaries[0]
            codes = np.concatenate([c.codes for c in cols])
        else:
            entries = sum(len(d) for d in dictionaries)
            if entries * _MERGE_ROWS_PER_ENTRY > sum(len(c) for c in cols):
                return None  # gathering the rows' strings costs no more than merging
            dictionary, remaps = merge_dictionaries(dictionaries)
            at = {id(d): r for d, r in zip(dictionaries, remaps)}
            codes = np.concatenate([at[id(c.dictionary)][c.codes] for c in cols])
        if any(c.validity is not None for c in cols):
            validity: np.ndarray | None = np.concatenate(
                [c.validity if c.validity is not None else np.ones(len(c), np.bool_)
                 for c in cols])
        else:
            validity = None
        return DictColumn(dictionary, codes, validity, cols[0].type)


# Dictionaries are merged on concatenation only with at least this many rows per entry.
_MERGE_ROWS_PER_ENTRY = 4


def merge_dictionaries(dictionaries: Sequence[Column]) -> tuple[Column, list[np.ndarray]]:
    """The sorted union of string dictionaries (each sorted and distinct) and, per input,
    the code in the union of each of its entries."""
    from storage.segment.encoding import varlen_list

    lists = []
    for d in dictionaries:
        assert d.offsets is not None
        lists.append(varlen_list(d.offsets, d.data))
    values = sorted(set().union(*lists))
    position = {v: i for i, v in enumerate(values)}
    remaps = [np.fromiter((position[v] for v in vs), np.int64, len(vs)) for vs in lists]
    codes_type = np.uint8 if len(values) <= 1 << 8 else np.uint16 if len(values) <= 1 << 16 \
        else np.uint32
    lengths = np.fromiter((len(v) for v in values), np.int64, len(values))
    offsets = np.zeros(len(values) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.frombuffer(b"".join(values), np.uint8).copy()
    merged = Column(dictionaries[0].type, data, None, offsets)
    return merged, [r.astype(codes_type) for r in remaps]


@dataclass(frozen=True, slots=True, eq=False)
class Batch:
    """Named columns of equal length. Immutable: every transform returns a new Batch."""

    names: tuple[str, ...]
    columns: tuple[Column, ...]

    def __post_init__(self) -> None:
        if len(self.names) != len(self.columns):
            raise ValueError("names and columns differ in length")
        if self.columns:
            n = len(self.columns[0])
            if any(len(c) != n for c in self.columns):
                raise ValueError("columns of a Batch must have equal length")

    @staticmethod
    def of(pairs: Iterable[tuple[str, Column]], num_rows: int | None = None) -> Batch:
        items = list(pairs)
        return Batch(tuple(n for n, _ in items), tuple(c for _, c in items))

    @property
    def num_rows(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    @property
    def nbytes(self) -> int:
        """Bytes of the column buffers (values, validity, offsets): what an exchange moves."""
        return sum(c.nbytes for c in self.columns)

    def __len__(self) -> int:
        return self.num_rows

    def column(self, name: str) -> Column:
        try:
            return self.columns[self.names.index(name)]
        except ValueError:
            raise KeyError(name) from None

    def __getitem__(self, name: str) -> Column:
        return self.column(name)

    @property
    def types(self) -> tuple[DataType, ...]:
        return tuple(c.type for c in self.columns)

    def select(self, names: Sequence[str]) -> Batch:
        return Batch(tuple(names), tuple(self.column(n) for n in names))

    def filter(self, mask: np.ndarray) -> Batch:
        rows = selection(mask)
        if rows is None:
            return Batch(self.names, tuple(c.filter(mask) for c in self.columns))
        return Batch(self.names, tuple(c.take(rows) for c in self.columns))

    def take(self, indices: np.ndarray) -> Batch:
        return Batch(self.names, tuple(c.take(indices) for c in self.columns))

    def slice(self, start: int, stop: int) -> Batch:
        return Batch(self.names, tuple(c.slice(start, stop) for c in self.columns))

    def rename(self, names: Sequence[str]) -> Batch:
        return Batch(tuple(names), self.columns)

    @staticmethod
    def concat(batches: Sequence[Batch]) -> Batch:
        if len(batches) == 1:
            return batches[0]
        first = batches[0]
        cols = tuple(Column.concat([b.columns[i] for b in batches])
                     for i in range(len(first.names)))
        return Batch(first.names, cols)

    @staticmethod
    def empty(names: Sequence[str], types: Sequence[DataType]) -> Batch:
        return Batch(tuple(names), tuple(Column.from_physical(t, []) for t in types))

    def rows(self) -> list[tuple[object, ...]]:
        """Physical values row by row (test and small-result helper)."""
        cols = [c.to_pylist() for c in self.columns]
        return list(zip(*cols)) if cols else []

    def to_arrow(self) -> pa.RecordBatch:
        return pa.RecordBatch.from_arrays([c.to_arrow() for c in self.columns],
                                          names=list(self.names))

    @staticmethod
    def from_arrow(rb: pa.RecordBatch | pa.Table, types: Sequence[DataType]) -> Batch:
        return Batch(
            tuple(rb.schema.names),
            tuple(Column.from_arrow(t, rb.column(i)) for i, t in enumerate(types)),
        )
