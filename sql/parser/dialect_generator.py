"""The SQL generator of ShaleDB's Doris dialect: typed Doris nodes back to Doris SQL."""

from __future__ import annotations

import typing as t

from sqlglot import exp, transforms
from sqlglot.generators.doris import DorisGenerator

from sql.parser.dialect_nodes import (
    _SHOW_FROM_TARGET,
    JOIN_HINTS,
    AddPartition,
    AddRollup,
    AdminCompact,
    AggTypeColumnConstraint,
    AlterSetProperties,
    DescAll,
    DorisExplain,
    DorisIndexOption,
    DorisIndexParameters,
    DorisInsert,
    DorisRollupIndex,
    DropPartition,
    DropRollup,
    KeyColumnConstraint,
    ListPartitionDef,
    PartitionByList,
    PartitionByRange,
    RangePartitionDef,
    ReplacePartition,
    StepPartitionDef,
)

# Generator
# --------------------------------------------------------------------------------------------


def _properties_sql(gen: DorisGenerator, properties: list[exp.Expr] | None) -> str:
    return ", ".join(gen.sql(p) for p in properties or [])


def _partition_values_sql(gen: DorisGenerator, values: list[exp.Expr] | None) -> str:
    return f"({', '.join(gen.sql(v) for v in values or [])})"


def _range_partition_sql(gen: DorisGenerator, e: RangePartitionDef) -> str:
    exists = " IF NOT EXISTS" if e.args.get("exists") else ""
    if e.args.get("maxvalue"):
        bound = "LESS THAN MAXVALUE"
    elif e.args.get("lower"):
        lower = _partition_values_sql(gen, e.args.get("lower"))
        upper = _partition_values_sql(gen, e.args.get("upper"))
        bound = f"[{lower}, {upper})"
    else:
        bound = f"LESS THAN {_partition_values_sql(gen, e.args.get('less_than'))}"
    props = e.args.get("properties")
    props_sql = f" ({_properties_sql(gen, props)})" if props else ""
    return f"PARTITION{exists} {gen.sql(e, 'this')} VALUES {bound}{props_sql}"


def _list_partition_sql(gen: DorisGenerator, e: ListPartitionDef) -> str:
    exists = " IF NOT EXISTS" if e.args.get("exists") else ""
    rows: list[exp.Tuple] = e.args.get("values") or []
    if not rows:
        values = ""
    elif all(len(row.expressions) == 1 for row in rows):
        values = f" VALUES IN ({', '.join(gen.sql(row.expressions[0]) for row in rows)})"
    else:
        values = f" VALUES IN ({', '.join(gen.sql(row) for row in rows)})"
    props = e.args.get("properties")
    props_sql = f" ({_properties_sql(gen, props)})" if props else ""
    return f"PARTITION{exists} {gen.sql(e, 'this')}{values}{props_sql}"


def _step_partition_sql(gen: DorisGenerator, e: StepPartitionDef) -> str:
    unit = gen.sql(e, "unit")
    unit = f" {unit}" if unit else ""
    start = _partition_values_sql(gen, e.args.get("start"))
    end = _partition_values_sql(gen, e.args.get("end"))
    return f"FROM {start} TO {end} INTERVAL {gen.sql(e, 'interval')}{unit}"


def _partition_by_sql(gen: DorisGenerator, e: PartitionByRange | PartitionByList) -> str:
    kind = "RANGE" if isinstance(e, PartitionByRange) else "LIST"
    auto = "AUTO " if e.args.get("auto") else ""
    columns = gen.expressions(e, flat=True)
    partitions = gen.expressions(e, key="partitions", flat=True)
    return f"{auto}PARTITION BY {kind} ({columns}) ({partitions})"


