"""MySQL column types in a CREATE TABLE, mapped to Doris types.

Tools that only speak MySQL (pandas `to_sql` through SQLAlchemy, Spark's JDBC writer,
Connector/J batch tools) send plain MySQL DDL: `INTEGER`, `LONGTEXT`, `DOUBLE PRECISION`,
`FLOAT(53)`, `TIMESTAMP`, `BIT(1)`, `BOOL`, unsigned integers. Doris' own parser accepts most
of them; this module is the one place that says what the MySQL-only spellings become, so the
CREATE TABLE analysis (sql/ddl/specs.py `type_sql`) and anything else translating MySQL DDL
share one table. The choices follow Doris' own MySQL-to-Doris mapping (its JDBC catalog):

| MySQL                                   | Doris            |
|-----------------------------------------|------------------|
| TINYTEXT, MEDIUMTEXT, LONGTEXT, TEXT    | STRING           |
| TINYBLOB, BLOB, MEDIUMBLOB, LONGBLOB, BINARY(n), VARBINARY(n) | STRING |
| FLOAT(p), p <= 24                       | FLOAT            |
| FLOAT(p), p > 24 ; DOUBLE PRECISION     | DOUBLE           |
| BIT(1)                                  | BOOLEAN          |
| BIT(n), n > 1                           | BIGINT           |
| MEDIUMINT                               | INT              |
| TINYINT UNSIGNED                        | SMALLINT         |
| SMALLINT / MEDIUMINT UNSIGNED           | INT              |
| INT UNSIGNED                            | BIGINT           |
| BIGINT UNSIGNED                         | LARGEINT         |
| TIMESTAMP(p)                            | DATETIME(p)      |
| YEAR                                    | SMALLINT         |

INTEGER, BIGINT, VARCHAR(n), CHAR(n), DATETIME, DATE, DECIMAL/NUMERIC and BOOL/BOOLEAN are
Doris types already. A CREATE TABLE with no KEY / DISTRIBUTED clause is completed the way Doris
2.1 completes it (sql/ddl/create_table.py): a DUPLICATE table keyed on its leading columns,
`DISTRIBUTED BY RANDOM BUCKETS AUTO`.
"""

from __future__ import annotations

from sqlglot import expressions as exp

_TEXTS = {
    exp.DType.TINYTEXT, exp.DType.MEDIUMTEXT, exp.DType.LONGTEXT, exp.DType.TINYBLOB,
    exp.DType.BLOB, exp.DType.MEDIUMBLOB, exp.DType.LONGBLOB, exp.DType.BINARY,
    exp.DType.VARBINARY,
}
_FIXED = {
    exp.DType.MEDIUMINT: "INT",
    exp.DType.UTINYINT: "SMALLINT",
    exp.DType.USMALLINT: "INT",
    exp.DType.UMEDIUMINT: "INT",
    exp.DType.UINT: "BIGINT",
    exp.DType.UBIGINT: "LARGEINT",
    exp.DType.YEAR: "SMALLINT",
}
FLOAT_MAX_PRECISION = 24  # MySQL: FLOAT(p) is single precision up to p = 24, double above


def _first_param(dtype: exp.DataType) -> int | None:
    if not dtype.expressions:
        return None
    param = dtype.expressions[0]
    value = param.this if isinstance(param, exp.DataTypeParam) else param
    try:
        return int(value.name)
    except (TypeError, ValueError):
        return None


def doris_type_sql(dtype: exp.DataType) -> str | None:
    """The Doris spelling of a MySQL-only column type, or None when `dtype` needs no mapping."""
    kind = dtype.this
    if kind in _TEXTS:
        return "STRING"
    if kind in _FIXED:
        return _FIXED[kind]
    if kind == exp.DType.FLOAT:
        p = _first_param(dtype)
        if p is not None:
            return "DOUBLE" if p > FLOAT_MAX_PRECISION else "FLOAT"
        return None
    if kind == exp.DType.BIT:
        n = _first_param(dtype)
        return "BOOLEAN" if n is None or n == 1 else "BIGINT"
    return None
