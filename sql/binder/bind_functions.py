"""sqlglot function nodes -> registry calls, for functions whose sqlglot form differs from the
Doris call: argument reordering (TIMESTAMPDIFF, LOCATE), options turned into separate functions
(TRIM LEADING -> ltrim), strftime formats turned back into MySQL ones (STR_TO_DATE,
FROM_UNIXTIME), units turned into literals (DATE_TRUNC), and node classes that map one-to-one.

Pure AST work: `translate` returns the registry name and the argument nodes, or a rewritten AST
node, and `sql.binder.bind_expressions` binds the result. Upstream: Doris Nereids
`BuiltinScalarFunctions` names; the sqlglot Doris/MySQL dialect parsers.
"""

from __future__ import annotations

import re

from sqlglot import exp

from sql.binder.literals import strftime_to_mysql
from sql.binder.nested_nodes import translate_nested

Translation = tuple[str, list[exp.Expression | None]]

# node class -> (registry name, argument names in call order); None arguments at the end drop
FUNCS: dict[type, tuple[str, tuple[str, ...]]] = {
    exp.Week: ("week", ("this", "mode")), exp.WeekOfYear: ("weekofyear", ("this",)),
    exp.Dayname: ("dayname", ("this",)), exp.LastDay: ("last_day", ("this",)),
    exp.SplitPart: ("split_part", ("this", "delimiter", "part_index")),
    exp.SubstringIndex: ("substring_index", ("this", "delimiter", "count")),
    exp.Space: ("space", ("this",)), exp.Ascii: ("ascii", ("this",)),
    exp.RegexpLike: ("regexp", ("this", "expression")),
    exp.RegexpExtract: ("regexp_extract", ("this", "expression", "position")),
    exp.RegexpExtractAll: ("regexp_extract_all", ("this", "expression")),
    exp.RegexpReplace: ("regexp_replace", ("this", "expression", "replacement")),
    exp.MD5: ("md5", ("this",)), exp.SHA: ("sha1", ("this",)),
    exp.SHA2: ("sha2", ("this", "length")), exp.Hex: ("hex", ("this",)),
    exp.Unhex: ("unhex", ("this",)), exp.Rand: ("rand", ("this",)),
    exp.Degrees: ("degrees", ("this",)), exp.Radians: ("radians", ("this",)),
    exp.Sin: ("sin", ("this",)), exp.Cos: ("cos", ("this",)), exp.Tan: ("tan", ("this",)),
    exp.Cot: ("cot", ("this",)), exp.Asin: ("asin", ("this",)), exp.Acos: ("acos", ("this",)),
    exp.Atan: ("atan", ("this", "expression")), exp.Atan2: ("atan2", ("this", "expression")),
}

# aggregate node classes whose sqlglot name differs from ours (sqlglot's VARIANCE is var_samp);
# the second half maps sqlglot's canonical names back to the Doris name the user wrote, so an
# error names `collect_set`, not ARRAY_UNIQUE_AGG, and the Doris name resolves once registered
AGG_NAMES: dict[type, str] = {
    exp.Variance: "var_samp", exp.VariancePop: "var_pop", exp.StddevPop: "stddev_pop",
    exp.StddevSamp: "stddev_samp", exp.Stddev: "stddev_samp",
    exp.ArrayUniqueAgg: "collect_set", exp.ArgMax: "max_by", exp.ArgMin: "min_by",
    exp.LogicalOr: "bool_or", exp.LogicalAnd: "bool_and", exp.CountIf: "count_if",
}
# aggregates sqlglot parses into its own node names (branch aggs; sql/functions/collect.py,
# pairs.py): COLLECT_SET is ArrayUniqueAgg, BOOL_OR LogicalOr, MAX_BY ArgMax, ...
AGGREGATE_NODE_NAMES: dict[type, str] = {
    exp.ArrayUniqueAgg: "collect_set", exp.LogicalOr: "bool_or", exp.LogicalAnd: "bool_and",
    exp.ArgMax: "max_by", exp.ArgMin: "min_by",
}
AGG_NAMES.update(AGGREGATE_NODE_NAMES)

# SQLGLOT_TO_DORIS: scalar node classes sqlglot gives a canonical name that is not the Doris
# one (JSONObject prints as J_S_O_N_OBJECT, array_join parses as ArrayToString): the Doris
# registry name and the argument names in Doris call order. A list argument spreads; a
# JSON_OBJECT key/value pair spreads into key, value; a parsed JSON path goes back to its text.
SQLGLOT_TO_DORIS: dict[type, tuple[str, tuple[str, ...]]] = {
    exp.JSONObject: ("json_object", ("expressions",)),
    exp.JSONExtract: ("json_extract", ("this", "expression", "expressions")),
    exp.JSONBExtract: ("jsonb_extract", ("this", "expression")),
    exp.JSONKeys: ("json_keys", ("this", "expression")),
    exp.JSONType: ("json_type", ("this", "expression")),
    exp.StringToArray: ("split_by_string", ("this", "expression")),
    exp.ArrayToString: ("array_join", ("this", "expression", "null")),
    exp.ConvertTimezone: ("convert_tz", ("timestamp", "source_tz", "target_tz")),
    exp.BitwiseCount: ("bit_count", ("this",)),
    exp.ToBase64: ("to_base64", ("this",)), exp.FromBase64: ("from_base64", ("this",)),
    exp.Uuid: ("uuid", ()),
    exp.MonthsBetween: ("months_between", ("this", "expression", "roundoff")),
    exp.ParseUrl: ("parse_url", ("this", "part_to_extract", "key")),
    exp.Elt: ("elt", ("this", "expressions")),
    exp.ArraySort: ("array_sort", ("this",)),
    exp.ArrayDistinct: ("array_distinct", ("this",)),
    exp.ArrayConcat: ("array_concat", ("this", "expressions")),
    exp.ArrayMax: ("array_max", ("this",)), exp.ArrayMin: ("array_min", ("this",)),
    exp.ArraySum: ("array_sum", ("this",)),
    exp.ArraySlice: ("array_slice", ("this", "start", "end")),
    exp.ArrayPosition: ("array_position", ("this", "expression")),
    exp.ArrayIntersect: ("array_intersect", ("expressions",)),
    exp.ArrayExcept: ("array_except", ("this", "expression")),
    exp.ArrayRemove: ("array_remove", ("this", "expression")),
    exp.ArrayCompact: ("array_compact", ("this",)),
    exp.ArrayReverse: ("array_reverse", ("this",)),
    exp.ArrayFilter: ("array_filter", ("this", "expression")),
    exp.ArrayFirst: ("array_first", ("this", "expression")),
    exp.RegexpCount: ("regexp_count", ("this", "expression")),
}


