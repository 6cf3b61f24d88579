"""String predicates on dictionary codes: a DICT page tested without gathering its strings.

A dictionary-encoded string page (storage/segment/encoding.py, DICT) holds a sorted dictionary
of its d distinct values and one code per row. A scan's storage predicates on that column
(=, !=, <, <=, >, >=, IN, NOT IN, IS [NOT] NULL, a join's `in_bloom` key filter) are evaluated
once per dictionary entry (`storage.predicates.evaluate` on the dictionary as a Column: exactly
the plain path's semantics), giving a code -> bool lookup table; the rows are then selected by
code (`select_by_code`, numba) and ANDed with the validity (NULL satisfies no comparison). The
rows that survive leave as a `DictColumn` (storage/batch.py: codes plus the dictionary), whose
strings are gathered only if an operator reads them (GROUP BY keys never do), so a string
column the scan filters on costs a few integer passes instead of a byte comparison per row,
and a page whose dictionary has no matching entry yields no row without any per-row work
(`pages_skipped_dictionary`). Doris' counterpart: the dictionary-code predicates of
`ColumnDictionary` / `_dict_code` in BE `SegmentIterator`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit

from storage.batch import Column, DictColumn
from storage.predicates import ColumnPredicate, evaluate
from storage.segment.encoding import varlen_list

# Operators answered on the dictionary (not `in_bitmap`: integer key sets never meet strings).
DICT_OPS = frozenset({"=", "!=", "<", "<=", ">", ">=", "in", "not_in", "is_null",
                      "is_not_null", "in_bloom"})


@njit(cache=True, nogil=True)
def select_by_code(codes: np.ndarray, table: np.ndarray) -> np.ndarray:
    """table[codes[i]] for every row: the rows whose code the lookup table accepts."""
    n = codes.shape[0]
    out = np.empty(n, dtype=np.bool_)
    for i in range(n):
        out[i] = table[codes[i]]
    return out


def select_by_code_reference(codes: np.ndarray, table: np.ndarray) -> np.ndarray:
    """numpy twin of `select_by_code` (tests)."""
    return table[codes.astype(np.int64)]


# Lookup tables remembered per (dictionary object, predicates): the dictionary is kept in
# the entry, so its id cannot be reused by another object while the entry lives.
MAX_LOOKUP_TABLES = 4096
_LOOKUP_TABLES: dict[tuple[int, tuple[ColumnPredicate, ...]],
                     tuple[Column, np.ndarray | None]] = {}


def _table_key(dictionary: Column, predicates: Sequence[ColumnPredicate]
               ) -> tuple[int, tuple[ColumnPredicate, ...]] | None:
    """The cache key of a lookup table, or None for predicates not worth keeping (a join's
    runtime `in_bloom` filter lives for one query) or not hashable."""
    preds = tuple(predicates)
    if any(p.op == "in_bloom" for p in preds):
        return None
    try:
        hash(preds)
    except TypeError:
        return None
    return (id(dictionary), preds)


@dataclass(frozen=True, slots=True, eq=False)
class DictPage:
    """One DICT data page as read: its sorted dictionary (a Column of the read type, no
    NULLs), each row's code, and the rows' validity (None: no NULL)."""

    dictionary: Column
    codes: np.ndarray  # uint64, one per row, < len(dictionary)
    validity: np.ndarray | None

    def __len__(self) -> int:
        return len(self.codes)

    def lookup_table(self, predicates: Sequence[ColumnPredicate]) -> np.ndarray | None:
        """Which dictionary entries satisfy every value predicate of `predicates` (None when
        none of them compares values: only IS [NOT] NULL). Remembered with the dictionary
        (`_LOOKUP_TABLES`): the page cache hands every scan the same dictionary object, and
        repeated queries would otherwise compare every entry again per segment per query."""
        key = _table_key(self.dictionary, predicates)
        if key is not None:
            got = _LOOKUP_TABLES.get(key)
            if got is not None and got[0] is self.dictionary:
                return got[1]
        table = self._compute_table(predicates)
        if key is not None:
            if table is not None:
                table.flags.writeable = False  # shared by later scans
            if len(_LOOKUP_TABLES) >= MAX_LOOKUP_TABLES:
                _LOOKUP_TABLES.clear()  # crude bound; a miss only recomputes
            _LOOKUP_TABLES[key] = (self.dictionary, table)
        return table

    def _compute_table(self, predicates: Sequence[ColumnPredicate]) -> np.ndarray | None:
        table = None
        for p in predicates:
            if p.op in ("is_null", "is_not_null"):
                continue
            hit = evaluate(p, self.dictionary)
            table = hit if table is None else table & hit
        return table

    def mask(self, predicates: Sequence[ColumnPredicate],
             table: np.ndarray | None = None) -> np.ndarray:
        """Rows of the page satisfying every predicate (`table`: `lookup_table`, if known)."""
        n = len(self.codes)
        if table is None:
            table = self.lookup_table(predicates)
        if table is None:
            out = np.ones(n, dtype=np.bool_)
        elif not table.any():
            return np.zeros(n, dtype=np.bool_)
        elif table.all():
            out = np.ones(n, dtype=np.bool_)
        else:
            out = select_by_code(self.codes, table)
        valid = self.validity
        for p in predicates:
            if p.op == "is_null":
                out &= np.zeros(n, np.bool_) if valid is None else ~valid
            elif valid is not None:  # every other operator: NULL never satisfies it
                out &= valid
        return out

    def slice(self, start: int, stop: int) -> DictPage:
        valid = None if self.validity is None else self.validity[start:stop]
        return DictPage(self.dictionary, self.codes[start:stop], valid)

    def select(self, rows: np.ndarray) -> DictPage:
        valid = None if self.validity is None else self.validity[rows]
        return DictPage(self.dictionary, self.codes[rows], valid)

    def take(self, rows: np.ndarray) -> Column:
        """Rows `rows` (page-local), still as codes (a DictColumn: strings are gathered only
        if an operator reads them; GROUP BY keys stay codes)."""
        validity = None if self.validity is None else self.validity[rows]
        return DictColumn(self.dictionary, self.codes[rows], validity)

    def decode(self) -> Column:
        """Every row (a DictColumn over the page's codes; its strings are gathered on first
        access, the values under NULLs being the code's, as a DICT page stores)."""
        return DictColumn(self.dictionary, self.codes, self.validity)


def narrow_codes(codes: np.ndarray, entries: int) -> np.ndarray:
    """Codes in the smallest unsigned type that holds `entries` values (a page's codes are
    unpacked as uint64; one byte per row is plenty for SSB's low-cardinality columns)."""
    dtype = np.uint8 if entries <= 1 << 8 else np.uint16 if entries <= 1 << 16 else np.uint32
    return codes.astype(dtype)


def merge_pages(pages: Sequence[DictPage | Column]) -> DictPage | None:
    """One column's pages as one DictPage over the union of their dictionaries (sorted, so
    codes still order like values), for scans that read most of a segment: the predicates are
    then evaluated once per scan on one dictionary, and each window is one code lookup. None
    when a page is not dictionary-encoded (a plain page: the column is read decoded)."""
    lists = []
    for page in pages:
        if isinstance(page, DictPage):
            d = page.dictionary
            assert d.offsets is not None
            lists.append(varlen_list(d.offsets, d.data))
        elif page.validity is not None and not page.validity.any():
            lists.append([])  # an all-NULL page
        else:
            return None
    values = sorted(set().union(*lists)) or [b""]
    ids = {v: i for i, v in enumerate(values)}
    codes = []
    validity = []
    for page, page_values in zip(pages, lists):
        n = len(page)
        if isinstance(page, DictPage):
            remap = np.fromiter((ids[v] for v in page_values), np.int64, len(page_values))
            codes.append(remap[page.codes.astype(np.int64)])
            validity.append(np.ones(n, np.bool_) if page.validity is None else page.validity)
        else:
            codes.append(np.zeros(n, np.int64))
            validity.append(np.zeros(n, np.bool_))
    valid = np.concatenate(validity)
    dtype = pages[0].dictionary.type if isinstance(pages[0], DictPage) else pages[0].type
    dictionary = Column.from_physical(dtype, values)
    return DictPage(dictionary, narrow_codes(np.concatenate(codes), len(values)),
                    None if valid.all() else valid)
