"""executor/load/csv_source.py's block reader: integer file columns come back as their table
type while every block parses, and as text from the first block that does not on (the
conversion then takes the text path, whose semantics the client tests compare)."""

from __future__ import annotations

import io

import pyarrow as pa

from executor.load.csv_source import _block_batches
from executor.load.format_options import FormatOptions
from executor.load.spec import LoadStats

OPTS = FormatOptions(column_separator=b",")


def _types(body: bytes, integers: dict[str, pa.DataType]) -> list[tuple[pa.DataType, ...]]:
    stats = LoadStats()
    out = [tuple(rb.schema.types) for rb in
           _block_batches(io.BytesIO(body), ["a", "b"], OPTS, stats, integers)]
    return out


def test_integers_typed_until_a_block_does_not_parse(monkeypatch) -> None:
    monkeypatch.setattr("executor.load.chunks.READ_BLOCK", 64)  # many small blocks
    good = b"".join(b"%d,x%d\n" % (i, i) for i in range(40))
    bad = b"oops,y\n"
    types = _types(good + bad + good, {"a": pa.int16()})
    assert types[0] == (pa.int16(), pa.string())
    assert types[-1] == (pa.string(), pa.string())
    first_text = types.index((pa.string(), pa.string()))
    assert all(t == (pa.int16(), pa.string()) for t in types[:first_text])
    assert all(t == (pa.string(), pa.string()) for t in types[first_text:])
    assert _types(good, {}) and all(t == (pa.string(), pa.string()) for t in _types(good, {}))


def test_rows_and_bad_lines_are_the_same_either_way(monkeypatch) -> None:
    monkeypatch.setattr("executor.load.chunks.READ_BLOCK", 50)
    body = b"h1,h2\n1,a\n2\n\n 3 ,c\n4,d,extra\n\\N,e\n5,f"
    rows = {}
    for name, integers in (("typed", {"a": pa.int64()}), ("text", {})):
        stats = LoadStats()
        got = [r for rb in _block_batches(io.BytesIO(body), ["a", "b"],
                                          FormatOptions(column_separator=b",", skip_rows=1),
                                          stats, integers)
               for r in zip(*(c.to_pylist() for c in rb.columns))]
        rows[name] = (got, stats.skipped_rows, stats.first_errors)
    typed, text = rows["typed"], rows["text"]
    assert [b for _, b in typed[0]] == [b for _, b in text[0]] == ["a", "c", "e", "f"]
    assert [a for a, _ in typed[0]] == [1, 3, None, 5]
    assert [a for a, _ in text[0]] == ["1", " 3 ", None, "5"]
    assert typed[1] == text[1] == 2 and typed[2] == text[2]