def _doris_args(node: exp.Expression, argnames: tuple[str, ...]) -> list[exp.Expression | None]:
    """The arguments of `node` in Doris call order, for a SQLGLOT_TO_DORIS entry."""
    out: list[exp.Expression | None] = []
    for name in argnames:
        value = node.args.get(name)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, exp.JSONKeyValue):
                out.extend([item.this, item.expression])
            elif isinstance(item, exp.JSONPath):
                out.append(exp.Literal.string(item.sql(dialect="mysql").strip("'")))
            elif item is not None:
                out.append(item)
    return out


def _undate(node: exp.Expression) -> exp.Expression:
    """sqlglot wraps date arguments of MySQL functions in TsOrDsToDate; we coerce ourselves."""
    return node.this if isinstance(node, exp.TsOrDsToDate) else node


def _mysql_format(fmt: exp.Expression | None) -> exp.Expression | None:
    if isinstance(fmt, exp.Literal) and fmt.is_string:
        return exp.Literal.string(strftime_to_mysql(fmt.this))
    return fmt


# Doris' <unit>s_add / <unit>s_sub family (days_add(d, n) = d + INTERVAL n DAY)
_UNIT_ADD = re.compile(r"^(year|quarter|month|week|day|hour|minute|second)s_(add|sub)$")


def translate(node: exp.Expression) -> Translation | exp.Expression | None:
    """The call `node` stands for: (name, argument nodes), a rewritten node, or None."""
    if isinstance(node, exp.Anonymous) and len(node.expressions) == 2:
        unit_add = _UNIT_ADD.match(node.name.lower())
        if unit_add is not None:
            cls = exp.DateAdd if unit_add.group(2) == "add" else exp.DateSub
            return cls(this=node.expressions[0], expression=node.expressions[1],
                       unit=exp.Var(this=unit_add.group(1).upper()))
    if isinstance(node, exp.AddMonths):  # months_add / add_months
        return exp.DateAdd(this=node.this, expression=node.expression, unit=exp.Var(this="MONTH"))
    nested_call = translate_nested(node)  # ARRAY / MAP / STRUCT syntax
    if nested_call is not None:
        return nested_call
    if type(node) in FUNCS:
        name, argnames = FUNCS[type(node)]
        args: list[exp.Expression | None] = [node.args.get(a) for a in argnames]
        if args and args[0] is not None:
            args[0] = _undate(args[0])
        while args and args[-1] is None:
            args.pop()
        return name, args
    if isinstance(node, exp.StrPosition) and node.args.get("position") is not None:
        return "locate", [node.args["substr"], node.this, node.args["position"]]
    if isinstance(node, exp.Trim):
        position = str(node.args.get("position") or "BOTH").upper()
        name = {"LEADING": "ltrim", "TRAILING": "rtrim"}.get(position, "trim")
        chars = node.args.get("expression")
        return name, [node.this] + ([chars] if chars is not None else [])
    if isinstance(node, (exp.StrToTime, exp.StrToDate, exp.UnixToTime)):
        fmt = _mysql_format(node.args.get("format"))
        name = "from_unixtime" if isinstance(node, exp.UnixToTime) else "str_to_date"
        return name, [node.this] + ([fmt] if fmt is not None else [])
    if isinstance(node, exp.TimestampTrunc):  # date_trunc(d, 'unit') and date_trunc('unit', d)
        unit = node.args.get("unit")
        return "date_trunc", [node.this, exp.Literal.string(
            unit.name.lower() if unit is not None else "day")]
    if isinstance(node, exp.TimestampDiff):  # sqlglot keeps (later, earlier)
        unit = node.args.get("unit")
        return "timestampdiff", [exp.Literal.string(
            unit.name.upper() if unit is not None else "SECOND"), node.expression, node.this]
    if isinstance(node, exp.Chr):
        return "char", list(node.expressions)
    if isinstance(node, exp.DateDiff) and _is_year_zero(node.expression):
        # sqlglot spells TO_DAYS(d) as DATEDIFF(d, '0000-01-01') + 1; year 0 is no DATE
        return exp.Sub(this=exp.Anonymous(this="to_days", expressions=[_undate(node.this)]),
                       expression=exp.Literal.number(1))
    if type(node) in SQLGLOT_TO_DORIS:
        name, argnames = SQLGLOT_TO_DORIS[type(node)]
        return name, _doris_args(node, argnames)
    return None


def _is_year_zero(node: exp.Expression | None) -> bool:
    node = _undate(node) if node is not None else None
    return isinstance(node, exp.Literal) and node.is_string and node.this == "0000-01-01"
