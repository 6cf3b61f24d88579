"""Custom sqlglot nodes and constants of ShaleDB's Doris dialect (see `sql.parser.dialect`).

Each node lists exp.Expression first: sqlglot 30's trait classes derive from the abstract
exp.Expr, whose methods raise NotImplementedError.
"""

from __future__ import annotations

import re
import typing as t

from sqlglot import exp

# Column aggregation types of AGGREGATE KEY tables, in Doris' own order.
AGG_TYPES: tuple[str, ...] = (
    "SUM",
    "MAX",
    "MIN",
    "REPLACE",
    "REPLACE_IF_NOT_NULL",
    "HLL_UNION",
    "BITMAP_UNION",
    "QUANTILE_UNION",
    "GENERIC",
)

# Distribution hints written as ``JOIN [shuffle] t``.
JOIN_HINTS: frozenset[str] = frozenset({"SHUFFLE", "BROADCAST", "BUCKET", "COLOCATE"})

# ``EXPLAIN <style> <stmt>``; the multi-word styles all end in PLAN.
_EXPLAIN_SINGLE = ("VERBOSE", "GRAPH", "TREE")
_EXPLAIN_PLAN_PREFIXES = (
    "SHAPE",
    "PHYSICAL",
    "LOGICAL",
    "OPTIMIZED",
    "REWRITTEN",
    "ANALYZED",
    "PARSED",
    "MEMO",
    "DISTRIBUTED",
    "ALL",
)
EXPLAIN_STYLES: frozenset[str] = frozenset(
    {*_EXPLAIN_SINGLE, *(f"{p} PLAN" for p in _EXPLAIN_PLAN_PREFIXES)}
)

# Doris types sqlglot has no DType for; kept as DataType(USERDEFINED, kind=<name>).
_OPAQUE_TYPES = frozenset({"BITMAP", "HLL", "QUANTILE_STATE"})

# SHOW kinds whose target table is introduced by FROM (``SHOW PARTITIONS FROM db.t``).
_SHOW_FROM_TARGET = frozenset({"PARTITIONS", "TEMPORARY PARTITIONS", "TABLETS", "DATA"})

# Parser-internal marks carried on a node's meta between two parse steps.
_JOIN_HINT_META = "doris_join_hint"
_LABEL_META = "doris_insert_label"
# `TEMPORARY PARTITION (..)` in FROM / INSERT INTO: set on the exp.Partition node's meta
TEMPORARY_PARTITION_META = "doris_temporary_partition"
# `FROM t TABLET (1, 2)`: the tablet ids (a tuple of ints) in the Table node's meta.
TABLETS_META = "shaledb_tablets"
TEMPORARY_PARTITION_KEYWORDS = frozenset({"TEMPORARY PARTITION", "TEMPORARY PARTITIONS"})
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")


# --------------------------------------------------------------------------------------------
# Custom AST nodes. Each lists exp.Expression first (sqlglot 30: trait classes derive from the
# abstract exp.Expr, whose methods raise NotImplementedError).
# --------------------------------------------------------------------------------------------


