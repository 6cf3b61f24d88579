"""MySQL column types in CREATE TABLE, mapped to Doris types.

Tools that create tables through the MySQL protocol (Spark's JDBC writer, pandas `to_sql`,
ORMs) send plain MySQL DDL: LONGTEXT, BIT(1), FLOAT(53), DOUBLE PRECISION, INT UNSIGNED, ...
Doris has no such types; this module maps each to the Doris type that holds every value the
MySQL type can (the rules are listed in README.md, "MySQL DDL from tools"). Types Doris has
(INT, BIGINT, VARCHAR(n), DATE, DATETIME/TIMESTAMP, DECIMAL, BOOLEAN, TEXT) are left to the
normal path. A CREATE TABLE without Doris KEY / DISTRIBUTED clauses already becomes a
DUPLICATE table with Doris 2.1's default keys and `DISTRIBUTED BY RANDOM BUCKETS AUTO`
(sql/ddl.py); nothing else is needed for such statements.
"""

from __future__ import annotations

from sqlglot import exp

_FLOAT_MAX_SINGLE_PRECISION = 24  # MySQL: FLOAT(p) is a FLOAT up to p=24, a DOUBLE above

_DIRECT: dict[exp.DType, str] = {
    # Character and binary large objects: Doris' STRING (up to 2 GB, like LONGTEXT).
    exp.DType.TINYTEXT: "STRING",
    exp.DType.MEDIUMTEXT: "STRING",
    exp.DType.LONGTEXT: "STRING",
    exp.DType.BLOB: "STRING",
    exp.DType.TINYBLOB: "STRING",
    exp.DType.MEDIUMBLOB: "STRING",
    exp.DType.LONGBLOB: "STRING",
    exp.DType.BINARY: "STRING",
    exp.DType.VARBINARY: "STRING",
    # Integers: MEDIUMINT fits INT; unsigned types take the next wider signed type.
    exp.DType.MEDIUMINT: "INT",
    exp.DType.UTINYINT: "SMALLINT",
    exp.DType.USMALLINT: "INT",
    exp.DType.UMEDIUMINT: "INT",
    exp.DType.UINT: "BIGINT",
    exp.DType.UBIGINT: "LARGEINT",
}


def _params(dtype: exp.DataType) -> list[int]:
    out = []
    for p in dtype.expressions:
        value = p.this if isinstance(p, exp.DataTypeParam) else p
        out.append(int(value.name))
    return out


def doris_type_sql(dtype: exp.DataType) -> str | None:
    """The Doris type text for a MySQL-only column type, None when Doris has the type itself."""
    kind = dtype.this
    if kind in _DIRECT:
        return _DIRECT[kind]
    if kind == exp.DType.BIT:
        # BIT(1) is MySQL's boolean (Spark writes BooleanType as BIT(1)); wider BITs are numbers.
        width = (_params(dtype) or [1])[0]
        return "BOOLEAN" if width == 1 else "BIGINT"
    if kind == exp.DType.FLOAT:
        params = _params(dtype)
        if params and params[0] > _FLOAT_MAX_SINGLE_PRECISION:
            return "DOUBLE"
    return None
