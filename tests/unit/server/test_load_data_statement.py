"""LOAD DATA's syntax (sql/parser/dialect.py LoadDataInfile) and its translation into Stream Load
properties (server/local_infile.py load_properties), in process."""

from __future__ import annotations

import pytest

from server.local_infile import load_properties
from sql.errors import DorisError
from sql.parser.dialect import LoadDataInfile, SqlSyntaxError, parse_one


def props(sql: str) -> dict[str, str]:
    stmt = parse_one(sql)
    assert isinstance(stmt, LoadDataInfile)
    return load_properties(stmt)


def test_doris_example_becomes_stream_load_properties() -> None:
    stmt = parse_one(
        "LOAD DATA LOCAL INFILE 'client_local.csv' INTO TABLE testdb.t1 "
        "PARTITION (partition_a, partition_b) COLUMNS TERMINATED BY '\\t' "
        "LINES TERMINATED BY '\\n' IGNORE 1 LINES (k1, k2, @v2, v10) "
        "SET (c1 = k1, c2 = @v2 * 2) PROPERTIES (\"strict_mode\" = \"true\", "
        "\"max_filter_ratio\" = \"0.2\", \"timezone\" = \"Asia/Shanghai\")")
    assert isinstance(stmt, LoadDataInfile) and stmt.args["local"]
    assert (stmt.this.text("db"), stmt.this.name) == ("testdb", "t1")
    assert stmt.args["file"].this == "client_local.csv"
    assert load_properties(stmt) == {
        "strict_mode": "true", "max_filter_ratio": "0.2", "timezone": "Asia/Shanghai",
        "column_separator": "\t", "line_delimiter": "\n", "skip_lines": "1",
        "columns": "k1, k2, v2, v10, c1 = k1, c2 = v2 * 2",
        "partitions": "partition_a, partition_b",
    }


def test_mysql_spellings() -> None:
    """FIELDS, OPTIONALLY ENCLOSED BY, ESCAPED BY, LINES STARTING BY, IGNORE n ROWS, SET
    without parentheses, TEMPORARY PARTITION."""
    assert props(
        "load data local infile '/tmp/x.csv' into table t temporary partition (tp1) "
        "fields terminated by ',' optionally enclosed by '\"' escaped by '\\\\' "
        "lines starting by '' terminated by '\\r\\n' ignore 2 rows (a, @b) "
        "set c = upper(@b), d = 1") == {
        "column_separator": ",", "enclose": '"', "escape": "\\", "line_delimiter": "\r\n",
        "skip_lines": "2", "columns": "a, b, c = UPPER(b), d = 1",
        "temporary_partitions": "tp1"}
    assert props("LOAD DATA INFILE 'f' INTO TABLE t") == {}


def test_lines_starting_by_a_prefix_is_refused() -> None:
    with pytest.raises(DorisError, match="LINES STARTING BY is not supported"):
        props("LOAD DATA LOCAL INFILE 'f' INTO TABLE t LINES STARTING BY 'x' TERMINATED BY ';'")


def test_unknown_property_is_doris_error() -> None:
    with pytest.raises(DorisError, match="max_filter_rate is invalid property"):
        props("LOAD DATA LOCAL INFILE 'f' INTO TABLE t PROPERTIES ('max_filter_rate' = '1')")
    assert props("LOAD DATA LOCAL INFILE 'f' INTO TABLE t PROPERTIES ('priority' = 'HIGH')") \
        == {}


@pytest.mark.parametrize("sql", [
    "LOAD DATA LOCAL INFILE 'f' TABLE t",
    "LOAD DATA LOCAL 'f' INTO TABLE t",
    "LOAD DATA LOCAL INFILE f INTO TABLE t",
    "LOAD DATA LOCAL INFILE 'f' INTO TABLE t SET (c)",
    "LOAD DATA LOCAL INFILE 'f' INTO TABLE t IGNORE 1",
])
def test_syntax_errors(sql: str) -> None:
    with pytest.raises(SqlSyntaxError):
        parse_one(sql)
