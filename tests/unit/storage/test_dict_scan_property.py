"""String predicates on dictionary codes (storage/segment/dict_codes.py, iterator.py).

Random string columns (NULLs, empty strings, unicode, a NUL byte) are written so that one
segment holds both DICT pages (repetitive values) and PLAIN pages (all-distinct values); random
conjunctions of every storage operator on them (=, !=, <, <=, >, >=, IN, NOT IN, IS [NOT] NULL,
a join's in_bloom key filter) return the same rows as the same data written all-PLAIN (the
plain byte-comparison path), as a pure-Python evaluation and as DuckDB; with and without a
page cache. The numba code lookup equals its numpy reference, and the counters prove that a
page whose dictionary holds no matching value is skipped without gathering a string.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import duckdb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.predicate_reference import holds as py_holds

from storage import types as T
from storage.batch import Batch, Column
from storage.key_bloom import KeyBloomFilter
from storage.page_cache import PageCache
from storage.predicates import ColumnPredicate
from storage.scan_stats import ScanStats
from storage.segment import SegmentReader, write_segment, writer
from storage.segment.dict_codes import DictPage, select_by_code, select_by_code_reference
from storage.segment.encoding import Encoding, encode_varlen

NAMES = ("k", "s", "t")
POOL = ["", "a", "AIR", "ASIA", "b", "ab", "zz", "é", "日本", "🙂", "a\x00", "MAIL", "ÆØÅ"]
OPS = ["=", "!=", "<", "<=", ">", ">=", "in", "not_in", "is_null", "is_not_null", "in_bloom"]


def _plain_only(offsets: np.ndarray, data: np.ndarray,
                words: np.ndarray | None = None) -> tuple[Encoding, bytes]:
    return Encoding.PLAIN, encode_varlen(offsets, data, Encoding.PLAIN)


def duck_sql(op: str, consts: tuple[object, ...]) -> str:
    def lit(v: object) -> str:
        return "'" + str(v).replace("'", "''") + "'"
    if op == "is_null":
        return "s IS NULL"
    if op == "is_not_null":
        return "s IS NOT NULL"
    if op in ("in", "not_in", "in_bloom"):
        if not consts:
            return "FALSE" if op != "not_in" else "s IS NOT NULL"
        neg = "NOT " if op == "not_in" else ""
        return f"s {neg}IN ({', '.join(map(lit, consts))})"
    return f"s {op} {lit(consts[0])}"


def storage_pred(op: str, consts: tuple[str, ...]) -> ColumnPredicate:
    if op == "in_bloom":  # a join's runtime filter: the build keys as a bloom filter
        keys = Column.from_physical(T.STRING, list(consts))
        lo, hi = (min(consts), max(consts)) if consts else ("", "")
        return ColumnPredicate("s", "in_bloom", (KeyBloomFilter.of(keys, lo, hi),))
    return ColumnPredicate("s", op, consts)


@st.composite
def case(draw: st.DrawFn) -> tuple[list[Batch], list[tuple[str, tuple[str, ...]]]]:
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    segments = []
    start = 0
    for _ in range(draw(st.integers(1, 2))):
        parts: list[str | None] = []
        for _ in range(int(rng.integers(1, 5))):  # runs that become DICT or PLAIN pages
            n = int(rng.integers(1, 400))
            null = float(rng.choice([0.0, 0.2, 1.0 if rng.random() < 0.1 else 0.5]))
            if rng.random() < 0.5:  # few distinct values: DICT
                pool = list(rng.choice(POOL, size=int(rng.integers(1, 5))))
                vals = [str(rng.choice(pool)) for _ in range(n)]
            else:  # all distinct: PLAIN
                vals = [f"{rng.choice(POOL)}#{start + len(parts) + i}" for i in range(n)]
            parts.extend(None if rng.random() < null else v for v in vals)
        n = len(parts)
        t = [None if v is None else v[::-1] for v in parts]
        segments.append(Batch(NAMES, (Column(T.BIGINT, np.arange(start, start + n)),
                                      Column.from_physical(T.varchar(40), parts),
                                      Column.from_physical(T.STRING, t))))
        start += n
    consts = st.sampled_from(POOL + ["AIR#3", "nope", "\U0010ffff"])
    preds = []
    for _ in range(draw(st.integers(1, 2))):
        op = draw(st.sampled_from(OPS))
        if op in ("is_null", "is_not_null"):
            preds.append((op, ()))
        elif op in ("in", "not_in", "in_bloom"):
            smallest = 1 if op == "in_bloom" else 0
            preds.append((op, tuple(draw(st.lists(consts, min_size=smallest, max_size=4)))))
        else:
            preds.append((op, (draw(consts),)))
    return segments, preds


def scan(paths: list[Path], preds: list[ColumnPredicate], cache: PageCache | None,
         batch_size: int) -> tuple[list[tuple[object, ...]], ScanStats]:
    stats = ScanStats()
    types = {"k": T.BIGINT, "s": T.varchar(40), "t": T.STRING}
    rows = []
    for path in paths:
        with SegmentReader(path, types, page_cache=cache) as reader:
            for b in reader.read(list(NAMES), preds, stats=stats, batch_size=batch_size):
                rows.extend(b.rows())
    return sorted(rows, key=lambda r: r[0]), stats  # type: ignore[arg-type, return-value]


@settings(max_examples=30, deadline=None)
@given(case=case(), page_size=st.sampled_from([96, 700, 65536]),
       batch_size=st.sampled_from([5, 150, 65536]))
def test_dictionary_codes_return_the_plain_rows(
        case: tuple[list[Batch], list[tuple[str, tuple[str, ...]]]], page_size: int,
        batch_size: int) -> None:
    segments, spec = case
    preds = [storage_pred(op, c) for op, c in spec]
    all_rows = [r for b in segments for r in b.rows()]
    expected = [r for r in all_rows if all(py_holds(op, r[1], c) for op, c in spec)]
    duck = duckdb.connect()
    duck.execute("CREATE TABLE x (k BIGINT, s VARCHAR, t VARCHAR)")
    if all_rows:
        duck.executemany("INSERT INTO x VALUES (?, ?, ?)", all_rows)
    where = " AND ".join(duck_sql(op, c) for op, c in spec)
    assert duck.execute(f"SELECT k, s, t FROM x WHERE {where} ORDER BY k").fetchall() == expected
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as d:
        mp.setattr(writer, "PAGE_SIZE", page_size)
        mixed = []
        for i, b in enumerate(segments):
            mixed.append(Path(d) / f"mixed-{i}.seg")
            write_segment(mixed[-1], b, ["k"], 1)
        mp.setattr(writer, "encode_varlen_best", _plain_only)
        plain = []
        for i, b in enumerate(segments):
            plain.append(Path(d) / f"plain-{i}.seg")
            write_segment(plain[-1], b, ["k"], 1)
        got_plain, _ = scan(plain, preds, None, batch_size)
        if any(op == "in_bloom" for op, _ in spec):  # a bloom filter lets false positives by
            assert set(expected) <= set(got_plain)
            expected = got_plain
        assert got_plain == expected
        for cache in (None, PageCache(1 << 24)):
            for _ in range(2):  # the second pass reads the cached codes
                got, stats = scan(mixed, preds, cache, batch_size)
                assert got == expected
                assert stats.rows_returned == len(expected)


@pytest.fixture(scope="module")
def mixed_segment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One segment whose `s` pages are DICT (ship modes: AIR and RAIL alternating, then MAIL
    and SHIP) then PLAIN (distinct values), then NULL."""
    values: list[str | None] = [("AIR", "RAIL")[i % 2] for i in range(6000)]
    values += [("MAIL", "SHIP")[i % 2] for i in range(6000)]
    values += [f"unique-{i}" for i in range(3000)] + [None] * 500
    n = len(values)
    batch = Batch(NAMES, (Column(T.BIGINT, np.arange(n)),
                          Column.from_physical(T.varchar(40), values),
                          Column.from_physical(T.STRING, [str(i) for i in range(n)])))
    path = tmp_path_factory.mktemp("dict") / "mixed.seg"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(writer, "PAGE_SIZE", 4096)
        write_segment(path, batch, ["k"], 1)
    return path


