"""sql/ddl/ctas.py: Doris 2.1's CTAS column typing and the LIKE / WITH ROLLUP clause parsing."""

from __future__ import annotations

import pytest

from sql.ddl.ctas import ctas_type, like_rollups, like_source
from sql.parser.dialect import parse_one
from storage.catalog.meta import ColumnMeta
from storage.types import DataType, TypeKind

VARCHAR10 = DataType(TypeKind.VARCHAR, length=10)
MAX_VARCHAR = DataType(TypeKind.VARCHAR, length=65533)
STRING = DataType(TypeKind.STRING)
INT = DataType(TypeKind.INT)


@pytest.mark.parametrize(("t", "position", "from_table", "expected"), [
    (DataType(TypeKind.NULL), 1, False, DataType(TypeKind.TINYINT)),
    (VARCHAR10, 0, True, VARCHAR10),  # a table column keeps its type, first or not
    (VARCHAR10, 2, True, VARCHAR10),
    (STRING, 0, True, MAX_VARCHAR),  # a STRING first column becomes a VARCHAR key
    (STRING, 1, True, STRING),
    (VARCHAR10, 1, False, MAX_VARCHAR),  # string expressions: the maximum length
    (STRING, 1, False, MAX_VARCHAR),
    (DataType(TypeKind.CHAR, length=3), 1, False, MAX_VARCHAR),
    (INT, 0, False, INT),
    (DataType(TypeKind.DECIMAL, precision=13, scale=2), 1, False,
     DataType(TypeKind.DECIMAL, precision=13, scale=2)),
])
def test_ctas_type(t: DataType, position: int, from_table: bool, expected: DataType) -> None:
    source = ColumnMeta("c", t) if from_table else None
    assert ctas_type(t, position, source) == expected


@pytest.mark.parametrize(("sql", "source", "rollups"), [
    ("CREATE TABLE t2 LIKE t", "t", None),
    ("CREATE TABLE IF NOT EXISTS d.t2 LIKE d1.t WITH ROLLUP", "d1.t", []),
    ("CREATE TABLE t2 LIKE t WITH ROLLUP (r1, r2)", "t", ["r1", "r2"]),
])
def test_like_clause(sql: str, source: str, rollups: list[str] | None) -> None:
    create = parse_one(sql)
    assert like_source(create).sql() == source
    assert like_rollups(create) == rollups


def test_ctas_is_not_like() -> None:
    assert like_source(parse_one("CREATE TABLE t2 AS SELECT 1 AS a")) is None