class AggTypeColumnConstraint(exp.Expression, exp.ColumnConstraintKind):
    """``SUM`` / ``REPLACE`` / ... after a column type; this=exp.var(<AGG TYPE>)."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True}


class KeyColumnConstraint(exp.Expression, exp.ColumnConstraintKind):
    """``KEY`` after a column type (ALTER TABLE ADD COLUMN ``k INT KEY``): a key column."""

    arg_types: t.ClassVar[dict[str, bool]] = {}


class RangePartitionDef(exp.Expression):
    """``PARTITION p VALUES LESS THAN (..) | LESS THAN MAXVALUE | [(lo), (hi))``."""

    arg_types: t.ClassVar[dict[str, bool]] = {
        "this": True,
        "less_than": False,
        "maxvalue": False,
        "lower": False,
        "upper": False,
        "exists": False,
        "properties": False,
    }


class ListPartitionDef(exp.Expression):
    """``PARTITION p VALUES IN (..)``; values is a list of exp.Tuple, one per row."""

    arg_types: t.ClassVar[dict[str, bool]] = {
        "this": True,
        "values": False,
        "exists": False,
        "properties": False,
    }


class StepPartitionDef(exp.Expression):
    """Batch range creation: ``FROM ("2020-01-01") TO ("2020-02-01") INTERVAL 1 DAY``."""

    arg_types: t.ClassVar[dict[str, bool]] = {
        "start": True,
        "end": True,
        "interval": True,
        "unit": False,
    }


class PartitionByRange(exp.Property):
    """``[AUTO] PARTITION BY RANGE(cols) (defs)``; expressions=columns, partitions=defs."""

    arg_types: t.ClassVar[dict[str, bool]] = {
        "expressions": True,
        "partitions": False,
        "auto": False,
    }


class PartitionByList(exp.Property):
    """``[AUTO] PARTITION BY LIST(cols) (defs)``; expressions=columns, partitions=defs."""

    arg_types: t.ClassVar[dict[str, bool]] = {
        "expressions": True,
        "partitions": False,
        "auto": False,
    }


class DorisRollupIndex(exp.RollupIndex):
    """``r1(c1, c2) [DUPLICATE KEY(c1)] [FROM base] [PROPERTIES (..)]``."""

    arg_types: t.ClassVar[dict[str, bool]] = {**exp.RollupIndex.arg_types, "duplicate_key": False}


class AddRollup(exp.Expression):
    """ALTER TABLE action ``ADD ROLLUP r1(..)[, r2(..)]``; expressions=[DorisRollupIndex]."""

    arg_types: t.ClassVar[dict[str, bool]] = {"expressions": True}


class AdminCompact(exp.Expression):
    """``ADMIN COMPACT TABLE [db.]t [PARTITION p] [WHERE type = 'BASE']``; this=Table (its
    PARTITION in Table.args["partition"]), where=exp.Where or None. The WHERE is kept as any
    expression: Doris checks its shape when it runs the statement, with its own messages."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True, "where": False}


class AdminSetConfig(exp.Expression):
    """``ADMIN SET [FRONTEND | ALL FRONTENDS] CONFIG ("key" = "value")``; expressions=[Property]."""

    arg_types: t.ClassVar[dict[str, bool]] = {"expressions": True}


class AdminShowConfig(exp.Expression):
    """``ADMIN SHOW FRONTEND CONFIG [LIKE 'pattern']`` (also ``SHOW FRONTEND CONFIG``);
    like=string Literal or None."""

    arg_types: t.ClassVar[dict[str, bool]] = {"like": False}


class CancelAlter(exp.Expression):
    """``CANCEL ALTER TABLE ROLLUP|COLUMN FROM [db.]t [(job_id, ..)]``; this=Table,
    kind="ROLLUP"|"COLUMN", expressions=job id Literals."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True, "kind": True, "expressions": False}


class DropRollup(exp.Expression):
    """ALTER TABLE action ``DROP ROLLUP r1[, r2]``; expressions=[Identifier]."""

    arg_types: t.ClassVar[dict[str, bool]] = {"expressions": True}


class AddPartition(exp.Expression):
    """ALTER TABLE action ``ADD [TEMPORARY] PARTITION <def> [DISTRIBUTED BY ..]``."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True, "distribution": False,
                                              "temporary": False}


class DropPartition(exp.Expression):
    """ALTER TABLE action ``DROP [TEMPORARY] PARTITION [IF EXISTS] p [FORCE]``."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True, "exists": False, "force": False,
                                              "temporary": False}


class ReplacePartition(exp.Expression):
    """ALTER TABLE action ``REPLACE PARTITION (p, ..) WITH TEMPORARY PARTITION (tp, ..)
    [PROPERTIES (..)]``: partitions=[Identifier], temporary=[Identifier], properties=[Property]."""

    arg_types: t.ClassVar[dict[str, bool]] = {"partitions": True, "temporary": True,
                                              "properties": False}


class AlterSetProperties(exp.Expression):
    """ALTER TABLE action ``SET ("k" = "v", ..)``; expressions=[exp.Property]."""

    arg_types: t.ClassVar[dict[str, bool]] = {"expressions": True}


class DorisIndexParameters(exp.IndexParameters):
    """``(cols) [USING BITMAP] [PROPERTIES (..)] [COMMENT '..']`` of CREATE INDEX."""

    arg_types: t.ClassVar[dict[str, bool]] = {
        **exp.IndexParameters.arg_types,
        "comment": False,
        "properties": False,
    }


class DorisIndexOption(exp.IndexConstraintOption):
    """``PROPERTIES ("k" = "v", ..)`` of an index definition (CREATE TABLE .. INDEX, ALTER TABLE
    ADD INDEX); properties=[exp.Property]."""

    arg_types: t.ClassVar[dict[str, bool]] = {
        **exp.IndexConstraintOption.arg_types,
        "properties": False,
    }


class DorisInsert(exp.Insert):
    """INSERT with ``WITH LABEL <label>``; label=Identifier."""

    arg_types: t.ClassVar[dict[str, bool]] = {**exp.Insert.arg_types, "label": False}


class DorisExplain(exp.Expression):
    """``EXPLAIN [style] <stmt>``; style is None or one of EXPLAIN_STYLES."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True, "style": False}