def test_segment_mixes_dictionary_and_plain_pages(mixed_segment: Path) -> None:
    with SegmentReader(mixed_segment, {"s": T.varchar(40)}) as reader:
        info = reader.column("s")
        kinds = {type(reader.read_page_codes(info, p)).__name__
                 for p in range(info.footer.num_pages)}
    assert kinds == {"DictPage", "Column"}


def test_pages_without_a_matching_dictionary_entry_are_skipped(mixed_segment: Path) -> None:
    # MAIL and AIR#x sort between AIR and RAIL: inside the zone maps of the AIR / RAIL pages,
    # so only their dictionaries tell that no row there matches
    got, stats = scan([mixed_segment], [ColumnPredicate("s", "in", ("MAIL", "AIR#x"))],
                      None, 65536)
    assert [r[1] for r in got] == ["MAIL"] * 3000
    assert [r[2] for r in got] == [str(i) for i in range(6000, 12000, 2)]  # gathered late
    with SegmentReader(mixed_segment, {"s": T.varchar(40)}) as reader:
        info = reader.column("s")
        air_rail_pages = sum(isinstance(reader.read_page_codes(info, p), DictPage)
                             and reader.ordinal(info).page_rows(p)[1] <= 6000
                             for p in range(info.footer.num_pages))
    assert stats.pages_skipped_dictionary == air_rail_pages > 0
    _, stats = scan([mixed_segment], [ColumnPredicate("s", "=", ("B",))], None, 65536)
    assert stats.rows_returned == 0 and stats.pages_skipped_dictionary >= air_rail_pages


def test_code_lookup_kernel_matches_its_reference() -> None:
    rng = np.random.default_rng(3)
    for d in (1, 2, 7, 300):
        table = rng.random(d) < 0.4
        codes = rng.integers(0, d, 1000).astype(np.uint64)
        assert np.array_equal(select_by_code(codes, table),
                              select_by_code_reference(codes, table))


def test_dict_page_take_gathers_only_the_rows_asked() -> None:
    dictionary = Column.from_physical(T.STRING, ["", "AIR", "日本"])
    page = DictPage(dictionary, np.array([2, 0, 1, 1], np.uint64),
                    np.array([True, False, True, True]))
    assert page.take(np.array([0, 1, 3])).to_pylist() == ["日本", None, "AIR"]
    assert page.mask([ColumnPredicate("s", "is_null")]).tolist() == [False, True, False, False]
    assert page.mask([ColumnPredicate("s", "!=", ("AIR",))]).tolist() == [
        True, False, False, False]
