"""ShaleDB's SQL dialect: sqlglot's Doris dialect extended to Apache Doris 2.1 DDL/DML syntax.

This module owns the *syntax* layer: tokenizing, parsing into typed sqlglot ASTs, generating
Doris SQL back from them, and turning parse failures into MySQL-style syntax errors. It knows
nothing about catalogs or execution, and imports nothing of sql/ besides its own package. The
AST-free views of DDL statements that the DDL layer consumes live in ``sql.ddl.specs`` (built on
this module); the custom nodes and constants in ``sql.parser.dialect_nodes`` and the generator in
``sql.parser.dialect_generator`` (both re-exported here).

Public API
    ``ShaleDoris``                      the sqlglot dialect (use as ``read=``/``dialect=``)
    ``parse(sql) -> list[exp.Expression]``      strict parse, raises ``SqlSyntaxError``
    ``parse_one(sql) -> exp.Expression``        exactly one statement
    ``SqlSyntaxError(message, line, col, near, detail="")``   1-based line/col; near is the text
                                        MySQL would quote (at most 80 chars, "" at end of input)
    custom nodes (below) and the constants ``AGG_TYPES``, ``JOIN_HINTS``, ``EXPLAIN_STYLES``.

Strict vs lenient parsing. ``ShaleDoris`` used directly through sqlglot (``sqlglot.parse(...,
read=ShaleDoris)``) behaves like stock sqlglot: unknown syntax falls back to ``exp.Command`` and
bare expressions parse. ``parse()`` builds the parser with ``strict=True``: it never returns
``exp.Command`` (the fallback raises instead) and every top-level statement must be a statement
node (``STATEMENT_TYPES``), so ``FOO BAR`` or ``SELEC 1`` are syntax errors.

AST shapes (root node -> where the parts are)
    CREATE DATABASE        exp.Create(kind="DATABASE", this=Table, exists, properties=[Property])
    DROP DATABASE/TABLE    exp.Drop(kind, tables=[Table], exists, force)
    CREATE TABLE           exp.Create(kind="TABLE", this=Schema(this=Table, expressions=[ColumnDef,
                           IndexColumnConstraint]), exists, properties=Properties([...])) where the
                           properties are, in source order: EngineProperty, DuplicateKeyProperty |
                           AggregateKeyProperty | UniqueKeyProperty, SchemaCommentProperty,
                           PartitionByRange | PartitionByList, DistributedByProperty, RollupProperty
                           ([DorisRollupIndex]), then one exp.Property(this=key, value=value) per
                           ``PROPERTIES ("k" = "v")`` entry.
      column               ColumnDef(this, kind=DataType, constraints=[ColumnConstraint(kind)])
                           with kinds AggTypeColumnConstraint(this=Var("SUM")), KeyColumnConstraint,
                           NotNullColumnConstraint (allow_null=True for NULL),
                           DefaultColumnConstraint, CommentColumnConstraint.
                           BITMAP / HLL / QUANTILE_STATE are DataType(USERDEFINED, kind="BITMAP");
                           LARGEINT is DType.INT128; STRING and TEXT are DType.TEXT;
                           DATEV2 / DATETIMEV2 / DECIMALV2 / DECIMALV3 read as DATE / DATETIME /
                           DECIMAL.
      partitions           PartitionByRange / PartitionByList(expressions=[partition columns, an
                           Identifier per plain column], partitions=[RangePartitionDef |
                           StepPartitionDef | ListPartitionDef], auto=True for AUTO PARTITION).
                           sqlglot's PartitionByRangeProperty is not reused: it cannot hold an
                           empty ``()`` list, MAXVALUE, ``[lo, hi)`` ranges or partition options.
      RangePartitionDef    this=name, less_than=[values] | maxvalue=True | lower=[..], upper=[..];
                           values are Literal (string or number, "-5" for negatives),
                           Var("MAXVALUE") or Null; ``LESS THAN (MAXVALUE)`` becomes maxvalue=True.
      ListPartitionDef     this=name, values=[exp.Tuple] (one tuple per row; None for a partition
                           without VALUES IN).
      StepPartitionDef     start=[values], end=[values], interval=Literal, unit=Var | None.
      distribution         DistributedByProperty(kind="HASH"|"RANDOM", expressions=[Identifier],
                           buckets=Literal number | Var("AUTO") | None when BUCKETS was omitted).
    CREATE INDEX           exp.Create(kind="INDEX", exists, this=exp.Index(this=name, table=Table,
                           params=DorisIndexParameters(columns, using=Var, comment, properties)))
    DROP INDEX i ON t      exp.Drop(kind="INDEX", tables=[Table(i)], cluster=OnProperty(this=Table))
    ALTER TABLE            exp.Alter(this=Table, actions=[...]); actions are
                           AddRollup([DorisRollupIndex]), DropRollup([Identifier]),
                           AddPartition(this=<partition def>, distribution),
                           DropPartition(this=name, exists, force), AlterSetProperties([Property]),
                           AddConstraint([IndexColumnConstraint]) for ADD INDEX,
                           exp.Drop(kind="INDEX") for DROP INDEX, stock nodes for the rest.
    TRUNCATE TABLE         exp.TruncateTable(expressions=[Table(partition=Partition)])
    INSERT                 exp.Insert, or DorisInsert (an exp.Insert subclass) when WITH LABEL is
                           given (arg ``label``). The target partition is Table.args["partition"].
    DELETE                 exp.Delete(this=Table(partition=Partition), where). ``PARTITION p``,
                           ``PARTITION (p1, p2)`` and ``PARTITIONS (p1, p2)`` all give
                           exp.Partition(expressions=[Column]).
    EXPLAIN                DorisExplain(this=statement, style=None | "VERBOSE" | "SHAPE PLAN" ...)
    DESC t / DESCRIBE t    exp.Describe(this=Table);   DESC t ALL -> DescAll(this=Table)
    SELECT ... JOIN [hint] exp.Join(hint=Var("SHUFFLE"|"BROADCAST"|"BUCKET"|"COLOCATE"))
    ADMIN COMPACT TABLE    AdminCompact(this=Table(partition=Partition), where=exp.Where | None)
    SET / USE / KILL / BEGIN / COMMIT / ROLLBACK     stock sqlglot nodes.

SHOW statements are all exp.Show. ``this`` is the upper-case kind, which is the normalised
spelling: "DATABASES", "TABLES", "TABLE STATUS", "CREATE TABLE", "CREATE DATABASE", "COLUMNS",
"INDEX" (also for INDEXES and KEYS), "VARIABLES", "STATUS", "PARTITIONS", "TABLETS", "DATA",
"DYNAMIC PARTITION TABLES", "PROC", "QUERY PROFILE", "ALTER TABLE ROLLUP", "ALTER TABLE COLUMN",
"ALTER TABLE MATERIALIZED VIEW", "DELETE",
"PROCESSLIST", "BACKENDS", "FRONTENDS", "ENGINES", "CHARACTER SET" (also CHARSET), "COLLATION",
"WARNINGS", "ERRORS", "TABLET" (SHOW TABLET <id>; SHOW TABLET FROM t is "TABLETS"). Other args:
    target   the table (Identifier) for COLUMNS / INDEX / PARTITIONS / TABLETS / DATA / CREATE ...;
             for PROC the path as a string Literal; for TABLET the id as a number Literal
    db       Identifier: ``FROM db`` / ``IN db``, or the qualifier of ``FROM db.t``
    full     True for SHOW FULL TABLES / FULL COLUMNS / FULL PROCESSLIST
    global_  True for SHOW GLOBAL VARIABLES / STATUS (SESSION is the default and is not kept)
    like     string Literal of ``LIKE 'x'``;  where: exp.Where;  limit / offset: Literal numbers
"""