def _rollup_index_sql(gen: DorisGenerator, e: DorisRollupIndex) -> str:
    columns = gen.expressions(e, flat=True)
    duplicate_key = gen.expressions(e, key="duplicate_key", flat=True)
    duplicate_key = f" DUPLICATE KEY ({duplicate_key})" if duplicate_key else ""
    from_index = gen.sql(e, "from_index")
    from_index = f" FROM {from_index}" if from_index else ""
    properties = e.args.get("properties")
    properties_sql = f" {gen.properties(properties, prefix='PROPERTIES')}" if properties else ""
    return f"{gen.sql(e, 'this')}({columns}){duplicate_key}{from_index}{properties_sql}"


def _add_partition_sql(gen: DorisGenerator, e: AddPartition) -> str:
    distribution = gen.sql(e, "distribution")
    distribution = f" {distribution}" if distribution else ""
    temporary = "TEMPORARY " if e.args.get("temporary") else ""
    return f"ADD {temporary}{gen.sql(e, 'this')}{distribution}"


def _drop_partition_sql(gen: DorisGenerator, e: DropPartition) -> str:
    exists = " IF EXISTS" if e.args.get("exists") else ""
    force = " FORCE" if e.args.get("force") else ""
    temporary = "TEMPORARY " if e.args.get("temporary") else ""
    return f"DROP {temporary}PARTITION{exists} {gen.sql(e, 'this')}{force}"


def _replace_partition_sql(gen: DorisGenerator, e: ReplacePartition) -> str:
    formal = gen.expressions(e, key="partitions", flat=True)
    temporary = gen.expressions(e, key="temporary", flat=True)
    properties = e.args.get("properties")
    properties_sql = (
        f" {gen.properties(exp.Properties(expressions=properties), prefix='PROPERTIES')}"
        if properties else "")
    return f"REPLACE PARTITION ({formal}) WITH TEMPORARY PARTITION ({temporary}){properties_sql}"


def _index_parameters_sql(gen: DorisGenerator, e: DorisIndexParameters) -> str:
    columns = gen.expressions(e, key="columns", flat=True)
    using = gen.sql(e, "using")
    using = f" USING {using}" if using else ""
    props = e.args.get("properties")
    props_sql = f" PROPERTIES ({_properties_sql(gen, props)})" if props else ""
    comment = gen.sql(e, "comment")
    comment = f" COMMENT {comment}" if comment else ""
    return f" ({columns}){using}{props_sql}{comment}"


def _default_sql(gen: DorisGenerator, e: exp.DefaultColumnConstraint) -> str:
    value = e.this
    if isinstance(value, exp.CurrentTimestamp):
        # Doris only accepts the keyword form; the Doris generator would print NOW().
        precision = gen.sql(value, "this")
        return f"DEFAULT CURRENT_TIMESTAMP{f'({precision})' if precision else ''}"
    return f"DEFAULT {gen.sql(e, 'this')}"


def _explain_sql(gen: DorisGenerator, e: DorisExplain) -> str:
    style = e.args.get("style")
    return f"EXPLAIN {f'{style} ' if style else ''}{gen.sql(e, 'this')}"