class DescAll(exp.Expression):
    """``DESC t ALL``; this=exp.Table."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True}


class DescFunction(exp.Expression):
    """``DESC FUNCTION local("k" = "v", ..)``; this=exp.Table whose this is the call."""

    arg_types: t.ClassVar[dict[str, bool]] = {"this": True}


class DorisOutfile(exp.Expression):
    """``<query> INTO OUTFILE "file:///dir/prefix_" [FORMAT AS CSV|PARQUET|..]
    [PROPERTIES ("k" = "v", ..)]``; this=the query, path=string Literal, format=lower-case
    name ("csv" when omitted), expressions=[exp.Property]."""

    arg_types: t.ClassVar[dict[str, bool]] = {
        "this": True, "path": True, "format": False, "expressions": False}


class DorisExport(exp.Expression):
    """``EXPORT TABLE [db.]t [PARTITION (p, ..)] [WHERE ..] TO "file:///dir/"
    [PROPERTIES (..)]``; this=Table (partition in Table.args["partition"]), where=exp.Where,
    path=string Literal, expressions=[exp.Property]."""

    arg_types: t.ClassVar[dict[str, bool]] = {
        "this": True, "where": False, "path": True, "expressions": False}


class CancelExport(exp.Expression):
    """``CANCEL EXPORT [FROM db] WHERE LABEL = "l" | LABEL LIKE ".." | STATE = ".."``;
    db=Identifier or None, where=exp.Where."""

    arg_types: t.ClassVar[dict[str, bool]] = {"db": False, "where": False}


class LoadDataInfile(exp.Expression):
    """MySQL Load: ``LOAD DATA [LOCAL] INFILE 'f' INTO TABLE [db.]t [[TEMPORARY] PARTITION (p,
    ..)] [COLUMNS|FIELDS TERMINATED BY 's' [[OPTIONALLY] ENCLOSED BY 'c'] [ESCAPED BY 'c']]
    [LINES [STARTING BY 's'] TERMINATED BY 's'] [IGNORE n LINES|ROWS] [(col | @var, ..)]
    [SET [(]col = expr, ..[)]] [PROPERTIES ("k" = "v", ..)]``.

    this=Table, file=string Literal, local=bool, partitions=[Identifier], temporary=bool,
    column_separator / line_delimiter / enclose / escape / line_prefix (STARTING BY) = string
    Literal (escapes already decoded), ignore_lines=number Literal, columns=[Identifier] (a
    ``@var`` is an Identifier with meta["variable"] = True),
    mappings=[exp.EQ(this=Column, expression=expr)] in which a ``@var`` is an exp.Parameter,
    properties=[exp.Property]."""

    arg_types: t.ClassVar[dict[str, bool]] = {
        "this": True, "file": True, "local": False, "partitions": False, "temporary": False,
        "column_separator": False, "line_delimiter": False, "enclose": False, "escape": False,
        "ignore_lines": False, "columns": False, "mappings": False, "properties": False,
        "line_prefix": False,
    }


# Node types accepted at the top level by the strict parser.
STATEMENT_TYPES: tuple[type[exp.Expr], ...] = (
    exp.Query,
    AdminCompact,
    AdminSetConfig,
    AdminShowConfig,
    CancelAlter,
    exp.Create,
    exp.Drop,
    exp.Alter,
    exp.TruncateTable,
    exp.Insert,
    exp.Delete,
    exp.Update,
    exp.Show,
    exp.Describe,
    exp.Use,
    exp.Set,
    exp.Kill,
    exp.Transaction,
    exp.Commit,
    exp.Rollback,
    DorisExplain,
    DescAll,
    DescFunction,
    DorisOutfile,
    DorisExport,
    CancelExport,
    LoadDataInfile,
)


# --------------------------------------------------------------------------------------------
# Errors