from __future__ import annotations

import re
import typing as t

from sqlglot import exp
from sqlglot.dialects.doris import Doris
from sqlglot.errors import ParseError, TokenError
from sqlglot.parser import Parser
from sqlglot.parsers.doris import DorisParser
from sqlglot.tokens import Token, TokenType
from sqlglot.trie import new_trie

__all__ = [
    "AGG_TYPES",
    "EXPLAIN_STYLES",
    "JOIN_HINTS",
    "STATEMENT_TYPES",
    "AddPartition",
    "AddRollup",
    "AdminCompact",
    "AdminSetConfig",
    "AdminShowConfig",
    "AggTypeColumnConstraint",
    "AlterSetProperties",
    "CancelAlter",
    "CancelExport",
    "DescAll",
    "DescFunction",
    "DorisExplain",
    "DorisExport",
    "DorisIndexParameters",
    "DorisInsert",
    "DorisOutfile",
    "DorisRollupIndex",
    "DropPartition",
    "DropRollup",
    "KeyColumnConstraint",
    "ListPartitionDef",
    "LoadDataInfile",
    "PartitionByList",
    "PartitionByRange",
    "RangePartitionDef",
    "ReplacePartition",
    "ShaleDoris",
    "SqlSyntaxError",
    "StepPartitionDef",
    "parse",
    "parse_one",
]

from sql.parser.dialect_generator import ShaleDorisGenerator
from sql.parser.dialect_nodes import (  # noqa: F401 - re-exported
    _ANSI_RE,
    _EXPLAIN_PLAN_PREFIXES,
    _EXPLAIN_SINGLE,
    _JOIN_HINT_META,
    _LABEL_META,
    _OPAQUE_TYPES,
    _SHOW_FROM_TARGET,
    AGG_TYPES,
    EXPLAIN_STYLES,
    JOIN_HINTS,
    STATEMENT_TYPES,
    TABLETS_META,
    TEMPORARY_PARTITION_KEYWORDS,
    TEMPORARY_PARTITION_META,
    AddPartition,
    AddRollup,
    AdminCompact,
    AdminSetConfig,
    AdminShowConfig,
    AggTypeColumnConstraint,
    AlterSetProperties,
    CancelAlter,
    CancelExport,
    DescAll,
    DescFunction,
    DorisExplain,
    DorisExport,
    DorisIndexOption,
    DorisIndexParameters,
    DorisInsert,
    DorisOutfile,
    DorisRollupIndex,
    DropPartition,
    DropRollup,
    KeyColumnConstraint,
    ListPartitionDef,
    LoadDataInfile,
    PartitionByList,
    PartitionByRange,
    RangePartitionDef,
    ReplacePartition,
    StepPartitionDef,
)

# --------------------------------------------------------------------------------------------