class ShaleDorisGenerator(DorisGenerator):
    """Doris generator that prints every ShaleDoris node back as valid Doris SQL."""

    JOIN_HINTS = True

    TYPE_MAPPING: t.ClassVar = {**DorisGenerator.TYPE_MAPPING, exp.DType.INT128: "LARGEINT"}

    PROPERTIES_LOCATION: t.ClassVar = {
        **DorisGenerator.PROPERTIES_LOCATION,
        PartitionByRange: exp.Properties.Location.POST_SCHEMA,
        PartitionByList: exp.Properties.Location.POST_SCHEMA,
        exp.AggregateKeyProperty: exp.Properties.Location.POST_SCHEMA,
        exp.DuplicateKeyProperty: exp.Properties.Location.POST_SCHEMA,
        exp.DistributedByProperty: exp.Properties.Location.POST_SCHEMA,
        exp.RollupProperty: exp.Properties.Location.POST_SCHEMA,
    }

    TRANSFORMS: t.ClassVar = {
        **DorisGenerator.TRANSFORMS,
        AggTypeColumnConstraint: lambda self, e: e.this.name.upper(),
        RangePartitionDef: _range_partition_sql,
        ListPartitionDef: _list_partition_sql,
        StepPartitionDef: _step_partition_sql,
        PartitionByRange: _partition_by_sql,
        PartitionByList: _partition_by_sql,
        DorisRollupIndex: _rollup_index_sql,
        AddRollup: lambda self, e: f"ADD ROLLUP {self.expressions(e, flat=True)}",
        DropRollup: lambda self, e: f"DROP ROLLUP {self.expressions(e, flat=True)}",
        AddPartition: _add_partition_sql,
        ReplacePartition: _replace_partition_sql,
        DropPartition: _drop_partition_sql,
        AlterSetProperties: lambda self, e: f"SET ({_properties_sql(self, e.expressions)})",
        DorisIndexParameters: _index_parameters_sql,
        DorisIndexOption: lambda self, e: (
            f"PROPERTIES ({_properties_sql(self, e.args['properties'])})"),
        DorisExplain: _explain_sql,
        DescAll: lambda self, e: f"DESC {self.sql(e, 'this')} ALL",
        AdminCompact: lambda self, e: f"ADMIN COMPACT TABLE {self.sql(e, 'this')}"
        f"{self.sql(e, 'where')}",
        exp.DefaultColumnConstraint: _default_sql,
        DorisInsert: lambda self, e: self.doris_insert_sql(e),
        KeyColumnConstraint: lambda self, e: "KEY",
        # MySQL's generator rewrites SEMI/ANTI and FULL OUTER joins, which Doris has natively.
        exp.Select: transforms.preprocess(
            [
                transforms.eliminate_distinct_on,
                transforms.eliminate_qualify,
                transforms.unnest_generate_date_array_using_recursive_cte,
            ]
        ),
    }

    def join_sql(self, expression: exp.Join, join_op: str | None = None) -> str:
        hint = expression.args.get("hint")
        if join_op is None and isinstance(hint, exp.Var) and hint.name.upper() in JOIN_HINTS:
            side = expression.side
            if not self.SEMI_ANTI_JOIN_WITH_SIDE and expression.kind in ("SEMI", "ANTI"):
                side = ""
            parts = [p for p in (expression.method, side, expression.kind) if p]
            join_op = " ".join([*parts, "JOIN", f"[{hint.name.lower()}]"])
        return super().join_sql(expression, join_op)

    def show_sql(self, expression: exp.Show) -> str:
        name = expression.name
        if name in ("PROC", "QUERY PROFILE", "TABLET"):
            return f"SHOW {name} {self.sql(expression, 'target')}"
        if name not in _SHOW_FROM_TARGET:
            return super().show_sql(expression)
        target = self.sql(expression, "target")
        db = self.sql(expression, "db")
        source = f"{db}.{target}" if db and target else target or db
        source = f" FROM {source}" if source else ""
        like = self._prefixed_sql("LIKE", expression, "like")
        where = self.sql(expression, "where")
        return f"SHOW {name}{source}{like}{where}{self._oldstyle_limit_sql(expression)}"

    def doris_insert_sql(self, expression: DorisInsert) -> str:
        # The label sits between the target (with its PARTITION) and the column list.
        target = expression.this
        table = target.this if isinstance(target, exp.Schema) else target
        columns = self.expressions(target, flat=True) if isinstance(target, exp.Schema) else ""
        columns = f" ({columns})" if columns else ""
        labelled = f"{self.sql(table)} WITH LABEL {self.sql(expression, 'label')}{columns}"
        args = {k: v for k, v in expression.copy().args.items() if k != "label"}
        plain = exp.Insert(**args)
        plain.set("this", exp.Var(this=labelled))
        return self.insert_sql(plain)
