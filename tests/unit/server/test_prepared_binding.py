"""Parameter numbering and typed binding of server-side prepared statements (server/prepared.py).

The end-to-end behaviour is covered with a real driver in tests/clients/test_jdbc.py; these pin
the parts a driver cannot isolate: which `?` are parameters, and that a bound value is a literal
node, so no value can change the statement's shape.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from sqlglot import exp

from server.prepared import bind, number_placeholders
from sql.parser.dialect import parse


def test_only_parameter_markers_are_numbered() -> None:
    sql = "SELECT ?, '?' FROM t /* ? */ WHERE a = ? -- ?\n AND b = \"?\" LIMIT ?"
    numbered, count = number_placeholders(sql)
    assert count == 3
    assert "'?'" in numbered and '"?"' in numbered and "/* ? */" in numbered
    assert numbered.count(":shale_param_") == 3


def test_parameters_bind_in_source_order() -> None:
    # LIMIT comes before WHERE in sqlglot's tree walk: numbering must follow the text.
    numbered, count = number_placeholders("SELECT a FROM t WHERE a = ? AND b IN (?, ?) LIMIT ?")
    [stmt] = bind(parse(numbered), [1, "x", "y", 5])
    assert count == 4
    assert stmt.sql(dialect="mysql") == "SELECT a FROM t WHERE a = 1 AND b IN ('x', 'y') LIMIT 5"


@pytest.mark.parametrize(
    "value",
    ["it's", "'; DROP TABLE t; --", "a\\'b", "?", "日本"],
)
def test_strings_stay_one_literal(value: str) -> None:
    numbered, _ = number_placeholders("INSERT INTO t VALUES (?, ?)")
    [stmt] = bind(parse(numbered), [value, None])
    row = stmt.expression.expressions[0].expressions
    assert isinstance(row[0], exp.Literal) and row[0].is_string and row[0].this == value
    assert isinstance(row[1], exp.Null)
    # And the statement still prints and re-parses to the same single row.
    again = parse(stmt.sql(dialect="mysql"))[0]
    assert again.expression.expressions[0].expressions[0].this == value


def test_typed_values() -> None:
    numbered, _ = number_placeholders("SELECT ?, ?, ?, ?, ?, ?, ?, ?")
    [stmt] = bind(
        parse(numbered),
        [
            Decimal("-12.50"),
            1.5,
            -2,
            dt.date(2024, 2, 29),
            dt.datetime(2024, 2, 29, 1, 2, 3, 4),
            True,
            -dt.timedelta(days=1, hours=2, minutes=3, seconds=4),
            float("inf"),
        ],
    )
    texts = [e.sql(dialect="mysql") for e in stmt.expressions]
    assert texts == [
        "-12.50",
        "1.5e0",
        "-2",
        "CAST('2024-02-29' AS DATE)",
        "CAST('2024-02-29 01:02:03.000004' AS DATETIME(6))",
        "1",
        "'-26:03:04'",
        "CAST('inf' AS DOUBLE)",
    ]
