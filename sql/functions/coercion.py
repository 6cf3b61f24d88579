"""Type rules: implicit coercion, common super types and result types of operators.

Owns every decision "what type does this expression have" that is not specific to one function:
literal typing, arithmetic result types, the common type of comparison operands / CASE branches /
IN lists, and the sqlglot DataType -> storage DataType mapping for CAST.
Upstream: Doris Nereids `TypeCoercionUtils` (simplified; deviations are documented inline).

Rules chosen (see the module-level constants for the exact tables):
- integer + - * integer -> the wider operand type one step wider, as Doris 2.1's Nereids
  (`getDataTypeForOthers(..).promotion()`): TINYINT -> SMALLINT, SMALLINT -> INT, INT -> BIGINT;
  BIGINT and LARGEINT stay. A BIGINT/LARGEINT result out of range is an error (overflow.py),
  never a wrapped value.
- `/` -> DOUBLE for integer/float operands; DECIMAL / DECIMAL -> DECIMAL(min(38, p1+s2+4), s1+4)
  (Doris' div_precision_increment = 4). Division or modulo by zero -> NULL (Doris).
- DECIMAL +/- DECIMAL -> DECIMAL(max(p1-s1, p2-s2) + max(s1, s2) + 1, max(s1, s2)), capped at 38.
- DECIMAL * DECIMAL -> DECIMAL(min(38, p1+p2), s1+s2). Integers mix with decimals as
  DECIMAL(digits, 0); anything mixed with FLOAT/DOUBLE becomes DOUBLE.
- `%` and DIV keep the wider integer operand type (DIV of FLOAT/DOUBLE/DECIMAL -> BIGINT).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from sql.errors import DorisError
from storage.types import (
    BIGINT,
    BOOLEAN,
    DATE,
    DOUBLE,
    FLOAT,
    INT,
    LARGEINT,
    MAX_DECIMAL_PRECISION,
    NULL,
    SMALLINT,
    STRING,
    TINYINT,
    DataType,
    TypeKind,
    char,
    datetime,
    decimal,
    varchar,
)

_INT_ORDER = [TypeKind.BOOLEAN, TypeKind.TINYINT, TypeKind.SMALLINT, TypeKind.INT, TypeKind.BIGINT,
              TypeKind.LARGEINT]
# Decimal digits needed to hold every value of an integer type (Doris uses the same numbers).
INT_DIGITS = {TypeKind.BOOLEAN: 1, TypeKind.TINYINT: 3, TypeKind.SMALLINT: 5, TypeKind.INT: 10,
              TypeKind.BIGINT: 19, TypeKind.LARGEINT: 38}


# Nereids DataType.PROMOTION_MAP for integers: the result type of integer + - *
_PROMOTION = {TypeKind.TINYINT: SMALLINT, TypeKind.SMALLINT: INT, TypeKind.INT: BIGINT,
              TypeKind.BIGINT: BIGINT, TypeKind.LARGEINT: LARGEINT}


def is_null_type(t: DataType) -> bool:
    return t.kind is TypeKind.NULL


def literal_int_type(v: int) -> DataType:
    """Smallest integer type holding `v`, as Doris types integer literals."""
    for t in (TINYINT, SMALLINT, INT, BIGINT):
        lo, hi = t.int_range()
        if lo <= v <= hi:
            return t
    return LARGEINT


def literal_string_type(s: str) -> DataType:
    n = len(s.encode("utf-8"))
    return varchar(max(n, 1))


def as_decimal(t: DataType) -> DataType:
    """The decimal type that holds every value of an integer or decimal type exactly."""
    if t.is_decimal:
        return t
    return decimal(INT_DIGITS.get(t.kind, 38), 0)


def wider_int(a: DataType, b: DataType) -> DataType:
    ia, ib = _INT_ORDER.index(a.kind), _INT_ORDER.index(b.kind)
    t = a if ia >= ib else b
    return TINYINT if t.kind is TypeKind.BOOLEAN else t


def _decimal_union(a: DataType, b: DataType) -> DataType:
    da, db = as_decimal(a), as_decimal(b)
    scale = max(da.scale, db.scale)
    ints = max(da.precision - da.scale, db.precision - db.scale)
    prec = min(MAX_DECIMAL_PRECISION, ints + scale)
    return decimal(max(prec, 1), min(scale, prec))


def numeric_common(a: DataType, b: DataType) -> DataType:
    """Common type of two numeric types (used by comparisons, CASE, IN, min/max mixing)."""
    if a.is_float or b.is_float:
        return DOUBLE
    if a.is_decimal or b.is_decimal:
        return _decimal_union(a, b)
    return wider_int(a, b)


def _string_common(types: Sequence[DataType]) -> DataType:
    if any(t.kind is TypeKind.STRING for t in types):
        return STRING
    return varchar(max([t.length for t in types] + [1]))


def common_type(types: Sequence[DataType]) -> DataType:
    """Super type of several value types (CASE/IF/COALESCE branches, IN lists, UNION later).

    NULL-typed inputs are ignored. Numbers mix as `numeric_common`; DATE with DATETIME gives
    DATETIME; strings with anything else give a string (MySQL behaviour for CASE branches).
    """
    ts = [t for t in types if not is_null_type(t)]
    if not ts:
        return NULL
    first = ts[0]
    if all(t == first for t in ts):
        return first
    if all(t.is_nested and t.kind is first.kind for t in ts):
        return _nested_common(ts)
    if all(t.is_numeric for t in ts):
        out = ts[0]
        for t in ts[1:]:
            out = numeric_common(out, t)
        return out
    if all(t.is_temporal for t in ts):
        if all(t.kind is TypeKind.DATE for t in ts):
            return DATE
        return datetime(max(t.scale for t in ts if t.kind is TypeKind.DATETIME))
    if all(t.is_string for t in ts):
        return _string_common(ts)
    if any(t.is_string for t in ts):
        return STRING
    if any(t.is_temporal for t in ts) and all(t.is_temporal or t.is_numeric for t in ts):
        return DOUBLE if any(t.is_float for t in ts) else BIGINT
    raise DorisError(f"can not find common type for {', '.join(t.sql() for t in ts)}")


def _nested_common(ts: Sequence[DataType]) -> DataType:
    """ARRAY/MAP/STRUCT of the element-wise common types (STRUCT fields named by the first)."""
    first = ts[0]
    if any(len(t.children) != len(first.children) for t in ts):
        raise DorisError(f"can not find common type for {', '.join(t.sql() for t in ts)}")
    children = []
    for i in range(len(first.children)):
        child = common_type([t.children[i] for t in ts])
        children.append(child)
    return DataType(first.kind, children=tuple(children), field_names=first.field_names)


def comparison_type(a: DataType, b: DataType) -> DataType:
    """Type both operands of a comparison are converted to (literal special cases are in the
    binder: a string literal compared with a DATE/number column converts the literal)."""
    if is_null_type(a):
        return b if not is_null_type(b) else BOOLEAN
    if is_null_type(b):
        return a
    if a.is_numeric and b.is_numeric:
        return numeric_common(a, b)
    if a.is_string and b.is_string:
        return _string_common([a, b])
    if a.is_temporal and b.is_temporal:
        return common_type([a, b])
    if (a.is_temporal and b.is_string) or (b.is_temporal and a.is_string):
        return a if a.is_temporal else b
    # string vs number, temporal vs number: compare as DOUBLE (Doris does the same)
    return DOUBLE


def arithmetic_type(op: str, a: DataType, b: DataType) -> tuple[DataType, DataType, DataType]:
    """(left operand type, right operand type, result type) of `a op b`.

    The binder casts each operand to its operand type; the executor then computes in those
    types. Decimal `*` and `/` keep each operand's own scale (the result scale is derived).
    """
    if is_null_type(a) and is_null_type(b):
        a = b = BIGINT
    elif is_null_type(a):
        a = b
    elif is_null_type(b):
        b = a
    if not (a.is_numeric and b.is_numeric):
        # strings / temporals in arithmetic are converted to DOUBLE (MySQL semantics)
        return DOUBLE, DOUBLE, (BIGINT if op == "DIV" else DOUBLE)
    if op == "DIV":
        if a.is_float or b.is_float or a.is_decimal or b.is_decimal:
            return DOUBLE, DOUBLE, BIGINT
        t = wider_int(a, b)
        return t, t, t
    if a.is_float or b.is_float:
        return DOUBLE, DOUBLE, DOUBLE
    if a.is_decimal or b.is_decimal:
        da, db = as_decimal(a), as_decimal(b)
        if op in ("+", "-"):
            scale = max(da.scale, db.scale)
            ints = max(da.precision - da.scale, db.precision - db.scale) + 1
            prec = min(MAX_DECIMAL_PRECISION, ints + scale)
            t = decimal(prec, scale)
            return t, t, t
        if op == "*":
            prec = min(MAX_DECIMAL_PRECISION, da.precision + db.precision)
            return da, db, decimal(prec, min(da.scale + db.scale, prec))
        if op == "/":
            scale = min(da.scale + 4, MAX_DECIMAL_PRECISION)
            prec = min(MAX_DECIMAL_PRECISION, da.precision + db.scale + 4)
            return da, db, decimal(max(prec, scale), scale)
        u = _decimal_union(da, db)  # '%': remainder in the common scale
        return u, u, u
    if op == "/":
        return DOUBLE, DOUBLE, DOUBLE
    if op == "%":
        t = wider_int(a, b)
        return t, t, t
    t = _PROMOTION.get(wider_int(a, b).kind, BIGINT)
    return t, t, t


def sum_type(t: DataType) -> DataType:
    if t.is_decimal:
        return decimal(MAX_DECIMAL_PRECISION, t.scale)
    if t.kind is TypeKind.LARGEINT:
        return LARGEINT
    if t.is_integer or t.kind is TypeKind.BOOLEAN:
        return BIGINT
    return DOUBLE


def avg_type(t: DataType) -> DataType:
    """AVG(DECIMAL(p,s)) -> DECIMAL(38, max(s, 4)) (Doris div_precision_increment); else DOUBLE."""
    if t.is_decimal:
        return decimal(MAX_DECIMAL_PRECISION, max(t.scale, 4))
    return DOUBLE


def _type_params(dt: exp.DataType) -> list[int]:
    out = []
    for p in dt.expressions:
        node = p.this if isinstance(p, exp.DataTypeParam) else p
        try:
            out.append(int(node.name if hasattr(node, "name") else str(node)))
        except (TypeError, ValueError):
            raise DorisError(f"invalid type parameter {p.sql()}") from None
    return out


def _nested_from_sqlglot(dt: exp.DataType) -> DataType:
    """ARRAY<T> / MAP<K,V> / STRUCT<f:T,..> cast targets, element types recursively."""
    children: list[DataType] = []
    names: list[str] = []
    for child in dt.expressions:
        if isinstance(child, exp.ColumnDef) and isinstance(child.args.get("kind"), exp.DataType):
            names.append(child.name)
            children.append(from_sqlglot_type(child.args["kind"]))
        elif isinstance(child, exp.DataType):
            children.append(from_sqlglot_type(child))
        else:
            raise DorisError(f"cast to {dt.sql()} is not supported yet")
    return DataType(TypeKind(dt.this.value), children=tuple(children), field_names=tuple(names))


def from_sqlglot_type(dt: exp.DataType, for_cast: bool = True) -> DataType:
    """Map a sqlglot DataType (CAST target) to our DataType."""
    T = exp.DataType.Type
    kind = dt.this
    if kind in (T.ARRAY, T.MAP, T.STRUCT):
        return _nested_from_sqlglot(dt)
    params = _type_params(dt)
    if kind in (T.TINYINT, T.UTINYINT):
        return TINYINT
    if kind in (T.SMALLINT, T.USMALLINT):
        return SMALLINT
    if kind in (T.INT, T.UINT, T.MEDIUMINT, T.UMEDIUMINT):
        return INT
    if kind in (T.BIGINT, T.UBIGINT):
        return BIGINT
    if kind in (T.INT128, T.UINT128):
        return LARGEINT
    if kind is T.BOOLEAN:
        return BOOLEAN
    if kind is T.FLOAT:
        return FLOAT
    if kind is T.DOUBLE:
        return DOUBLE
    if kind in (T.DECIMAL, T.BIGDECIMAL, T.DECIMAL32, T.DECIMAL64, T.DECIMAL128):
        prec = params[0] if params else 9
        scale = params[1] if len(params) > 1 else 0
        if not 1 <= prec <= MAX_DECIMAL_PRECISION or not 0 <= scale <= prec:
            raise DorisError(f"Invalid decimal type with precision = {prec}, scale = {scale}")
        return decimal(prec, scale)
    if kind is T.DATE or kind is T.DATE32:
        return DATE
    if kind in (T.DATETIME, T.TIMESTAMP, T.DATETIME64, T.TIMESTAMPTZ, T.TIMESTAMPLTZ):
        return datetime(min(params[0], 6) if params else 0)
    if kind is T.CHAR:
        # CAST(x AS CHAR) is MySQL's "to string"; CHAR(n) pads nothing in Doris either.
        return char(params[0]) if params else STRING
    if kind in (T.VARCHAR, T.NVARCHAR):
        return varchar(params[0]) if params else STRING
    if kind in (T.TEXT, T.LONGTEXT, T.MEDIUMTEXT, T.TINYTEXT):
        return STRING
    raise DorisError(f"cast to {dt.sql()} is not supported yet")