class SqlSyntaxError(Exception):
    """A statement that does not parse, with a MySQL-style message and a 1-based position."""

    def __init__(self, message: str, line: int, col: int, near: str, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.col = col
        self.near = near
        self.detail = detail


def _strip_ansi(text: str) -> str:
    return _ANSI_RE.sub("", text)


def _syntax_error(sql: str, offset: int | None, detail: str) -> SqlSyntaxError:
    offset = len(sql) if offset is None else max(0, min(offset, len(sql)))
    line = sql.count("\n", 0, offset) + 1
    col = offset - (sql.rfind("\n", 0, offset) + 1) + 1
    # MySQL prints at most 80 characters of the remaining statement text.
    near = sql[offset : offset + 80]
    message = (
        "You have an error in your SQL syntax; check the manual that corresponds to your "
        f"Doris server version for the right syntax to use near '{near}' "
        f"at line {line}, column {col}"
    )
    return SqlSyntaxError(message, line, col, near, _strip_ansi(detail))


def _token_error(sql: str, error: TokenError) -> SqlSyntaxError:
    # The tokenizer wraps the real failure ("Missing ' from <line>:<offset>") in a generic
    # "Error tokenizing '<context>'" error whose start is only the context's start.
    cause = error.__cause__
    match = re.search(r"from \d+:(\d+)$", str(cause)) if cause else None
    if match:
        return _syntax_error(sql, int(match.group(1)), str(cause))
    return _syntax_error(sql, error.start, str(error))


# --------------------------------------------------------------------------------------------
# Parser
# --------------------------------------------------------------------------------------------


def _agg_type_parser(name: str) -> t.Callable[[ShaleDorisParser], exp.Expr]:
    def _parse(self: ShaleDorisParser) -> exp.Expr:
        return self.expression(AggTypeColumnConstraint(this=exp.var(name)))

    return _parse


def _show(
    kind: str, target: bool | str = False, full: bool | None = None, global_: bool | None = None
) -> t.Callable[[ShaleDorisParser], exp.Show]:
    def _parse(self: ShaleDorisParser) -> exp.Show:
        return self._parse_show_mysql(kind, target=target, full=full, global_=global_)

    return _parse


def _date_trunc_call(args: list[exp.Expr]) -> exp.Expr:
    """DATE_TRUNC with two arguments is sqlglot's TimestampTrunc; any other count stays a plain
    call (sqlglot would drop a third argument silently), for Doris' arity errors."""
    if len(args) == 2:
        return DorisParser.FUNCTIONS["DATE_TRUNC"](args)
    return exp.Anonymous(this="date_trunc", expressions=args)


class ShaleDorisParser(DorisParser):
    """Doris parser with typed nodes for Doris DDL, SHOW, EXPLAIN and join hints."""

    FUNCTIONS: t.ClassVar = {
        **DorisParser.FUNCTIONS, "DATE_TRUNC": _date_trunc_call,
        # Doris' map(k1, v1, k2, v2, ..): any even number of arguments (sqlglot takes two)
        "MAP": lambda args: exp.Anonymous(this="map", expressions=args),
        # Doris' array_last(x -> cond, arr) (sqlglot's ArrayLast takes one argument)
        "ARRAY_LAST": lambda args: exp.Anonymous(this="array_last", expressions=args),
    }
    PARTITION_KEYWORDS: t.ClassVar = {*DorisParser.PARTITION_KEYWORDS, "PARTITIONS",
                                      *TEMPORARY_PARTITION_KEYWORDS}
    # sqlglot spells the level "UNCOMITTED", so `SET [SESSION] TRANSACTION ISOLATION LEVEL READ
    # UNCOMMITTED` (sent by Connector/J when Spark's JDBC writer sets its isolation) fails.
    TRANSACTION_CHARACTERISTICS: t.ClassVar = {
        **DorisParser.TRANSACTION_CHARACTERISTICS,
        "ISOLATION": (
            ("LEVEL", "REPEATABLE", "READ"), ("LEVEL", "READ", "COMMITTED"),
            ("LEVEL", "READ", "UNCOMMITTED"), ("LEVEL", "SERIALIZABLE"),
        ),
    }

    PROPERTY_PARSERS: t.ClassVar = {
        **DorisParser.PROPERTY_PARSERS,
        "AGGREGATE": lambda self: self._parse_composite_key_property(exp.AggregateKeyProperty),
        "ROLLUP": lambda self: self._parse_doris_rollup_property(),
        "AUTO": lambda self: self._parse_doris_auto(),
        "PARTITION BY": lambda self: self._parse_partition_property(),
    }

    CONSTRAINT_PARSERS: t.ClassVar = {
        **DorisParser.CONSTRAINT_PARSERS,
        **{name: _agg_type_parser(name) for name in AGG_TYPES},
    }

    SHOW_PARSERS: t.ClassVar = {
        **DorisParser.SHOW_PARSERS,
        "PARTITIONS": _show("PARTITIONS", target="FROM"),
        "TEMPORARY PARTITIONS": _show("TEMPORARY PARTITIONS", target="FROM"),
        "INDEXES": _show("INDEX", target="FROM"),
        "KEYS": _show("INDEX", target="FROM"),
        "DYNAMIC PARTITION TABLES": _show("DYNAMIC PARTITION TABLES"),
        "BACKENDS": _show("BACKENDS"),
        "FRONTENDS": _show("FRONTENDS"),
        "TABLETS": lambda self: self._parse_show_tablets(),
        "TABLET": lambda self: self._parse_show_tablet(),
        "DATA": _show("DATA", target="FROM"),
        "PROC": lambda self: self._parse_show_proc(),
        "QUERY PROFILE": lambda self: self._parse_show_proc("QUERY PROFILE"),
        "ALTER TABLE ROLLUP": lambda self: self._parse_show_export("ALTER TABLE ROLLUP"),
        "ALTER TABLE COLUMN": lambda self: self._parse_show_export("ALTER TABLE COLUMN"),
        "ALTER TABLE MATERIALIZED VIEW": lambda self: self._parse_show_export(
            "ALTER TABLE MATERIALIZED VIEW"),
        "DELETE": _show("DELETE"),
        "LOAD": lambda self: self._parse_show_load("LOAD"),
        "STREAM LOAD": lambda self: self._parse_show_load("STREAM LOAD"),
        "TRANSACTION": lambda self: self._parse_show_load("TRANSACTION"),
        "EXPORT": lambda self: self._parse_show_export(),
    }
    # The trie is computed once per class from SHOW_PARSERS, so it must be rebuilt here.
    SHOW_TRIE = new_trie(key.split(" ") for key in SHOW_PARSERS)

    ALTER_PARSERS: t.ClassVar = {
        **DorisParser.ALTER_PARSERS,
        "ADD": lambda self: self._parse_doris_alter_add(),
        "DROP": lambda self: self._parse_doris_alter_drop(),
        "REPLACE": lambda self: self._parse_doris_alter_replace(),
        "SET": lambda self: self._parse_doris_alter_set(),
    }

    def __init__(self, *args: t.Any, strict: bool = False, **kwargs: t.Any) -> None:
        super().__init__(*args, **kwargs)
        self.strict = strict
        # Offset in self.sql of the last reported error; None means "at the end of input".
        self.error_offset: int | None = None

    # ---- strictness and error positions ------------------------------------------------

    def raise_error(self, message: str, token: Token | None = None) -> None:
        if token:
            self.error_offset = token.start
        elif self._curr:
            self.error_offset = self._curr.start
        else:
            self.error_offset = self._prev.end + 1 if self._prev else None
        # sqlglot types its "no token" default (SENTINEL_NONE) as a Token; None means the same
        super().raise_error(message, token)  # type: ignore[arg-type]

    def parse(self, raw_tokens: list[Token], sql: str) -> list[exp.Expr | None]:
        if not self.strict:
            return super().parse(raw_tokens, sql)
        root = t.cast(
            t.Callable[[Parser], "exp.Expr | None"], ShaleDorisParser._parse_root_statement
        )
        return self._parse(parse_method=root, raw_tokens=raw_tokens, sql=sql)

    def _parse_statement(self) -> exp.Expr | None:
        if (self._curr and self._curr.text.upper() == "CANCEL"
                and (nxt := self._peek(1)) is not None and nxt.text.upper() == "ALTER"):
            self._advance(2)
            return self._parse_cancel_alter()
        if (self._curr and self._curr.text.upper() == "ADMIN"
                and (nxt := self._peek(1)) is not None and nxt.text.upper() == "COMPACT"):
            self._advance(2)
            return self._parse_admin_compact()
        if (self._curr and self._curr.text.upper() == "ADMIN"
                and (nxt := self._peek(1)) is not None and nxt.text.upper() in ("SET", "SHOW")):
            config = self._parse_admin_config()
            if config is not None:
                return config
        if (self._curr and self._curr.token_type == TokenType.SHOW
                and (nxt := self._peek(1)) is not None and nxt.text.upper() == "FRONTEND"
                and (nxt2 := self._peek(2)) is not None and nxt2.text.upper() == "CONFIG"):
            self._advance(3)
            return self._parse_show_config_like()
        if (self._curr and self._curr.text.upper() == "EXPORT"
                and (nxt := self._peek(1)) is not None and nxt.token_type == TokenType.TABLE):
            self._advance(2)
            return self._parse_export()
        if (self._curr and self._curr.text.upper() == "CANCEL"
                and (nxt := self._peek(1)) is not None and nxt.text.upper() == "EXPORT"):
            self._advance(2)
            return self._parse_cancel_export()
        if (self._curr and self._curr.text.upper() == "LOAD"
                and (nxt := self._peek(1)) is not None and nxt.text.upper() == "DATA"):
            self._advance(2)
            return self._parse_load_data()
        statement = super()._parse_statement()
        if (isinstance(statement, exp.Query) and self._curr
                and self._curr.token_type == TokenType.INTO
                and (nxt := self._peek(1)) is not None and nxt.text.upper() == "OUTFILE"):
            self._advance(2)
            return self._parse_outfile(statement)
        return statement

    # ---- unloading: INTO OUTFILE / EXPORT / CANCEL EXPORT -------------------------------

    def _parse_into(self) -> exp.Into | None:
        # `SELECT .. INTO OUTFILE` is Doris' unload clause (_parse_outfile), not SELECT INTO
        nxt = self._peek(1)
        if (self._curr and self._curr.token_type == TokenType.INTO and nxt is not None
                and nxt.text.upper() == "OUTFILE"):
            return None
        return super()._parse_into()

    def _parse_doris_string(self, what: str) -> exp.Literal:
        path = self._parse_string()
        if not isinstance(path, exp.Literal):
            self.raise_error(f"Expected a quoted {what}")
        return t.cast(exp.Literal, path)

    def _parse_doris_properties_clause(self) -> list[exp.Expr]:
        return self._parse_properties_list() if self._match_text_seq("PROPERTIES") else []

    def _parse_outfile(self, query: exp.Expr) -> DorisOutfile:
        """(after <query> INTO OUTFILE) "path" [FORMAT AS name] [PROPERTIES (..)]."""
        path = self._parse_doris_string("file path")
        fmt = "csv"
        if self._match_text_seq("FORMAT", "AS"):
            if not self._curr:
                self.raise_error("Expected a format name after FORMAT AS")
            fmt = self._curr.text.lower()
            self._advance()
        props = self._parse_doris_properties_clause()
        return self.expression(DorisOutfile(this=query, path=path, format=fmt,
                                            expressions=props))

    def _parse_export(self) -> DorisExport:
        """(after EXPORT TABLE) [db.]t [PARTITION (..)] [WHERE ..] TO "path" [PROPERTIES (..)]."""
        table = self._parse_table_parts()
        if table is None:
            self.raise_error("Expected a table name after EXPORT TABLE")
        partition = self._parse_partition()
        if partition is not None and table is not None:
            table.set("partition", partition)
        where = self._parse_where()
        if not self._match_text_seq("TO"):
            self.raise_error("Expected TO \"file:///path/\"")
        path = self._parse_doris_string("export path")
        props = self._parse_doris_properties_clause()
        return self.expression(DorisExport(this=table, where=where, path=path,
                                           expressions=props))

    def _parse_show_export(self, kind: str = "EXPORT") -> exp.Show:
        """(after SHOW EXPORT / SHOW ALTER TABLE COLUMN|ROLLUP) [FROM db] [WHERE ..] [ORDER BY ..]
        [LIMIT [o,] n]: ORDER BY's exp.Order and the LIMIT's exp.Limit go to meta["order"] /
        meta["limit"]."""
        db = None
        if self._match_set((TokenType.FROM, TokenType.IN)):
            db = self._parse_doris_name("database")
        show = exp.Show(this=kind, db=db, where=self._parse_where())
        show.meta["order"] = self._parse_order()
        show.meta["limit"] = self._parse_limit()
        return self.expression(show)

    def _parse_cancel_export(self) -> CancelExport:
        """(after CANCEL EXPORT) [FROM db] [WHERE ..]."""
        db = self._parse_doris_name("database") if self._match(TokenType.FROM) else None
        return self.expression(CancelExport(db=db, where=self._parse_where()))

    def _parse_load_data(self) -> LoadDataInfile:
        """MySQL Load (after LOAD DATA): see LoadDataInfile for the clauses, in MySQL's order."""
        local = self._match_text_seq("LOCAL")
        if not self._match_text_seq("INFILE"):
            self.raise_error("Expected INFILE")
        file = self._parse_load_string("a file name")
        if not (self._match(TokenType.INTO) and self._match(TokenType.TABLE)):
            self.raise_error("Expected INTO TABLE")
        # [db.]table by hand: sqlglot would read `t (c1, ..)` as a table function
        parts = [self._parse_doris_name("table")]
        while self._match(TokenType.DOT):
            parts.append(self._parse_doris_name("table"))
        if len(parts) > 2:
            self.raise_error("Expected [db.]table")
        table = exp.Table(this=parts[-1], db=parts[0] if len(parts) == 2 else None)
        node = LoadDataInfile(this=table, file=file, local=local)
        temporary = self._match_texts(TEMPORARY_PARTITION_KEYWORDS)
        if temporary or self._match_text_seq("PARTITION") or self._match_text_seq("PARTITIONS"):
            self._match_l_paren()
            node.set("partitions", self._parse_csv(lambda: self._parse_doris_name("partition")))
            node.set("temporary", temporary)
            self._match_r_paren()
        if self._match_texts(("COLUMNS", "FIELDS")):
            while True:
                if self._match_text_seq("TERMINATED", "BY"):
                    node.set("column_separator", self._parse_load_string("a separator"))
                elif self._match_text_seq("OPTIONALLY", "ENCLOSED", "BY") or \
                        self._match_text_seq("ENCLOSED", "BY"):
                    node.set("enclose", self._parse_load_string("a character"))
                elif self._match_text_seq("ESCAPED", "BY"):
                    node.set("escape", self._parse_load_string("a character"))
                else:
                    break
        if self._match_text_seq("LINES"):
            if self._match_text_seq("STARTING", "BY"):
                node.set("line_prefix", self._parse_load_string("a prefix"))
            if self._match_text_seq("TERMINATED", "BY"):
                node.set("line_delimiter", self._parse_load_string("a delimiter"))
        if self._match(TokenType.IGNORE):
            node.set("ignore_lines", self._parse_number())
            if not self._match_texts(("LINES", "ROWS")):
                self.raise_error("Expected LINES or ROWS")
        if self._match(TokenType.L_PAREN):
            node.set("columns", self._parse_csv(self._parse_load_column))
            self._match_r_paren()
        if self._match(TokenType.SET):
            wrapped = self._match(TokenType.L_PAREN)
            node.set("mappings", self._parse_csv(self._parse_load_mapping))
            if wrapped:
                self._match_r_paren()
        if self._match_text_seq("PROPERTIES"):
            node.set("properties", self._parse_properties_list())
        return self.expression(node)

    def _parse_load_string(self, what: str) -> exp.Expr:
        value = self._parse_string()
        if value is None:
            self.raise_error(f"Expected {what} string")
        return t.cast(exp.Expr, value)

    def _parse_load_column(self) -> exp.Identifier:
        variable = self._match(TokenType.PARAMETER)
        name = self._parse_doris_name("column")
        if variable:
            name.meta["variable"] = True
        return name

    def _parse_load_mapping(self) -> exp.Expr:
        item = self._parse_disjunction()
        if not isinstance(item, exp.EQ) or not isinstance(item.this, exp.Column):
            self.raise_error("Expected `column = expression` in SET")
        return t.cast(exp.Expr, item)

    def _parse_admin_compact(self) -> AdminCompact:
        """ADMIN COMPACT TABLE [db.]t [PARTITION p] [WHERE expr] (after ADMIN COMPACT)."""
        if not self._match(TokenType.TABLE):
            self.raise_error("Expected TABLE after ADMIN COMPACT")
        table = self._parse_table(schema=False)
        where = self._parse_where()
        return self.expression(AdminCompact(this=table, where=where))

    def _parse_admin_config(self) -> AdminSetConfig | AdminShowConfig | None:
        """ADMIN SET [FRONTEND | ALL FRONTENDS] CONFIG ("k" = "v") / ADMIN SHOW FRONTEND CONFIG
        [LIKE 'p'] (at ADMIN); None, with nothing consumed, for other ADMIN SET/SHOW forms."""
        start = self._index
        self._advance()  # ADMIN
        if self._match(TokenType.SET):
            if self._match_text_seq("CONFIG") or self._match_text_seq("FRONTEND", "CONFIG") \
                    or self._match_text_seq("ALL", "FRONTENDS", "CONFIG"):
                if not (self._curr and self._curr.token_type == TokenType.L_PAREN):
                    self.raise_error('Expected ("key" = "value") after ADMIN SET FRONTEND CONFIG')
                return self.expression(AdminSetConfig(expressions=self._parse_properties_list()))
        elif self._match(TokenType.SHOW) and self._match_text_seq("FRONTEND", "CONFIG"):
            return self._parse_show_config_like()
        self._retreat(start)
        return None

    def _parse_show_config_like(self) -> AdminShowConfig:
        like = None
        if self._match(TokenType.LIKE):
            like = self._parse_doris_string("pattern")
        return self.expression(AdminShowConfig(like=like))

    def _parse_on_property(self) -> exp.Expr | None:
        """`ON [db.]t` of DROP MATERIALIZED VIEW mv ON t: a qualified name as a Table."""
        if ((nxt := self._peek(1)) is not None and nxt.token_type == TokenType.DOT
                and self._curr is not None and self._curr.token_type != TokenType.L_PAREN):
            return self.expression(exp.OnProperty(this=self._parse_table_parts()))
        return super()._parse_on_property()

    def _parse_cancel_alter(self) -> CancelAlter:
        """CANCEL ALTER TABLE ROLLUP|COLUMN|MATERIALIZED VIEW FROM [db.]t [(job_id, ..)]
        (after CANCEL ALTER)."""
        if not self._match(TokenType.TABLE):
            self.raise_error("Expected TABLE after CANCEL ALTER")
        if self._match_text_seq("MATERIALIZED", "VIEW"):
            kind = "MATERIALIZED VIEW"
        elif self._match_texts(("ROLLUP", "COLUMN")):
            kind = self._prev.text.upper()
        else:
            self.raise_error("Expected ROLLUP, COLUMN or MATERIALIZED VIEW")
        if not self._match(TokenType.FROM):
            self.raise_error("Expected FROM")
        table = self._parse_table_parts()
        ids: list[exp.Expr] = []
        if self._match(TokenType.L_PAREN):
            ids = self._parse_csv(self._parse_number)
            self._match_r_paren()
        return self.expression(CancelAlter(this=table, kind=kind, expressions=ids))

    def _parse_show_tablet(self) -> exp.Show:
        """SHOW TABLET <tablet_id> (target = the id as a number Literal); SHOW TABLET FROM t is
        Doris' other spelling of SHOW TABLETS FROM t."""
        if self._curr and self._curr.token_type == TokenType.FROM:
            return self._parse_show_tablets()
        tablet_id = self._parse_number()
        if tablet_id is None:
            self.raise_error("Expected a tablet id or FROM after SHOW TABLET")
        return self.expression(exp.Show(this="TABLET", target=tablet_id))

    def _parse_show_load(self, kind: str) -> exp.Show:
        """SHOW LOAD / STREAM LOAD / TRANSACTION [FROM db] [WHERE ..] [ORDER BY ..] [LIMIT ..]
        (Doris' load status statements; the ORDER BY goes to meta["order"])."""
        show = self._parse_show_mysql(kind)
        order = self._parse_order()
        if order is not None:
            show.meta["order"] = order
        if show.args.get("limit") is None and self._match(TokenType.LIMIT):
            first = self._parse_number()
            if self._match(TokenType.COMMA):
                show.set("offset", first)
                first = self._parse_number()
            elif self._match_text_seq("OFFSET"):
                show.set("offset", self._parse_number())
            show.set("limit", first)
        return show

    def _parse_show_tablets(self) -> exp.Show:
        """SHOW TABLETS FROM t [PARTITION (p1, ..)]: partition names go to meta["partitions"]."""
        show = self._parse_show_mysql("TABLETS", target="FROM")
        if self._match_text_seq("PARTITION") or self._match_text_seq("PARTITIONS"):
            wrapped = self._match(TokenType.L_PAREN)
            names = self._parse_csv(lambda: self._parse_doris_name("partition"))
            if wrapped:
                self._match_r_paren()
            show.meta["partitions"] = [n.name for n in names]
        return show

    def _parse_root_statement(self) -> exp.Expr | None:
        start = self._curr
        statement = self._parse_statement()
        # exp.Semicolon only carries the comments of a "; -- comment" tail; parse() drops it.
        if statement is not None and not isinstance(statement, (*STATEMENT_TYPES, exp.Semicolon)):
            self.raise_error("Unknown statement", start)
        return statement

    def _parse_as_command(self, start: Token) -> exp.Command:
        if self.strict:
            self.raise_error("Unsupported or invalid syntax", self._curr or None)
        return super()._parse_as_command(start)

    def _parse_command(self) -> exp.Command:
        if self.strict:
            self.raise_error("Unsupported statement", self._prev)
        return super()._parse_command()

    # ---- small helpers --------------------------------------------------------------------

    def _peek(self, offset: int) -> Token | None:
        index = self._index + offset
        return self._tokens[index] if 0 <= index < self._tokens_size else None

    def _parse_doris_csv(self, parse_method: t.Callable[[], exp.Expr | None]) -> list[exp.Expr]:
        """Comma list inside one ALTER action that stops before the next action keyword."""
        items = [parse_method()]
        while self._match(TokenType.COMMA):
            if self._curr and self._curr.text.upper() in self.ALTER_PARSERS:
                break  # the comma separates ALTER actions; _parse_alter handles it
            items.append(parse_method())
        return [item for item in items if item is not None]

    def _parse_doris_name(self, what: str) -> exp.Identifier:
        name = self._parse_id_var()
        if not isinstance(name, exp.Identifier):
            self.raise_error(f"Expected {what} name")
        return t.cast(exp.Identifier, name)

    def _parse_properties_list(self) -> list[exp.Expr]:
        properties: list[exp.Expr] = []
        for item in self._parse_wrapped_properties():
            properties.extend(item if isinstance(item, list) else [item])
        return properties

    def _parse_index_constraint_options(self) -> list[exp.IndexConstraintOption]:
        # Doris: INDEX i (c) USING INVERTED PROPERTIES ("parser" = "english") COMMENT '..'
        options = super()._parse_index_constraint_options()
        if self._match_text_seq("PROPERTIES"):
            options.append(self.expression(DorisIndexOption(
                properties=self._parse_properties_list())))
            options.extend(super()._parse_index_constraint_options())
        return options

    def _parse_column_constraint(self) -> exp.Expr | None:
        # MySQL reads a bare KEY as PRIMARY KEY; in Doris it marks a key column.
        if self._match(TokenType.KEY):
            return self.expression(exp.ColumnConstraint(kind=KeyColumnConstraint()))
        return super()._parse_column_constraint()

    # ---- column types -----------------------------------------------------------------------

    def _parse_types(
        self,
        check_func: bool = False,
        schema: bool = False,
        allow_identifiers: bool = True,
        with_collation: bool = False,
    ) -> exp.Expr | None:
        curr = self._curr
        if schema and curr.token_type == TokenType.VAR and curr.text.upper() in _OPAQUE_TYPES:
            self._advance()
            return exp.DataType(this=exp.DType.USERDEFINED, kind=curr.text.upper())
        return super()._parse_types(
            check_func=check_func,
            schema=schema,
            allow_identifiers=allow_identifiers,
            with_collation=with_collation,
        )

    # ---- CREATE TABLE clauses -----------------------------------------------------------

    def _parse_distributed_property(self) -> exp.DistributedByProperty:
        if not self._match_text_seq("BY"):
            self.raise_error("Expected BY after DISTRIBUTED")
        expressions: list[exp.Expr] | None = None
        if self._match_text_seq("HASH"):
            kind = "HASH"
            expressions = self._parse_wrapped_id_vars()
            if not expressions:
                self.raise_error("Expected distribution columns after HASH")
        elif self._match_text_seq("RANDOM"):
            kind = "RANDOM"
        else:
            self.raise_error("Expected HASH or RANDOM after DISTRIBUTED BY")
            kind = "HASH"

        buckets: exp.Expr | None = None
        if self._match_text_seq("BUCKETS"):
            if self._match_text_seq("AUTO"):
                buckets = exp.var("AUTO")
            else:
                buckets = self._parse_number()
                if buckets is None:
                    self.raise_error("Expected a bucket number or AUTO after BUCKETS")

        return self.expression(
            exp.DistributedByProperty(expressions=expressions, kind=kind, buckets=buckets)
        )

    def _parse_doris_auto(self) -> exp.Expr | list[exp.Expr] | None:
        if self._match(TokenType.PARTITION_BY):
            return self._parse_partition_property(auto=True)
        return self._parse_auto_property()

    def _parse_partition_property(
        self, auto: bool = False
    ) -> exp.Expr | list[exp.Expr] | None:
        if self._match_text_seq("RANGE"):
            node_cls: type[PartitionByRange | PartitionByList] = PartitionByRange
        elif self._match_text_seq("LIST"):
            node_cls = PartitionByList
        elif auto:
            self.raise_error("Expected RANGE or LIST after AUTO PARTITION BY")
            return None
        else:
            return self._parse_partitioned_by()

        columns = [
            col.this if isinstance(col, exp.Column) and not col.table else col
            for col in self._parse_wrapped_csv(self._parse_assignment)
        ]
        if not columns:
            self.raise_error("Expected partition columns")

        def parse_partition() -> exp.Expr | None:
            start = self._curr
            part = self._parse_doris_partition_def()
            if node_cls is PartitionByList and not isinstance(part, ListPartitionDef):
                self.raise_error("LIST partitions must be defined with VALUES IN", start)
            if node_cls is PartitionByRange and isinstance(part, ListPartitionDef):
                self.raise_error("RANGE partitions must use VALUES LESS THAN or VALUES [..)", start)
            return part

        self._match_l_paren()
        partitions: list[exp.Expr] = []
        if not self._match(TokenType.R_PAREN):
            partitions = self._parse_csv(parse_partition)
            self._match_r_paren()

        return self.expression(
            node_cls(expressions=columns, partitions=partitions, auto=auto or None)
        )

    def _parse_partition_value(self) -> exp.Expr:
        if self._match_text_seq("MAXVALUE"):
            return exp.var("MAXVALUE")
        if self._match(TokenType.NULL):
            return exp.null()
        if self._match(TokenType.DASH):
            number = self._parse_number()
            if number is None:
                self.raise_error("Expected a number after '-'")
                return exp.null()
            return exp.Literal.number(f"-{number.name}")
        value = self._parse_string() or self._parse_number()
        if value is None:
            self.raise_error("Expected a partition value (string, integer, MAXVALUE or NULL)")
            return exp.null()
        return value

    def _parse_partition_values(self) -> list[exp.Expr]:
        values = self._parse_wrapped_csv(self._parse_partition_value)
        if not values:
            self.raise_error("Expected partition values")
        return values

    def _parse_doris_partition_def(self, keyword_matched: bool = False) -> exp.Expr | None:
        if self._match(TokenType.FROM):
            start = self._parse_partition_values()
            if not self._match_text_seq("TO"):
                self.raise_error("Expected TO in FROM (..) TO (..) INTERVAL")
            end = self._parse_partition_values()
            if not self._match(TokenType.INTERVAL):
                self.raise_error("Expected INTERVAL in FROM (..) TO (..) INTERVAL")
            interval = self._parse_number()
            if interval is None:
                self.raise_error("Expected the interval amount")
            unit = self._parse_var(upper=True) if self._curr.token_type == TokenType.VAR else None
            return self.expression(
                StepPartitionDef(start=start, end=end, interval=interval, unit=unit)
            )

        if not keyword_matched and not self._match_text_seq("PARTITION"):
            self.raise_error("Expected PARTITION")
        exists = self._parse_exists(not_=True) or None
        name = self._parse_doris_name("partition")

        node: exp.Expr
        if self._match_text_seq("VALUES"):
            if self._match_text_seq("LESS", "THAN"):
                if self._match_text_seq("MAXVALUE"):
                    node = RangePartitionDef(this=name, maxvalue=True)
                else:
                    values = self._parse_partition_values()
                    if len(values) == 1 and isinstance(values[0], exp.Var):
                        node = RangePartitionDef(this=name, maxvalue=True)
                    else:
                        node = RangePartitionDef(this=name, less_than=values)
            elif self._match(TokenType.L_BRACKET):
                lower = self._parse_partition_values()
                if not self._match(TokenType.COMMA):
                    self.raise_error("Expected ',' between the bounds of VALUES [lower, upper)")
                upper = self._parse_partition_values()
                if not self._match(TokenType.R_PAREN):
                    self.raise_error("Expected ')' to close VALUES [lower, upper)")
                node = RangePartitionDef(this=name, lower=lower, upper=upper)
            elif self._match(TokenType.IN):
                self._match_l_paren()
                if self._match(TokenType.L_PAREN, advance=False):
                    rows = self._parse_csv(
                        lambda: exp.Tuple(expressions=self._parse_partition_values())
                    )
                else:
                    rows = [
                        exp.Tuple(expressions=[value])
                        for value in self._parse_csv(self._parse_partition_value)
                    ]
                self._match_r_paren()
                node = ListPartitionDef(this=name, values=rows)
            else:
                self.raise_error("Expected LESS THAN, [ or IN after VALUES")
                return None
        else:
            node = ListPartitionDef(this=name)

        node.set("exists", exists)
        if self._match(TokenType.L_PAREN, advance=False):
            node.set("properties", self._parse_properties_list())
        return self.expression(node)

    def _parse_doris_rollup_index(self) -> DorisRollupIndex:
        name = self._parse_doris_name("rollup")
        columns = self._parse_wrapped_id_vars()
        if not columns:
            self.raise_error("Expected rollup columns")
        duplicate_key = (
            self._parse_wrapped_id_vars() if self._match_text_seq("DUPLICATE", "KEY") else None
        )
        from_index = self._parse_id_var() if self._match(TokenType.FROM) else None
        properties = (
            exp.Properties(expressions=self._parse_properties_list())
            if self._match_text_seq("PROPERTIES")
            else None
        )
        return self.expression(
            DorisRollupIndex(
                this=name,
                expressions=columns,
                duplicate_key=duplicate_key,
                from_index=from_index,
                properties=properties,
            )
        )

    def _parse_create_like(self) -> exp.LikeProperty | None:
        """Doris' `CREATE TABLE t LIKE src [WITH ROLLUP [(r1, r2)]]`: the rollup clause is a
        `WITH ROLLUP` Property of the LikeProperty whose value is a Tuple of rollup names
        (empty: every rollup)."""
        like = super()._parse_create_like()
        if like is None or not (self._curr and self._next and self._curr.text.upper() == "WITH"
                                and self._next.text.upper() == "ROLLUP"):
            return like
        self._advance(2)
        names = self._parse_wrapped_id_vars(optional=True)
        like.append("expressions", exp.Property(this=exp.Literal.string("WITH ROLLUP"),
                                                value=exp.Tuple(expressions=names)))
        return like

    def _parse_doris_rollup_property(self) -> exp.RollupProperty:
        return self.expression(
            exp.RollupProperty(expressions=self._parse_wrapped_csv(self._parse_doris_rollup_index))
        )

    # ---- CREATE INDEX -----------------------------------------------------------------

    def _parse_create(self) -> exp.Create | exp.Command:
        if self._match(TokenType.INDEX):
            return self._parse_doris_create_index()
        return super()._parse_create()

    def _parse_doris_create_index(self) -> exp.Create:
        exists = self._parse_exists(not_=True) or None
        name = self._parse_doris_name("index")
        if not self._match(TokenType.ON):
            self.raise_error("Expected ON after the index name")
        table = self._parse_table_parts(schema=True)
        columns = self._parse_wrapped_id_vars()
        if not columns:
            self.raise_error("Expected index columns")
        using = (
            self._parse_var(any_token=True, upper=True) if self._match(TokenType.USING) else None
        )
        properties = self._parse_properties_list() if self._match_text_seq("PROPERTIES") else None
        comment = self._parse_string() if self._match(TokenType.COMMENT) else None
        params = DorisIndexParameters(
            columns=columns, using=using, properties=properties, comment=comment
        )
        index = exp.Index(this=name, table=table, params=params)
        return self.expression(exp.Create(this=index, kind="INDEX", exists=exists))

    # ---- ALTER TABLE --------------------------------------------------------------------

    def _parse_doris_alter_add(self) -> exp.Expr | list[exp.Expr] | None:
        if self._match(TokenType.ROLLUP):
            return self.expression(
                AddRollup(expressions=self._parse_doris_csv(self._parse_doris_rollup_index))
            )
        temporary = self._match_texts(("TEMPORARY PARTITION",))
        if temporary or self._match_text_seq("PARTITION", advance=False):
            partition = self._parse_doris_partition_def(keyword_matched=temporary)
            distribution = (
                self._parse_distributed_property() if self._match_text_seq("DISTRIBUTED") else None
            )
            return self.expression(AddPartition(this=partition, distribution=distribution,
                                                temporary=temporary or None))
        return self._parse_alter_table_add()

    def _parse_doris_alter_drop(self) -> exp.Expr | list[exp.Expr] | None:
        if self._match(TokenType.ROLLUP):
            names = self._parse_doris_csv(lambda: self._parse_doris_name("rollup"))
            return self.expression(DropRollup(expressions=names))
        temporary = self._match_texts(("TEMPORARY PARTITION",))
        if temporary or self._match_text_seq("PARTITION"):
            exists = self._parse_exists() or None
            name = self._parse_doris_name("partition")
            force = self._match_text_seq("FORCE") or None
            return self.expression(DropPartition(this=name, exists=exists, force=force,
                                                 temporary=temporary or None))
        return self._parse_alter_table_drop()

    def _parse_doris_alter_replace(self) -> exp.Expr:
        """REPLACE PARTITION (p, ..) WITH TEMPORARY PARTITION (tp, ..) [PROPERTIES (..)]"""
        if not self._match_texts(("PARTITION", "PARTITIONS")):
            self.raise_error("Expected PARTITION")
        partitions = self._parse_wrapped_csv(lambda: self._parse_doris_name("partition"))
        if not (self._match(TokenType.WITH) and self._match_texts(TEMPORARY_PARTITION_KEYWORDS)):
            self.raise_error("Expected WITH TEMPORARY PARTITION")
        temporary = self._parse_wrapped_csv(lambda: self._parse_doris_name("partition"))
        properties = self._parse_properties_list() if self._match_text_seq("PROPERTIES") else None
        return self.expression(ReplacePartition(partitions=partitions, temporary=temporary,
                                                properties=properties))

    def _parse_doris_alter_set(self) -> exp.Expr | None:
        if self._match(TokenType.L_PAREN, advance=False):
            return self.expression(AlterSetProperties(expressions=self._parse_properties_list()))
        return self._parse_alter_table_set()

    # ---- partition selection: PARTITION p | PARTITION (p, q) | PARTITIONS (p, q) ----------

    def _parse_partition(self) -> exp.Partition | None:
        index = self._index
        if not self._match_texts(self.PARTITION_KEYWORDS):
            return None
        keyword = " ".join(self._prev.text.upper().split())
        # `TEMPORARY PARTITION (tp1, ..)`: the table's temporary partitions (marked in meta)
        temporary = keyword in TEMPORARY_PARTITION_KEYWORDS
        keyword = keyword.removeprefix("TEMPORARY ")
        if self._match(TokenType.L_PAREN, advance=False):
            node = self.expression(
                exp.Partition(
                    subpartition=keyword == "SUBPARTITION",
                    expressions=self._parse_wrapped_csv(self._parse_disjunction),
                )
            )
        else:
            name = self._parse_id_var(any_token=False) if keyword == "PARTITION" else None
            if name is None:
                self._retreat(index)
                return None
            node = self.expression(exp.Partition(expressions=[exp.column(name)]))
        if temporary:
            node.meta[TEMPORARY_PARTITION_META] = True
        return node

    # ---- INSERT ... WITH LABEL ---------------------------------------------------------

    def _parse_insert_table(self) -> exp.Expr | None:
        this = super()._parse_insert_table()
        if self._match_text_seq("WITH", "LABEL"):
            label = self._parse_doris_name("label")
            if isinstance(this, exp.Table):
                this = self._parse_schema(this=this)
            if this is not None:
                this.meta[_LABEL_META] = label
        return this

    def _parse_insert(self) -> exp.Insert | exp.MultitableInserts:
        insert = super()._parse_insert()
        target = insert.this if isinstance(insert, exp.Insert) else None
        label = target.meta.pop(_LABEL_META, None) if isinstance(target, exp.Expr) else None
        if label is None:
            return insert
        labelled = DorisInsert(**insert.args, label=label)
        labelled.add_comments(insert.comments)
        return labelled

    # ---- EXPLAIN / DESC t ALL ------------------------------------------------------------

    # sqlglot's DESCRIBE hook returns exp.Describe; here it also parses EXPLAIN and DESC FUNCTION
    def _parse_describe(self) -> exp.Expr:  # type: ignore[override]
        if self._prev.text.upper() == "EXPLAIN":
            return self._parse_doris_explain()
        if self._curr and self._curr.text.upper() == "FUNCTION":
            self._advance()
            return self._parse_desc_function()
        describe = super()._parse_describe()
        if (
            isinstance(describe.this, exp.Table)
            and not describe.args.get("kind")
            and not describe.args.get("style")
            and self._match(TokenType.ALL)
        ):
            return self.expression(DescAll(this=describe.this))
        return describe

    def _parse_desc_function(self) -> DescFunction:
        """DESC FUNCTION local("k" = "v", ..) (after DESC FUNCTION): this=Table(Anonymous)."""
        start = self._curr
        table = self._parse_table(schema=False)
        if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Func):
            self.raise_error("Expected a table function after DESC FUNCTION", start)
        return self.expression(DescFunction(this=table))

    def _parse_doris_explain(self) -> DorisExplain:
        style: str | None = None
        if self._match_texts(_EXPLAIN_SINGLE):
            style = self._prev.text.upper()
        else:
            following = self._peek(1)
            if (
                self._curr.text.upper() in _EXPLAIN_PLAN_PREFIXES
                and following is not None
                and following.text.upper() == "PLAN"
            ):
                style = f"{self._curr.text.upper()} PLAN"
                self._advance(2)

        start = self._curr
        statement = self._parse_statement()
        if not isinstance(statement, (exp.Query, exp.DML, DorisOutfile)):
            self.raise_error("EXPLAIN expects a query or an INSERT/UPDATE/DELETE", start)
        return self.expression(DorisExplain(this=statement, style=style))

    # ---- SHOW PROC -------------------------------------------------------------------------

    def _parse_show_proc(self, kind: str = "PROC") -> exp.Show:
        """SHOW PROC '/path' and SHOW QUERY PROFILE '/path': the path string is the target."""
        path = self._parse_string()
        if path is None:
            self.raise_error(f"Expected a path string after SHOW {kind}")
        return self.expression(exp.Show(this=kind, target=path))

    # ---- FROM partitions("k" = "v", ..): PARTITIONS is a PARTITION token (selection) ---------

    def _parse_table_part(self, schema: bool = False) -> exp.Expr | None:
        nxt = self._next
        if (self._curr is not None and self._curr.token_type == TokenType.PARTITION
                and self._curr.text.upper() == "PARTITIONS" and nxt is not None
                and nxt.token_type == TokenType.L_PAREN):
            self._curr.token_type = TokenType.VAR  # the table function sql/binder/partitions_tvf.py
        return super()._parse_table_part(schema=schema)

    # ---- FROM t TABLET(id, ..): read only these tablets (Doris' tabletList) ------------------

    def _parse_table_alias(
        self, alias_tokens: t.Collection[TokenType] | None = None
    ) -> exp.TableAlias | None:
        """Doris writes `t [PARTITION (..)] TABLET (id, ..) [alias]`: the ids are held until
        `_parse_table` puts them on the Table's meta[TABLETS_META]."""
        nxt = self._next
        if (self._curr is not None and self._curr.text.upper() == "TABLET" and nxt is not None
                and nxt.token_type == TokenType.L_PAREN):
            self._advance(2)
            ids = self._parse_csv(self._parse_number)
            self._match_r_paren()
            if not ids or not all(isinstance(i, exp.Literal) and i.name.isdigit() for i in ids):
                self.raise_error("Expected tablet ids (integers) in TABLET (..)")
            self._pending_tablets = tuple(int(i.name) for i in ids)
        return super()._parse_table_alias(alias_tokens=alias_tokens)

    # ---- join hints: a JOIN [shuffle] b ------------------------------------------------------

    def _parse_table(
        self,
        schema: bool = False,
        joins: bool = False,
        alias_tokens: t.Collection[TokenType] | None = None,
        parse_bracket: bool = False,
        is_db_reference: bool = False,
        parse_partition: bool = False,
        consume_pipe: bool = False,
    ) -> exp.Expr | None:
        outer_tablets = self.__dict__.pop("_pending_tablets", None)  # an enclosing table's
        hint = None
        if self._prev.token_type == TokenType.JOIN and self._curr.token_type == TokenType.L_BRACKET:
            word, close = self._peek(1), self._peek(2)
            if (
                word is not None
                and close is not None
                and word.text.upper() in JOIN_HINTS
                and close.token_type == TokenType.R_BRACKET
            ):
                hint = word.text.upper()
                self._advance(3)

        this = super()._parse_table(
            schema=schema,
            joins=joins,
            alias_tokens=alias_tokens,
            parse_bracket=parse_bracket,
            is_db_reference=is_db_reference,
            parse_partition=parse_partition,
            consume_pipe=consume_pipe,
        )
        if hint and this is not None:
            this.meta[_JOIN_HINT_META] = hint
        tablets = self.__dict__.pop("_pending_tablets", None)
        if outer_tablets is not None:
            self._pending_tablets = outer_tablets
        if tablets is not None:
            if not isinstance(this, exp.Table):
                self.raise_error("TABLET (..) applies to a table")
            else:
                this.meta[TABLETS_META] = tablets
        return this

    def _parse_join(
        self,
        skip_join_token: bool = False,
        parse_bracket: bool = False,
        alias_tokens: t.Collection[TokenType] | None = None,
    ) -> exp.Join | None:
        join = super()._parse_join(
            skip_join_token=skip_join_token, parse_bracket=parse_bracket, alias_tokens=alias_tokens
        )
        table = join.this if join is not None else None
        if isinstance(table, exp.Expr) and _JOIN_HINT_META in table.meta:
            t.cast(exp.Join, join).set("hint", exp.var(table.meta.pop(_JOIN_HINT_META)))
        return join


