"""storage/view_routing.py: a finished view's rows go to the tablets its own keys pick.

Against a pure-Python reference (zlib.crc32 chained over the key cells, NULL as four zero
bytes, modulo the partition's view tablets): equal keys always land in one tablet, never past
the first `view_tablets(buckets)` of a partition, with NULLs, empty and non-ASCII strings and
INT boundaries; a view being built (SHADOW) and the base index are placed as the base."""

from __future__ import annotations

import zlib

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.batch import Batch, Column
from storage.catalog.meta import ColumnMeta, KeysType, MaterializedIndexMeta
from storage.types import INT, varchar
from storage.view_routing import routes_by_own_keys, view_buckets, view_tablets

_STRS = st.sampled_from(["", "a", "ü", "日本", "zz"])
_INTS = st.sampled_from([-2**31, -1, 0, 1, 7, 2**31 - 1])


def _index(state: str = "NORMAL") -> MaterializedIndexMeta:
    schema = (ColumnMeta("mv_k", varchar(8), is_key=True, define_expr="`k`"),
              ColumnMeta("mv_i", INT, is_key=True, define_expr="`i`"))
    return MaterializedIndexMeta(9, "mv", ("mv_k", "mv_i"), KeysType.DUP_KEYS, False,
                                 keys=("mv_k", "mv_i"), state=state, schema=schema)


def _reference(k: str | None, i: int | None, tablets: int) -> int:
    h = 0
    h = zlib.crc32(b"\0\0\0\0" if k is None else k.encode(), h)
    h = zlib.crc32(b"\0\0\0\0" if i is None else i.to_bytes(4, "little", signed=True), h)
    return h % tablets


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.none() | _STRS, st.none() | _INTS,
                          st.sampled_from([1, 3, 8, 16, 40])), max_size=60))
def test_rows_go_where_their_keys_say(rows: list[tuple[str | None, int | None, int]]) -> None:
    ks = [r[0] for r in rows]
    is_ = [r[1] for r in rows]
    buckets = np.array([r[2] for r in rows], dtype=np.int64)
    batch = Batch(("mv_k", "mv_i"), (Column.from_physical(varchar(8), ks),
                                     Column.from_physical(INT, is_)))
    got = view_buckets(_index(), batch, buckets)
    assert got.dtype == np.int64 and len(got) == len(rows)
    for (k, i, b), seq in zip(rows, got.tolist(), strict=True):
        assert 0 <= seq < view_tablets(b) <= b
        assert seq == _reference(k, i, view_tablets(b))


def test_only_finished_views_route_by_their_keys() -> None:
    assert routes_by_own_keys(_index("NORMAL"))
    assert not routes_by_own_keys(_index("SHADOW"))
    base = MaterializedIndexMeta(1, "t", ("k", "i"), KeysType.DUP_KEYS, True, keys=("k",))
    assert not routes_by_own_keys(base)
    assert view_tablets(1) == 1 and view_tablets(8) == 1 and view_tablets(16) == 2
