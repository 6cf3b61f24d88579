"""executor/load/csv_source.py's CsvBlockParser (a CSV Stream Load without enclose): integer
file columns come back as their table type while every block parses, as text from the first
block that does not on (the conversion then takes the text path, whose semantics the client
tests compare with the streaming reader's), and as text for a block holding `0x`; the rows
and the bad lines are the same either way; `line_blocks_of` skips the header lines."""

from __future__ import annotations

import io

import pyarrow as pa

from executor.load.csv_source import CsvBlockParser, line_blocks_of
from executor.load.format_options import FormatOptions
from executor.load.spec import LoadStats
from storage.catalog.meta import ColumnMeta
from storage.types import SMALLINT, STRING


class _Spec:
    """The LoadSpec surface the parser reads."""

    def __init__(self, skip_rows: int = 0, integer: bool = True) -> None:
        self.targets = [ColumnMeta("a", SMALLINT if integer else STRING), ColumnMeta("b", STRING)]
        self.format = FormatOptions(column_separator=b",", skip_rows=skip_rows)
        self.mapping = None


def _types(parser: CsvBlockParser, blocks: list[bytes]) -> list[tuple[pa.DataType, ...]]:
    return [tuple(parser.parse(b, LoadStats()).schema.types) for b in blocks]


def test_integers_typed_until_a_block_does_not_parse() -> None:
    good = b"\n".join(b"%d,x%d" % (i, i) for i in range(40))
    parser = CsvBlockParser(_Spec())  # type: ignore[arg-type]
    typed, text = (pa.int16(), pa.string()), (pa.string(), pa.string())
    assert _types(parser, [good, good + b"\n0x10,y", good]) == [typed, text, typed]
    assert _types(parser, [good, b"oops,y", good, good]) == [typed, text, text, text]
    plain = CsvBlockParser(_Spec(integer=False))  # type: ignore[arg-type]
    assert _types(plain, [good]) == [text]


def test_rows_and_bad_lines_are_the_same_either_way() -> None:
    body = b"h1,h2\n1,a\n2\n\n 3 ,c\n4,d,extra\n\\N,e\n5,f"
    blocks = list(line_blocks_of(io.BytesIO(body), _Spec(skip_rows=1)))  # type: ignore[arg-type]
    assert b"h1" not in b"".join(blocks)
    got = {}
    for name, integer in (("typed", True), ("text", False)):
        parser = CsvBlockParser(_Spec(integer=integer))  # type: ignore[arg-type]
        stats = LoadStats()
        rows = [r for b in blocks for rb in [parser.parse(b, stats)]
                for r in zip(*(c.to_pylist() for c in rb.columns))]
        got[name] = (rows, stats.skipped_rows, stats.first_errors)
    typed, text = got["typed"], got["text"]
    assert [b for _, b in typed[0]] == [b for _, b in text[0]] == ["a", "c", "e", "f"]
    assert [a for a, _ in typed[0]] == [1, 3, None, 5]
    assert [a for a, _ in text[0]] == ["1", " 3 ", None, "5"]
    assert typed[1] == text[1] == 2 and typed[2] == text[2]
    assert "actual column number in csv file is less than schema column number" in \
        typed[2][0]


def test_header_lines_longer_than_a_block_are_skipped(monkeypatch) -> None:
    monkeypatch.setattr("executor.load.chunks.READ_BLOCK", 16)
    body = b"".join(b"header line %d\n" % i for i in range(5)) + b"1,a\n2,b\n"
    blocks = list(line_blocks_of(io.BytesIO(body), _Spec(skip_rows=5)))  # type: ignore[arg-type]
    assert b"\n".join(blocks) == b"1,a\n2,b"
