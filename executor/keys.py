"""Key encoding for grouping and sorting: dense, order-preserving integer codes per column.

`column_codes` factorizes one column with `np.unique`, so codes follow value order (strings in
byte order, which is code-point order for UTF-8) and NULL gets its own code; `group_codes`
combines several key columns into dense group ids; `sort_key` turns a column into an int64 key
honouring ASC/DESC and NULLS FIRST/LAST for `np.lexsort`. Short strings are compared as
fixed-width byte rows (numpy 'S' dtype, one memcmp per comparison) instead of Python str objects;
a dictionary-encoded column (`DictColumn`) is factorized on its codes, which already follow value
order.
"""

from __future__ import annotations

import numpy as np

from storage.batch import Column, DictColumn

_MAX_FIXED_STRING = 64  # longer strings fall back to Python str objects


def _string_codes(col: Column) -> tuple[np.ndarray, int]:
    offsets = col.offsets
    assert offsets is not None
    n = len(col)
    lens = offsets[1:] - offsets[:-1]
    width = int(lens.max()) if n else 0
    if width == 0:
        return np.zeros(n, np.int64), 1
    if width > _MAX_FIXED_STRING:
        vals = np.empty(n, dtype=object)
        buf = col.data.tobytes()
        offs = offsets.tolist()
        vals[:] = [buf[offs[i]: offs[i + 1]] for i in range(n)]
        uniq, inv = np.unique(vals, return_inverse=True)
        return inv.astype(np.int64).ravel(), len(uniq)
    mat = np.zeros((n, width), np.uint8)
    rows = np.repeat(np.arange(n), lens)
    pos = np.arange(int(lens.sum())) - np.repeat(offsets[:-1] - offsets[0], lens)
    mat[rows, pos] = col.data[offsets[0]: offsets[-1]]
    fixed = mat.view(f"S{width}").ravel()
    uniq, inv = np.unique(fixed, return_inverse=True)
    inv = inv.astype(np.int64).ravel()
    # 'S' values ignore trailing NUL bytes: break those ties by length (shorter sorts first,
    # which is exactly byte order since the shorter string is a prefix of the longer one).
    if (lens == 0).any() or len(uniq) < n:
        combined = inv * (width + 1) + lens
        uniq2, inv2 = np.unique(combined, return_inverse=True)
        return inv2.astype(np.int64).ravel(), len(uniq2)
    return inv, len(uniq)


def _dictionary_codes(col: DictColumn, valid: np.ndarray | None) -> tuple[np.ndarray, int]:
    """`column_codes` of a DictColumn: its codes already order like the values (the dictionary
    is sorted and distinct), so ranking the entries present is enough (no sort of the rows)."""
    codes = col.codes
    present = np.zeros(len(col.dictionary), np.bool_)
    present[codes if valid is None else codes[valid]] = True
    rank = np.cumsum(present, dtype=np.int64) - 1
    card = int(rank[-1]) + 1 if len(rank) else 0
    dense = rank[codes]
    if valid is None:
        return dense, card
    return np.where(valid, dense, card), card + 1


def column_codes(col: Column) -> tuple[np.ndarray, int]:
    """(codes, cardinality): codes in value order; NULL rows get code `cardinality - 1`."""
    n = len(col)
    valid = col.validity
    if valid is not None and valid.all():
        valid = None
    if isinstance(col, DictColumn):
        return _dictionary_codes(col, valid)
    if col.offsets is not None:
        codes, card = _string_codes(col)
        if valid is not None:
            # re-densify over valid rows only so NULL placeholders ("") don't take a code
            sub, card = (np.unique(codes[valid], return_inverse=True)[1].astype(np.int64).ravel(),
                         len(np.unique(codes[valid])))
            codes = np.full(n, card, np.int64)
            codes[valid] = sub
            return codes, card + 1
        return codes, card
    data = col.data
    if valid is None:
        uniq, inv = np.unique(data, return_inverse=True)
        return inv.astype(np.int64).ravel(), len(uniq)
    uniq, inv = np.unique(data[valid], return_inverse=True)
    codes = np.full(n, len(uniq), np.int64)
    codes[valid] = inv.ravel()
    return codes, len(uniq) + 1


def group_codes(cols: list[Column], n: int) -> tuple[np.ndarray, int, np.ndarray]:
    """(group id per row, group count, first row index of each group) for composite keys.

    Group ids are dense and ordered by the key values (NULL after all values per column).
    """
    if not cols:
        return np.zeros(n, np.int64), (1 if n else 0), np.zeros(1 if n else 0, np.int64)
    codes = np.zeros(n, np.int64)
    card = 1
    for col in cols:
        c, k = column_codes(col)
        if card * k >= 2**62:  # keep the combined code in int64: re-densify first
            uniq, inv = np.unique(codes, return_inverse=True)
            codes, card = inv.astype(np.int64).ravel(), len(uniq)
        codes = codes * k + c
        card *= k
    uniq, first, inv = np.unique(codes, return_index=True, return_inverse=True)
    return inv.astype(np.int64).ravel(), len(uniq), first.astype(np.int64)


def sort_key(col: Column, desc: bool, nulls_first: bool) -> np.ndarray:
    """An int64 key whose ascending order is the requested order of `col`."""
    codes, card = column_codes(col)
    key = codes.copy()
    if col.validity is not None and not col.validity.all():
        nulls = ~col.validity
        key[nulls] = -1 if nulls_first != desc else card
    return -key if desc else key


def lexsort_indices(keys: list[np.ndarray]) -> np.ndarray:
    """Stable order by keys[0], then keys[1], ... (np.lexsort wants the primary key last)."""
    if not keys:
        raise ValueError("no sort keys")
    return np.lexsort(tuple(reversed(keys)))
