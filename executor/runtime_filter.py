"""Runtime filters: a hash join's build keys, handed to the probe side's scan before it starts.

A hash join drains its build (right) side before it pulls the probe (left) side, so once the
build keys are known the join can tell the scan under its probe side which key values can
possibly match. For a star join (SSB, TPC-H) that removes most fact rows inside storage: the
integer key set becomes one `in_bitmap` predicate (a dense bitmap), whose [min, max] the
short-key index and zone maps prune with and whose members are tested row by row before the
remaining columns are decoded; keys spanning too wide a range send just `>=` / `<=`.

Filters and their targets are planned once (planner/runtime_filters.py RuntimeFilterDesc: a
probe key that is a plain column, followed through renaming Projects, Filters and other joins'
preserved sides to its scan; only joins that drop unmatched probe rows); executor/build.py
hands a join the scans of its filters in the same fragment instance, the coordinator a
`RuntimeFilterState` (executor/state.py) for those in another fragment. A filter is an optimisation
only: a scan that started before one arrived just reads more. A join whose build side kept
nearly all rows of its table (an unfiltered dimension) publishes
nothing: every probe row would pass. Scans test the filters they receive most selective first.
String and float keys (Doris IN_OR_BLOOM_FILTER + MIN_MAX): up to RUNTIME_FILTER_MAX_IN_NUM
distinct keys travel as an `in` list, which storage prunes pages with (zone maps, bloom filter
and bitmap indexes) and tests exactly; more as an `in_bloom` filter (storage/key_bloom.py)
carrying the keys' min / max for the short key and zone maps.
Session variable `runtime_filter_mode` = OFF switches them off (Doris' name).
Upstream: Doris `RuntimeFilter` (IN / MIN_MAX / BLOOM types, `runtime_filter_mode`), DuckDB
join filter pushdown.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from storage.batch import Column
from storage.key_bloom import KeyBloomFilter
from storage.predicates import ColumnPredicate, IntegerSet

# Doris' runtime_filter_max_in_num: more distinct string / float build keys than this become a
# bloom filter instead of an `in` list.
RUNTIME_FILTER_MAX_IN_NUM = 1024
MAX_BITMAP_SPAN = 1 << 24  # bits (16 MiB of bools) for an integer key set
# A build side that kept this fraction of its table's rows or more (an unfiltered dimension)
# would let almost every probe row through: testing it costs more than it saves.
USELESS_FRACTION = 0.9


def build_fraction(base: float, build_rows: int) -> float:
    """Fraction of the build input's `base` rows (its tables' rows before their filters,
    planned) that reached the hash table (1.0 = no filter): how selective the runtime filter
    will be, and the order scans test filters in."""
    return 1.0 if base <= 0 else min(1.0, build_rows / base)


def build_predicates(column: str, keys: Column) -> list[ColumnPredicate]:
    """Storage predicates that keep exactly the rows whose `column` is among the build keys."""
    data = keys.data
    valid = keys.validity
    if keys.offsets is None and data.dtype.kind in "iub":
        values = data if valid is None else data[valid]
        if len(values) == 0:
            return [ColumnPredicate(column, "in", ())]
        lo, hi = int(values.min()), int(values.max())
        if hi - lo < MAX_BITMAP_SPAN:  # the key set; storage prunes with its [min, max] too
            return [ColumnPredicate(column, "in_bitmap", (IntegerSet.of(values),))]
        return [ColumnPredicate(column, ">=", (_physical(data, lo),)),
                ColumnPredicate(column, "<=", (_physical(data, hi),))]
    if keys.offsets is not None or data.dtype.kind == "f":
        return _string_or_float_predicates(column, keys)
    # LARGEINT and wide DECIMAL keys (Python ints) get no filter: storage would test them row
    # by row in Python, which costs more than the probe it would save.
    return []


def _string_or_float_predicates(column: str, keys: Column) -> list[ColumnPredicate]:
    """Doris' IN_OR_BLOOM_FILTER plus MIN_MAX for string and float keys: up to
    RUNTIME_FILTER_MAX_IN_NUM distinct keys become an `in` list (which zone maps, bloom filter
    indexes and bitmap indexes all prune pages with; its values bound the zone maps already),
    more become an `in_bloom` filter carrying the keys' min / max, which the short key and zone
    maps prune with (rows are tested against the filter only)."""
    if keys.validity is not None:
        keys = keys.filter(keys.validity)
    if len(keys) == 0:
        return [ColumnPredicate(column, "in", ())]
    if keys.offsets is None:
        values = keys.data.astype(np.float64) + 0.0  # -0.0 -> 0.0: one key, not two
        if np.isnan(values).any():  # NaN never compares: no safe bounds or list
            return []
        distinct = np.unique(values)
        if len(distinct) <= RUNTIME_FILTER_MAX_IN_NUM:
            return [ColumnPredicate(column, "in", tuple(float(v) for v in distinct))]
        return [ColumnPredicate(column, "in_bloom", (
            KeyBloomFilter.of(keys, float(distinct[0]), float(distinct[-1])),))]
    # as bytes (any stored bytes, valid UTF-8 or not); binary order is UTF-8 code point order
    raw = pa.Array.from_buffers(pa.large_binary(), len(keys),
                                [None, pa.py_buffer(keys.offsets), pa.py_buffer(keys.data)])
    strings = pc.unique(raw)
    if len(strings) <= RUNTIME_FILTER_MAX_IN_NUM:
        return [ColumnPredicate(column, "in", tuple(_text(v) for v in strings.to_pylist()))]
    bounds = pc.min_max(strings)
    return [ColumnPredicate(column, "in_bloom", (KeyBloomFilter.of(
        keys, _text(bounds["min"].as_py()), _text(bounds["max"].as_py())),))]


def _text(raw: bytes) -> str | bytes:
    """A string key as the str storage predicates compare (and indexes prune with); bytes that
    are not UTF-8 stay bytes (evaluated exactly, no index pruning)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def filter_type(predicates: list[ColumnPredicate]) -> str:
    """Doris' name for the runtime filter these predicates form (`in`, `bloom`, `min_max`, or
    `bitmap` for an integer key set)."""
    ops = {p.op for p in predicates}
    if "in_bitmap" in ops:
        return "bitmap"
    if "in_bloom" in ops:
        return "bloom"
    return "in" if "in" in ops else "min_max"


def _physical(data: np.ndarray, v: int) -> object:
    return bool(v) if data.dtype.kind == "b" else int(v)
