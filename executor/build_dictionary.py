"""A hash join's build rows with their string columns dictionary-encoded (`DictColumn`).

Every probe batch gathers the build rows it matched (`Batch.take`): for a plain string column
that copies the strings of every output row (SSB's c_nation, s_city, p_brand on every
lineorder row that survived the join), for a `DictColumn` only an int32 code per row, and the
aggregate above groups on the codes (executor/keys.py) and decodes only its groups. The
build side is small and encoded once, so the strings are hashed once per build row instead of
copied once per joined row. Scans already hand out `DictColumn`s for dictionary pages, but a
build side assembled from several segments, tablets or instances usually arrives decoded
(their dictionaries differ: `DictColumn.concat_codes` declines to merge them for few rows).
The dictionary is distinct and sorted in byte order (the DictColumn contract).
Upstream: DuckDB keeps dictionary vectors through its hash join's gather; Doris'
`ColumnDictionary` / low-cardinality string optimisation.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from storage.batch import Batch, Column, DictColumn

# Build sides up to this many rows get their strings encoded (a dimension's filtered rows);
# a bigger build side (a fact table joined to a fact table) keeps them as they came.
MAX_ENCODED_ROWS = 1 << 17
# A column with more distinct values than this fraction of its rows stays plain.
MAX_DISTINCT_FRACTION = 0.5


def dictionary_encoded(col: Column) -> Column:
    """`col` as a DictColumn over its distinct values (sorted bytewise); other columns as
    they are. The codes under NULLs point at whatever string lay there (any valid code)."""
    if (isinstance(col, DictColumn) or col.offsets is None or len(col) == 0
            or not col.type.is_string):  # BITMAP / HLL / JSON bytes keep their own form
        return col
    n = len(col)
    raw = pa.Array.from_buffers(pa.large_binary(), n,
                                [None, pa.py_buffer(col.offsets), pa.py_buffer(col.data)])
    encoded = pc.dictionary_encode(raw)
    distinct = encoded.dictionary
    if len(distinct) > n * MAX_DISTINCT_FRACTION:
        return col  # mostly unique (names, addresses): sorting them costs more than it saves
    order = pc.sort_indices(distinct).to_numpy()  # binary: bytewise, as the contract wants
    rank = np.empty(len(order), np.int32)
    rank[order] = np.arange(len(order), dtype=np.int32)
    codes = rank[encoded.indices.to_numpy(zero_copy_only=False)]
    values = distinct.take(pa.array(order))
    _, offsets_buf, data_buf = values.buffers()
    offsets = np.frombuffer(offsets_buf, np.int64)[values.offset: values.offset + len(values) + 1]
    data = (np.zeros(0, np.uint8) if data_buf is None
            else np.frombuffer(data_buf, np.uint8))
    if offsets[0] != 0:  # never for a fresh array, but the layout contract wants 0-based
        data = data[offsets[0]: offsets[-1]]
        offsets = offsets - offsets[0]
    dictionary = Column(col.type, data.copy(), None, offsets.copy())
    return DictColumn(dictionary, codes, col.validity, col.type)


def with_encoded_strings(batch: Batch) -> Batch:
    """`batch` with every plain string column dictionary-encoded (small batches only)."""
    if batch.num_rows == 0 or batch.num_rows > MAX_ENCODED_ROWS:
        return batch
    cols = tuple(dictionary_encoded(c) for c in batch.columns)
    if all(a is b for a, b in zip(cols, batch.columns)):
        return batch
    return Batch(batch.names, cols)