# --------------------------------------------------------------------------------------------
class ShaleDoris(Doris):
    """sqlglot's Doris dialect plus the Doris 2.1 syntax ShaleDB needs (see module docstring)."""

    class Tokenizer(Doris.Tokenizer):
        KEYWORDS: t.ClassVar = {
            **Doris.Tokenizer.KEYWORDS,
            "LARGEINT": TokenType.INT128,
            "DATEV2": TokenType.DATE,
            "DATETIMEV2": TokenType.DATETIME,
            "DECIMALV2": TokenType.DECIMAL,
            "DECIMALV3": TokenType.DECIMAL,
            # Same token as PARTITION, so table partition selection accepts PARTITIONS (p1, p2).
            "PARTITIONS": TokenType.PARTITION,
            # One token: sqlglot looks for a PARTITION token after a table name (selection)
            "TEMPORARY PARTITION": TokenType.PARTITION,
            "TEMPORARY PARTITIONS": TokenType.PARTITION,
            # Doris spells EXCEPT also MINUS (a reserved word there, as in Oracle)
            "MINUS": TokenType.EXCEPT,
        }

    Parser = ShaleDorisParser
    Generator = ShaleDorisGenerator


# --------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------


def parse(sql: str) -> list[exp.Expression]:
    """Parse one or more ``;``-separated Doris statements into typed ASTs.

    Empty statements are dropped, so ``parse("")`` is ``[]``. Raises SqlSyntaxError for anything
    that is not a supported statement; never returns exp.Command.
    """
    dialect = ShaleDoris()
    try:
        tokens = dialect.tokenize(sql)
    except TokenError as error:
        raise _token_error(sql, error) from None

    parser = ShaleDorisParser(dialect=dialect, strict=True)
    try:
        statements = parser.parse(tokens, sql)
    except ParseError as error:
        detail = error.errors[0].get("description") if error.errors else None
        raise _syntax_error(sql, parser.error_offset, detail or str(error)) from None
    except RecursionError:
        raise _syntax_error(sql, 0, "statement is nested too deeply") from None
    result = [
        t.cast(exp.Expression, s)
        for s in statements
        if s is not None and not isinstance(s, exp.Semicolon)
    ]
    spans = _statement_spans(tokens)
    if len(spans) == len(result):
        # Each statement keeps its own source text: result column labels use what was written.
        for stmt, (start, end) in zip(result, spans):
            stmt.meta["sql"] = sql[start: end + 1]
    return result


def _statement_spans(tokens: list[Token]) -> list[tuple[int, int]]:
    """(start, end) character offsets of each non-empty ``;``-separated token run."""
    spans: list[tuple[int, int]] = []
    first: Token | None = None
    last: Token | None = None
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if first is not None and last is not None:
                spans.append((first.start, last.end))
            first = last = None
            continue
        first = first or token
        last = token
    if first is not None and last is not None:
        spans.append((first.start, last.end))
    return spans


def parse_one(sql: str) -> exp.Expression:
    """Parse exactly one statement (a trailing ``;`` is fine)."""
    statements = parse(sql)
    if len(statements) != 1:
        detail = "empty statement" if not statements else "expected a single statement"
        raise _syntax_error(sql, 0 if not statements else None, detail)
    return statements[0]

