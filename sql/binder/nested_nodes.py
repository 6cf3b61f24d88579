"""sqlglot nodes of nested values -> registry calls, and the result types that need constants.

`[1, 2]` / ARRAY(..) -> array(..); `{'k': v}` -> map('k', v); `{v1, v2}` / STRUCT(..) ->
struct(..); MAP(k, v) -> map(k, v); `x[i]` -> element_at(x, i); and the sqlglot function
classes of array_size, array_contains, map_keys, map_contains_key. named_struct and
struct_element carry field names as constants, so their types are set here from the bound
literals. Upstream: Doris Nereids `ArrayLiteral`, `MapLiteral`, `StructLiteral`,
`ElementAt`, `StructElement`.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from sql.binder.expressions import Call, ColumnRef, Expr, Literal
from sql.errors import DorisError
from sql.functions.nested import named_struct_type, struct_field_index
from storage.types import DataType, TypeKind

Translation = tuple[str, list[exp.Expression | None]]

# one-to-one sqlglot function classes: (registry name, argument names in call order)
_CALLS: dict[type, tuple[str, tuple[str, ...]]] = {
    exp.ArraySize: ("array_size", ("this",)),
    exp.ArrayContains: ("array_contains", ("this", "expression")),
    exp.MapKeys: ("map_keys", ("this",)),
    exp.MapContainsKey: ("map_contains_key", ("this", "key")),
}


def _key_literal(key: exp.Expression) -> exp.Expression:
    """A `{k: v}` key: sqlglot reads it as an identifier; Doris means the literal."""
    if isinstance(key, exp.Identifier):
        return exp.Literal.string(key.name)
    return key


def translate_nested(node: exp.Expression) -> Translation | None:
    """The registry call a nested-value node stands for, or None."""
    if isinstance(node, exp.Array):
        return "array", list(node.expressions)
    if isinstance(node, exp.Struct):
        items = list(node.expressions)
        if items and all(isinstance(i, exp.PropertyEQ) for i in items):
            args: list[exp.Expression | None] = []
            for item in items:
                args.extend([_key_literal(item.this), item.expression])
            return "map", args
        if not items:
            return "map", []
        return "struct", items
    if isinstance(node, exp.Map):
        keys, values = node.args.get("keys"), node.args.get("values")
        if keys is None and values is None:
            return "map", []
        return "map", [keys, values]
    if isinstance(node, exp.Bracket):
        if len(node.expressions) != 1:
            raise DorisError(f"expression '{node.sql(dialect='mysql')}' is not supported yet")
        return "element_at", [node.this, node.expressions[0]]
    if type(node) in _CALLS:
        name, argnames = _CALLS[type(node)]
        return name, [node.args.get(a) for a in argnames]
    return None


def _constant_text(e: Expr, what: str) -> object:
    if not isinstance(e, Literal) or e.value is None:
        raise DorisError(f"{what} must be a constant")
    value = e.value
    return value.decode() if isinstance(value, bytes) else value


def nested_call_type(name: str, args: Sequence[Expr]) -> DataType:
    """The result type of named_struct / struct_element (field names are constant args)."""
    if name == "named_struct":
        names = [str(_constant_text(a, "named_struct field name")) for a in args[0::2]]
        return named_struct_type(names, [a.type for a in args[1::2]])
    struct_t, field = args[0].type, args[1]
    if struct_t.kind is not TypeKind.STRUCT:
        raise DorisError("struct_element only applies to STRUCT values")
    call = f"struct_element({', '.join(_doris_sql(a) for a in args)})"
    if not isinstance(field, Literal) or field.value is None or not (
            field.type.is_integer or field.type.is_string):
        raise DorisError(  # Doris' StructElement text
            f"struct_element only allows constant int or string second parameter: {call}")
    value = field.value.decode() if isinstance(field.value, bytes) else field.value
    key: object = int(value) if field.type.is_integer else str(value)  # type: ignore[call-overload]
    return struct_t.children[struct_field_index(struct_t, key, call)]


def _doris_sql(e: Expr) -> str:
    """An argument as Doris' FE prints it in an error (Expression.toSql(): columns by bare
    name)."""
    if isinstance(e, ColumnRef):
        return e.name
    if isinstance(e, Call):
        return f"{e.name}({', '.join(_doris_sql(a) for a in e.args)})"
    return e.sql()


# Doris `Type.OnlyMetricTypeErrorMsg`: complex values are neither compared, grouped nor sorted
ONLY_METRIC_TYPE_ERROR = (
    "Doris hll, bitmap, array, map, struct, jsonb, variant column must use with specific "
    "function, and don't support filter, group by or order by. please run 'help hll' or "
    "'help bitmap' or 'help array' or 'help map' or 'help struct' or 'help jsonb' or "
    "'help variant' in your mysql client."
)


def check_comparable(*types: DataType) -> None:
    """Refuse a comparison, GROUP BY or ORDER BY over a nested value, as Doris does."""
    if any(t.is_nested for t in types):
        raise DorisError(ONLY_METRIC_TYPE_ERROR)
