"""sql.parser.dialect / sql.ddl.specs: Doris statements parse into typed nodes and print back as Doris.

For every statement of the corpus: no exp.Command anywhere, the expected root node, the expected
key parts, and a stable round trip (parse -> generate -> parse gives the same AST, generating
again gives the same text). Then the plain views of CREATE TABLE / ALTER TABLE / CREATE INDEX
and the syntax errors.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import sqlglot
from sqlglot import exp

from sql.ddl import specs as ast_views
from sql.ddl.specs import ColumnClause as Col
from sql.ddl.specs import (
    CreateTableSpec,
    DistributionClause,
    IndexClause,
    PartitionClause,
    RollupClause,
    describe_alter,
    describe_create_index,
    describe_create_table,
    describe_drop_index,
)
from sql.ddl.specs import PartitionDefClause as Part
from sql.parser.dialect import (
    AddPartition,
    AddRollup,
    AdminCompact,
    AggTypeColumnConstraint,
    AlterSetProperties,
    DescAll,
    DorisExplain,
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
    ShaleDoris,
    SqlSyntaxError,
    StepPartitionDef,
    parse,
    parse_one,
)

Check = Callable[[exp.Expr], object]

# Documentation examples (Doris "Data Model" and "Dynamic Partition" pages).
DORIS_AGG_EXAMPLE = """
CREATE TABLE IF NOT EXISTS example_db.example_tbl
(
    user_id LARGEINT NOT NULL COMMENT "用户id",
    date DATE NOT NULL,
    city VARCHAR(20),
    age SMALLINT,
    sex TINYINT,
    last_visit_date DATETIME REPLACE DEFAULT "1970-01-01 00:00:00",
    cost BIGINT SUM DEFAULT "0",
    max_dwell_time INT MAX DEFAULT "0",
    min_dwell_time INT MIN DEFAULT "99999"
)
AGGREGATE KEY(user_id, date, city, age, sex)
DISTRIBUTED BY HASH(user_id) BUCKETS 1
PROPERTIES ("replication_allocation" = "tag.location.default: 1");
"""

DYNAMIC_PARTITION_TABLE = """
CREATE TABLE tbl1
(
    k1 DATE,
    k2 INT,
    v1 VARCHAR(32) COMMENT "value"
)
DUPLICATE KEY(k1, k2)
PARTITION BY RANGE(k1) ()
DISTRIBUTED BY HASH(k1) BUCKETS 32
PROPERTIES
(
    "dynamic_partition.enable" = "true",
    "dynamic_partition.time_unit" = "DAY",
    "dynamic_partition.start" = "-7",
    "dynamic_partition.end" = "3",
    "dynamic_partition.prefix" = "p",
    "dynamic_partition.buckets" = "32",
    "replication_num" = "1"
)
"""

RANGE_TABLE = """
CREATE TABLE IF NOT EXISTS db1.sales (
    dt DATEV2 NOT NULL,
    region VARCHAR(16) NOT NULL DEFAULT "cn",
    amount DECIMAL(27, 9) SUM DEFAULT "0",
    uv BITMAP BITMAP_UNION,
    hll_col HLL HLL_UNION,
    last_seen DATETIMEV2(3) REPLACE_IF_NOT_NULL NULL,
    INDEX idx_region (region) USING BITMAP COMMENT 'region index'
) ENGINE=OLAP
AGGREGATE KEY(dt, region)
COMMENT 'daily sales'
PARTITION BY RANGE(dt) (
    PARTITION p2019 VALUES LESS THAN ("2020-01-01"),
    PARTITION p2020 VALUES [("2020-01-01"), ("2021-01-01")),
    PARTITION p_rest VALUES LESS THAN MAXVALUE
)
DISTRIBUTED BY HASH(dt, region) BUCKETS AUTO
ROLLUP (r_region(region, amount), r_dt(dt, uv))
PROPERTIES ("replication_num" = "1", "storage_medium" = "SSD")
"""

LIST_TABLE = """
CREATE TABLE t_list (
    id INT NOT NULL,
    city VARCHAR(10) NOT NULL,
    tag CHAR(2),
    v DOUBLE
) DUPLICATE KEY(id, city)
PARTITION BY LIST(id, city) (
    PARTITION p1 VALUES IN (("1", "beijing"), ("2", "shanghai")),
    PARTITION p2 VALUES IN (("3", "tokyo"))
)
DISTRIBUTED BY RANDOM BUCKETS 4
ROLLUP (r1(city, id) DUPLICATE KEY(city))
"""


def _find(node_type: type[exp.Expr]) -> Check:
    def check(e: exp.Expr) -> object:
        found = e.find(node_type)
        assert found is not None, f"no {node_type.__name__} in {e.sql(dialect=ShaleDoris)}"
        return found

    return check


def _show(kind: str, **args: str | bool) -> Check:
    def check(e: exp.Expr) -> None:
        assert isinstance(e, exp.Show)
        assert e.name == kind
        for key, want in args.items():
            got = e.args.get(key)
            got = got.name if isinstance(got, exp.Expr) else got
            assert got == want, (key, got, want)

    return check


def _join_hints(*hints: str) -> Check:
    def check(e: exp.Expr) -> None:
        got = [j.args["hint"].name for j in e.find_all(exp.Join) if j.args.get("hint")]
        assert sorted(got) == sorted(hints)

    return check


def _explain(style: str | None, inner: type[exp.Expr]) -> Check:
    def check(e: exp.Expr) -> None:
        assert isinstance(e, DorisExplain)
        assert e.args.get("style") == style
        assert isinstance(e.this, inner)

    return check


def _agg_types(*names: str) -> Check:
    def check(e: exp.Expr) -> None:
        got = [c.this.name for c in e.find_all(AggTypeColumnConstraint)]
        assert got == list(names)

    return check


def _partition_names(*names: str) -> Check:
    def check(e: exp.Expr) -> None:
        table = e.find(exp.Table)
        assert table is not None and table.args.get("partition") is not None
        assert [p.name for p in table.args["partition"].expressions] == list(names)

    return check


def _alter_actions(*types: type[exp.Expr]) -> Check:
    def check(e: exp.Expr) -> None:
        assert isinstance(e, exp.Alter)
        assert [type(a) for a in e.actions] == list(types)

    return check


def _all(*checks: Check) -> Check:
    def check(e: exp.Expr) -> None:
        for c in checks:
            c(e)

    return check


def _range_defs(e: exp.Expr) -> None:
    defs = e.find(PartitionByRange).args["partitions"]
    assert [type(d) for d in defs] == [RangePartitionDef] * 3
    assert defs[0].args["less_than"][0].name == "2020-01-01"
    assert [v.name for v in defs[1].args["lower"] + defs[1].args["upper"]] == [
        "2020-01-01",
        "2021-01-01",
    ]
    assert defs[2].args["maxvalue"] is True


def _list_defs(e: exp.Expr) -> None:
    defs = e.find(PartitionByList).args["partitions"]
    assert all(isinstance(d, ListPartitionDef) for d in defs)
    assert [len(row.expressions) for row in defs[0].args["values"]] == [2, 2]


def _buckets(kind: str, buckets: str | None) -> Check:
    def check(e: exp.Expr) -> None:
        dist = e.find(exp.DistributedByProperty)
        assert dist is not None and dist.args["kind"] == kind
        got = dist.args.get("buckets")
        assert (got.name if got is not None else None) == buckets

    return check


CORPUS: list[tuple[str, type[exp.Expr], Check | None]] = [
    # --- databases
    ("CREATE DATABASE IF NOT EXISTS db1", exp.Create, lambda e: e.kind == "DATABASE"),
    ("CREATE DATABASE db2 PROPERTIES ('replication_num' = '1')", exp.Create, None),
    ("DROP DATABASE IF EXISTS db1 FORCE", exp.Drop, lambda e: e.args["force"] is True),
    ("SHOW DATABASES", exp.Show, _show("DATABASES")),
    ("USE db1", exp.Use, None),
    # --- CREATE TABLE
    (DORIS_AGG_EXAMPLE, exp.Create, _agg_types("REPLACE", "SUM", "MAX", "MIN")),
    (
        DYNAMIC_PARTITION_TABLE,
        exp.Create,
        lambda e: not e.find(PartitionByRange).args["partitions"],
    ),
    (RANGE_TABLE, exp.Create, _all(_range_defs, _buckets("HASH", "AUTO"), _find(DorisRollupIndex))),
    (LIST_TABLE, exp.Create, _all(_list_defs, _buckets("RANDOM", "4"))),
    (
        (
            "CREATE TABLE t1 (k1 INT NULL, v1 STRING NOT NULL DEFAULT '') DUPLICATE KEY(k1) "
            "DISTRIBUTED BY HASH(k1) BUCKETS 10"
        ),
        exp.Create,
        _buckets("HASH", "10"),
    ),
    (
        (
            'CREATE TABLE `db`.`u1` (`k1` BIGINT, `v` VARCHAR(10) NOT NULL DEFAULT "") ENGINE=OLAP '
            "UNIQUE KEY(`k1`) DISTRIBUTED BY HASH(`k1`) BUCKETS 4 "
            'PROPERTIES ("enable_unique_key_merge_on_write" = "true")'
        ),
        exp.Create,
        _find(exp.UniqueKeyProperty),
    ),
    (
        (
            "CREATE TABLE t2 (a TINYINT, b SMALLINT, c INTEGER, d BIGINT, e LARGEINT, f FLOAT, "
            "g DOUBLE, h DECIMAL, i DECIMALV3(10, 2), j DATE, k DATETIME, l DATETIME(6), m CHAR(1), "
            "n VARCHAR(255), o STRING, p TEXT, q BOOLEAN, r QUANTILE_STATE QUANTILE_UNION) "
            "AGGREGATE KEY(a, b) DISTRIBUTED BY HASH(a)"
        ),
        exp.Create,
        lambda e: e.find(exp.DataType, bfs=False) is not None,
    ),
    (
        (
            "CREATE TABLE t3 (k INT, ts DATETIME DEFAULT CURRENT_TIMESTAMP, n INT DEFAULT NULL) "
            "DUPLICATE KEY(k) DISTRIBUTED BY RANDOM"
        ),
        exp.Create,
        _buckets("RANDOM", None),
    ),
    (
        (
            "CREATE TABLE t4 (d DATE, v INT) DUPLICATE KEY(d) PARTITION BY RANGE(d) ("
            'FROM ("2024-01-01") TO ("2024-01-08") INTERVAL 1 DAY, '
            "PARTITION p_max VALUES LESS THAN (MAXVALUE)) DISTRIBUTED BY HASH(d) BUCKETS 1"
        ),
        exp.Create,
        _find(StepPartitionDef),
    ),
    (
        (
            "CREATE TABLE t5 (a INT, b INT) PARTITION BY RANGE(a, b) ("
            'PARTITION p1 VALUES LESS THAN ("-10", MAXVALUE), '
            'PARTITION p2 VALUES LESS THAN ("10", "5") ("replication_num" = "1")) '
            "DISTRIBUTED BY HASH(a) BUCKETS 1"
        ),
        exp.Create,
        _find(RangePartitionDef),
    ),
    (
        (
            "CREATE TABLE t6 (k INT, s VARCHAR(8)) DUPLICATE KEY(k) PARTITION BY LIST(s) ("
            'PARTITION p_a VALUES IN ("a", "b"), PARTITION p_null VALUES IN ((NULL))) '
            "DISTRIBUTED BY HASH(k) BUCKETS 2"
        ),
        exp.Create,
        _find(PartitionByList),
    ),
    (
        (
            "CREATE TABLE t7 (k DATETIME NOT NULL, v INT) DUPLICATE KEY(k) "
            "AUTO PARTITION BY RANGE (date_trunc(k, 'month')) () DISTRIBUTED BY HASH(k) BUCKETS 2"
        ),
        exp.Create,
        lambda e: e.find(PartitionByRange).args["auto"] is True,
    ),
    ("CREATE TABLE t8 LIKE t1", exp.Create, None),
    ("CREATE TABLE t9 PROPERTIES ('replication_num' = '1') AS SELECT * FROM t1", exp.Create, None),
    # --- DROP / TRUNCATE / DESC / SHOW
    ("DROP TABLE IF EXISTS db1.t1 FORCE", exp.Drop, lambda e: e.args["force"] is True),
    ("DROP TABLE t1", exp.Drop, None),
    ("TRUNCATE TABLE t1", exp.TruncateTable, None),
    ("TRUNCATE TABLE db1.t1 PARTITION (p1, p2)", exp.TruncateTable, _partition_names("p1", "p2")),
    ("SHOW TABLES", exp.Show, _show("TABLES")),
    ("SHOW TABLES FROM db1 LIKE 'sa%'", exp.Show, _show("TABLES", db="db1", like="sa%")),
    ("SHOW FULL TABLES", exp.Show, _show("TABLES", full=True)),
    ("SHOW CREATE TABLE db1.t1", exp.Show, _show("CREATE TABLE", db="db1", target="t1")),
    ("SHOW CREATE DATABASE db1", exp.Show, _show("CREATE DATABASE", target="db1")),
    ("DESC t1", exp.Describe, None),
    ("DESCRIBE db1.t1", exp.Describe, None),
    ("DESC t1 ALL", DescAll, lambda e: e.this.name == "t1"),
    ("SHOW PARTITIONS FROM t1", exp.Show, _show("PARTITIONS", target="t1")),
    ("SHOW PARTITIONS FROM db1.t1", exp.Show, _show("PARTITIONS", target="t1", db="db1")),
    (
        "SHOW PARTITIONS FROM t1 WHERE PartitionName = 'p1'",
        exp.Show,
        lambda e: e.args.get("where") is not None,
    ),
    ("SHOW COLUMNS FROM t1", exp.Show, _show("COLUMNS", target="t1")),
    ("SHOW FULL COLUMNS FROM t1 FROM db1", exp.Show, _show("COLUMNS", full=True, db="db1")),
    ("SHOW INDEX FROM t1", exp.Show, _show("INDEX", target="t1")),
    ("SHOW INDEXES FROM t1", exp.Show, _show("INDEX", target="t1")),
    ("SHOW KEYS FROM db1.t1", exp.Show, _show("INDEX", target="t1", db="db1")),
    ("SHOW VARIABLES LIKE 'sql_mode'", exp.Show, _show("VARIABLES", like="sql_mode")),
    ("SHOW SESSION VARIABLES WHERE Variable_name = 'x'", exp.Show, _show("VARIABLES")),
    ("SHOW GLOBAL VARIABLES", exp.Show, _show("VARIABLES", global_=True)),
    ("SHOW DYNAMIC PARTITION TABLES", exp.Show, _show("DYNAMIC PARTITION TABLES")),
    (
        "SHOW DYNAMIC PARTITION TABLES FROM db1",
        exp.Show,
        _show("DYNAMIC PARTITION TABLES", db="db1"),
    ),
    ("SHOW PROCESSLIST", exp.Show, _show("PROCESSLIST")),
    ("SHOW FULL PROCESSLIST", exp.Show, _show("PROCESSLIST", full=True)),
    ("SHOW BACKENDS", exp.Show, _show("BACKENDS")),
    ("SHOW FRONTENDS", exp.Show, _show("FRONTENDS")),
    ("SHOW TABLETS FROM t1", exp.Show, _show("TABLETS", target="t1")),
    ("SHOW TABLET 10086", exp.Show, _show("TABLET", target="10086")),
    ("SHOW TABLET FROM db1.t1", exp.Show, _show("TABLETS", target="t1", db="db1")),
    (
        "ADMIN COMPACT TABLE t1 WHERE type = 'FULL'",
        AdminCompact,
        lambda e: e.this.name == "t1" and e.args["where"].this.expression.name == "FULL",
    ),
    (
        "ADMIN COMPACT TABLE db1.t1 PARTITION p1 WHERE TYPE = 'CUMULATIVE'",
        AdminCompact,
        lambda e: [c.name for c in e.this.args["partition"].expressions] == ["p1"],
    ),
    ("ADMIN COMPACT TABLE t1", AdminCompact, lambda e: e.args.get("where") is None),
    ("SHOW DATA", exp.Show, _show("DATA")),
    ("SHOW DATA FROM db1.t1", exp.Show, _show("DATA", target="t1", db="db1")),
    ("SHOW PROC '/colocation_group'", exp.Show, _show("PROC", target="/colocation_group")),
    ("SHOW QUERY PROFILE '/'", exp.Show, _show("QUERY PROFILE", target="/")),
    ("SHOW ALTER TABLE ROLLUP FROM db1", exp.Show, _show("ALTER TABLE ROLLUP", db="db1")),
    ("SHOW ALTER TABLE COLUMN", exp.Show, _show("ALTER TABLE COLUMN")),
    ("SHOW TABLE STATUS FROM db1 LIKE 't%'", exp.Show, _show("TABLE STATUS", db="db1", like="t%")),
    ("SHOW DELETE FROM db1", exp.Show, _show("DELETE", db="db1")),
    ("SHOW ENGINES", exp.Show, _show("ENGINES")),
    ("SHOW CHARSET", exp.Show, _show("CHARACTER SET")),
    ("SHOW CHARACTER SET", exp.Show, _show("CHARACTER SET")),
    ("SHOW COLLATION", exp.Show, _show("COLLATION")),
    ("SHOW WARNINGS", exp.Show, _show("WARNINGS")),
    ("SHOW ERRORS", exp.Show, _show("ERRORS")),
    ("SHOW STATUS", exp.Show, _show("STATUS")),
    # --- ALTER TABLE / indexes
    (
        'ALTER TABLE t1 ADD ROLLUP r1(k1, v1) PROPERTIES ("timeout" = "3600"), r2(k1)',
        exp.Alter,
        _alter_actions(AddRollup),
    ),
    ("ALTER TABLE t1 DROP ROLLUP r1", exp.Alter, _alter_actions(DropRollup)),
    (
        (
            'ALTER TABLE db1.t1 ADD PARTITION p3 VALUES LESS THAN ("2022-01-01") '
            "DISTRIBUTED BY HASH(k1) BUCKETS 8"
        ),
        exp.Alter,
        _alter_actions(AddPartition),
    ),
    (
        'ALTER TABLE t1 ADD PARTITION IF NOT EXISTS p4 VALUES [("2022-01-01"), ("2022-02-01"))',
        exp.Alter,
        _alter_actions(AddPartition),
    ),
    ('ALTER TABLE t1 ADD PARTITION p5 VALUES IN ("x", "y")', exp.Alter, _find(ListPartitionDef)),
    (
        "ALTER TABLE t1 DROP PARTITION IF EXISTS p1 FORCE",
        exp.Alter,
        _alter_actions(DropPartition),
    ),
    (
        "ALTER TABLE t1 DROP PARTITION p1, DROP PARTITION p2",
        exp.Alter,
        _alter_actions(DropPartition, DropPartition),
    ),
    (
        'ALTER TABLE t1 SET ("dynamic_partition.enable" = "false", "replication_num" = "1")',
        exp.Alter,
        _alter_actions(AlterSetProperties),
    ),
    (
        "ALTER TABLE t1 ADD INDEX idx_k (k1) USING BITMAP COMMENT 'k1 index'",
        exp.Alter,
        _find(exp.IndexColumnConstraint),
    ),
    ("ALTER TABLE t1 DROP INDEX idx_k", exp.Alter, _find(exp.Drop)),
    (
        'ALTER TABLE t1 ADD COLUMN k2 INT KEY DEFAULT "1" AFTER k1',
        exp.Alter,
        _find(KeyColumnConstraint),
    ),
    (
        "CREATE INDEX IF NOT EXISTS idx_v ON db1.t1 (v1) USING BITMAP COMMENT 'v1 index'",
        exp.Create,
        _find(DorisIndexParameters),
    ),
    ("DROP INDEX idx_v ON db1.t1", exp.Drop, lambda e: e.kind == "INDEX"),
    # --- DML / EXPLAIN
    (
        "INSERT INTO db1.t1 PARTITION (p1) WITH LABEL load_1 (k1, v1) VALUES (1, 'a'), (2, NULL)",
        DorisInsert,
        lambda e: e.args["label"].name == "load_1",
    ),
    ("INSERT INTO t1 WITH LABEL l2 SELECT * FROM t2", DorisInsert, None),
    ("INSERT INTO t1 (k1, v1) VALUES (1, 'a')", exp.Insert, None),
    ("INSERT INTO t1 SELECT k1, v1 FROM t2 WHERE k1 > 0", exp.Insert, None),
    ("INSERT OVERWRITE TABLE t1 PARTITION (p1) SELECT * FROM t2", exp.Insert, None),
    ("DELETE FROM t1 PARTITION p1 WHERE k1 = 1", exp.Delete, _partition_names("p1")),
    (
        "DELETE FROM t1 PARTITIONS (p1, p2) WHERE k1 >= 3 AND v1 IS NOT NULL",
        exp.Delete,
        _partition_names("p1", "p2"),
    ),
    ("DELETE FROM t1 WHERE k1 IN (1, 2, 3)", exp.Delete, None),
    ("UPDATE t1 SET v1 = 'b' WHERE k1 = 1", exp.Update, None),
    ("EXPLAIN SELECT * FROM t1", DorisExplain, _explain(None, exp.Select)),
    ("EXPLAIN VERBOSE SELECT 1", DorisExplain, _explain("VERBOSE", exp.Select)),
    ("EXPLAIN SHAPE PLAN SELECT k1 FROM t1", DorisExplain, _explain("SHAPE PLAN", exp.Select)),
    ("EXPLAIN PHYSICAL PLAN SELECT 1", DorisExplain, _explain("PHYSICAL PLAN", exp.Select)),
    ("EXPLAIN GRAPH SELECT 1 UNION ALL SELECT 2", DorisExplain, _explain("GRAPH", exp.Union)),
    ("EXPLAIN INSERT INTO t1 SELECT * FROM t2", DorisExplain, _explain(None, exp.Insert)),
    # --- SELECT with hints
    (
        "SELECT a.k1, b.v1 FROM t1 a JOIN [shuffle] t2 b ON a.k1 = b.k1",
        exp.Select,
        _join_hints("SHUFFLE"),
    ),
    (
        (
            "SELECT * FROM t1 LEFT JOIN [broadcast] t2 ON t1.k1 = t2.k1 "
            "INNER JOIN [bucket] t3 ON t3.k1 = t1.k1"
        ),
        exp.Select,
        _join_hints("BROADCAST", "BUCKET"),
    ),
    (
        (
            "SELECT * FROM t1 JOIN [colocate] (SELECT * FROM t2 JOIN [shuffle] t3 "
            "ON t2.k = t3.k) s ON t1.k = s.k"
        ),
        exp.Select,
        _join_hints("COLOCATE", "SHUFFLE"),
    ),
    (
        (
            "SELECT * FROM t1 LEFT SEMI JOIN [broadcast] t2 ON t1.k = t2.k "
            "FULL OUTER JOIN t3 ON t1.k = t3.k"
        ),
        exp.Select,
        _join_hints("BROADCAST"),
    ),
    ("SELECT /*+ SET_VAR(parallel_fragment_exec_instance_num = 4) */ 1", exp.Select, None),
    (
        "SELECT k1, SUM(v) FROM t1 PARTITION p1 WHERE k1 > 1 GROUP BY k1 ORDER BY k1 LIMIT 10",
        exp.Select,
        _partition_names("p1"),
    ),
    ("SELECT @@version_comment LIMIT 1", exp.Select, None),
    # --- SET / KILL / transactions
    ("SET SESSION exec_mem_limit = 1024", exp.Set, None),
    ("SET GLOBAL disable_colocate_join = true", exp.Set, None),
    ("SET @@session.parallel_fragment_exec_instance_num = 8", exp.Set, None),
    ("SET NAMES utf8mb4", exp.Set, None),
    ("SET sql_mode = DEFAULT", exp.Set, None),
    ("SET enable_insert_strict = 'false'", exp.Set, None),
    ("KILL 12345", exp.Kill, None),
    ("KILL QUERY 12345", exp.Kill, None),
    ("KILL CONNECTION 12345", exp.Kill, None),
    ("BEGIN", exp.Transaction, None),
    ("COMMIT", exp.Commit, None),
    ("ROLLBACK", exp.Rollback, None),
]

assert len(CORPUS) >= 60


def _id(sql: str) -> str:
    return " ".join(sql.split())[:60]


CORPUS_PARAMS = [pytest.param(s, root, check, id=_id(s)) for s, root, check in CORPUS]


def _without_quoting(node: exp.Expr) -> exp.Expr:
    # The generator quotes identifiers that are Doris keywords (`date`), which only flips
    # Identifier.quoted; compare the trees modulo that flag.
    copy = node.copy()
    for ident in copy.find_all(exp.Identifier):
        ident.set("quoted", False)
    return copy


@pytest.mark.parametrize(("sql", "root", "check"), CORPUS_PARAMS)
def test_corpus_statement_is_typed(sql: str, root: type[exp.Expr], check: Check | None) -> None:
    tree = parse_one(sql)
    assert type(tree) is root
    assert not any(isinstance(node, exp.Command) for node in tree.walk())
    if check is not None:
        assert check(tree) is not False


@pytest.mark.parametrize(("sql", "root", "check"), CORPUS_PARAMS)
def test_corpus_round_trip(sql: str, root: type[exp.Expr], check: Check | None) -> None:
    tree = parse_one(sql)
    first = tree.sql(dialect=ShaleDoris)
    again = parse_one(first)
    assert _without_quoting(again) == _without_quoting(tree), first
    assert again.sql(dialect=ShaleDoris) == first
    assert tree.copy() == tree


# --------------------------------------------------------------------------------------------
# Generated text details
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SHOW PARTITIONS FROM db1.t1", "SHOW PARTITIONS FROM db1.t1"),
        ("SHOW KEYS FROM t1", "SHOW INDEX FROM t1"),
        ('ALTER TABLE t1 SET ("a" = "b")', "ALTER TABLE t1 SET ('a'='b')"),
        (
            "SELECT * FROM a JOIN [shuffle] b ON a.k = b.k",
            "SELECT * FROM a JOIN [shuffle] b ON a.k = b.k",
        ),
        (
            "SELECT * FROM a LEFT SEMI JOIN b ON a.k = b.k",
            "SELECT * FROM a LEFT SEMI JOIN b ON a.k = b.k",
        ),
        ("DESC t1 ALL", "DESC t1 ALL"),
        ("SHOW TABLET 10086", "SHOW TABLET 10086"),
        (
            "admin compact table t partition (p1) where type = 'base'",
            "ADMIN COMPACT TABLE t PARTITION(p1) WHERE `type` = 'base'",
        ),
        ("EXPLAIN SHAPE PLAN SELECT 1", "EXPLAIN SHAPE PLAN SELECT 1"),
        (
            "DELETE FROM t PARTITIONS (p1, p2) WHERE k = 1",
            "DELETE FROM t PARTITION(p1, p2) WHERE k = 1",
        ),
        (
            "INSERT INTO t PARTITION (p1) WITH LABEL l1 (a, b) VALUES (1, 2)",
            "INSERT INTO t PARTITION(p1) WITH LABEL l1 (a, b) VALUES (1, 2)",
        ),
        (
            (
                "CREATE TABLE t (ts DATETIME DEFAULT CURRENT_TIMESTAMP, x LARGEINT) "
                "DISTRIBUTED BY RANDOM BUCKETS AUTO"
            ),
            (
                "CREATE TABLE t (ts DATETIME DEFAULT CURRENT_TIMESTAMP, x LARGEINT) "
                "DISTRIBUTED BY RANDOM BUCKETS AUTO"
            ),
        ),
        (
            "ALTER TABLE t ADD PARTITION p VALUES LESS THAN (MAXVALUE)",
            "ALTER TABLE t ADD PARTITION p VALUES LESS THAN MAXVALUE",
        ),
        (
            "CREATE INDEX i ON t (c) USING BITMAP COMMENT 'x'",
            "CREATE INDEX i ON t (c) USING BITMAP COMMENT 'x'",
        ),
    ],
)
def test_generated_sql(sql: str, expected: str) -> None:
    assert parse_one(sql).sql(dialect=ShaleDoris) == expected


def test_multiple_statements_and_empty_input() -> None:
    assert [type(s) for s in parse("USE db1; SELECT 1;")] == [exp.Use, exp.Select]
    assert parse("") == []
    assert parse(" ; -- nothing") == []


def test_lenient_dialect_keeps_sqlglot_behaviour() -> None:
    # Through sqlglot directly (mysql-mimic, optimizer helpers) bare expressions still parse.
    assert isinstance(sqlglot.parse_one("x + 1", read=ShaleDoris), exp.Add)
    tree = sqlglot.parse_one("ALTER TABLE t ADD ROLLUP r(a)", read=ShaleDoris)
    assert isinstance(tree.actions[0], AddRollup)


def test_join_hint_survives_optimizer() -> None:
    from sqlglot.optimizer import optimize
    from sqlglot.schema import MappingSchema

    schema = MappingSchema(
        {"db": {"a": {"k": "INT"}, "b": {"k": "INT", "v": "BIGINT"}}}, dialect=ShaleDoris
    )
    tree = parse_one("SELECT a.k, SUM(b.v) FROM a JOIN [broadcast] b ON a.k = b.k GROUP BY a.k")
    optimized = optimize(tree, schema=schema, db="db", dialect=ShaleDoris)
    assert optimized.find(exp.Join).args["hint"].name == "BROADCAST"


# --------------------------------------------------------------------------------------------
# describe_create_table
# --------------------------------------------------------------------------------------------


def test_describe_doris_aggregate_example() -> None:
    got = describe_create_table(parse_one(DORIS_AGG_EXAMPLE))
    assert got == CreateTableSpec(
        db="example_db",
        name="example_tbl",
        if_not_exists=True,
        columns=(
            Col("user_id", "LARGEINT", nullable=False, comment="用户id"),
            Col("date", "DATE", nullable=False),
            Col("city", "VARCHAR(20)"),
            Col("age", "SMALLINT"),
            Col("sex", "TINYINT"),
            Col("last_visit_date", "DATETIME", "REPLACE", None, True, "1970-01-01 00:00:00"),
            Col("cost", "BIGINT", "SUM", None, True, "0"),
            Col("max_dwell_time", "INT", "MAX", None, True, "0"),
            Col("min_dwell_time", "INT", "MIN", None, True, "99999"),
        ),
        keys_type="AGGREGATE",
        key_columns=("user_id", "date", "city", "age", "sex"),
        distribution=DistributionClause("HASH", ("user_id",), 1, auto=False),
        properties=(("replication_allocation", "tag.location.default: 1"),),
    )


def test_describe_types_are_normalised() -> None:
    sql = CORPUS[11][0]  # the all-types table
    types = {c.name: c.type_sql for c in describe_create_table(parse_one(sql)).columns}
    assert types == {
        "a": "TINYINT",
        "b": "SMALLINT",
        "c": "INT",
        "d": "BIGINT",
        "e": "LARGEINT",
        "f": "FLOAT",
        "g": "DOUBLE",
        "h": "DECIMAL(38,9)",
        "i": "DECIMAL(10,2)",
        "j": "DATE",
        "k": "DATETIME",
        "l": "DATETIME(6)",
        "m": "CHAR(1)",
        "n": "VARCHAR(255)",
        "o": "STRING",
        "p": "STRING",
        "q": "BOOLEAN",
        "r": "QUANTILE_STATE",
    }
    defaults = describe_create_table(
        parse_one("CREATE TABLE t (a CHAR, b VARCHAR, c DECIMAL(12), d DATETIME(0))")
    )
    assert [c.type_sql for c in defaults.columns] == [
        "CHAR(1)",
        "VARCHAR(65533)",
        "DECIMAL(12,0)",
        "DATETIME",
    ]


def test_describe_range_table() -> None:
    got = describe_create_table(parse_one(RANGE_TABLE))
    assert (got.db, got.name, got.engine, got.comment) == ("db1", "sales", "OLAP", "daily sales")
    assert got.columns == (
        Col("dt", "DATE", nullable=False),
        Col("region", "VARCHAR(16)", nullable=False, has_default=True, default="cn"),
        Col("amount", "DECIMAL(27,9)", "SUM", has_default=True, default="0"),
        Col("uv", "BITMAP", "BITMAP_UNION"),
        Col("hll_col", "HLL", "HLL_UNION"),
        Col("last_seen", "DATETIME(3)", "REPLACE_IF_NOT_NULL", nullable=True),
    )
    assert got.indexes == (IndexClause("idx_region", ("region",), "BITMAP", "region index"),)
    assert (got.keys_type, got.key_columns) == ("AGGREGATE", ("dt", "region"))
    assert got.partition == PartitionClause(
        "RANGE",
        ("dt",),
        (
            Part("p2019", "LESS_THAN", less_than=("2020-01-01",)),
            Part("p2020", "FIXED", lower=("2020-01-01",), upper=("2021-01-01",)),
            Part("p_rest", "LESS_THAN", less_than=(None,), maxvalue=True),
        ),
    )
    assert got.distribution == DistributionClause("HASH", ("dt", "region"), None, auto=True)
    assert got.rollups == (
        RollupClause("r_region", ("region", "amount")),
        RollupClause("r_dt", ("dt", "uv")),
    )
    assert got.properties == (("replication_num", "1"), ("storage_medium", "SSD"))


def test_describe_list_table_random_and_rollup_duplicate_key() -> None:
    got = describe_create_table(parse_one(LIST_TABLE))
    assert got.partition == PartitionClause(
        "LIST",
        ("id", "city"),
        (
            Part("p1", "IN", values=(("1", "beijing"), ("2", "shanghai"))),
            Part("p2", "IN", values=(("3", "tokyo"),)),
        ),
    )
    assert got.distribution == DistributionClause("RANDOM", (), 4)
    assert got.rollups == (RollupClause("r1", ("city", "id"), duplicate_key=("city",)),)
    assert (got.keys_type, got.key_columns) == ("DUPLICATE", ("id", "city"))


def test_describe_single_column_list_with_null_and_default_partition() -> None:
    got = describe_create_table(
        parse_one(
            "CREATE TABLE t (k INT, s VARCHAR(8)) PARTITION BY LIST(s) ("
            'PARTITION pa VALUES IN ("a", "b"), PARTITION pn VALUES IN ((NULL)), PARTITION pd) '
            "DISTRIBUTED BY HASH(k)"
        )
    )
    assert got.partition is not None
    assert got.partition.partitions == (
        Part("pa", "IN", values=(("a",), ("b",))),
        Part("pn", "IN", values=((None,),)),
        Part("pd", "IN"),
    )
    assert got.distribution == DistributionClause("HASH", ("k",), None, auto=False)


def test_describe_multi_column_range_negative_step_and_partition_properties() -> None:
    got = describe_create_table(parse_one(CORPUS[14][0]))
    assert got.partition is not None
    assert got.partition.partitions == (
        Part("p1", "LESS_THAN", less_than=("-10", None)),
        Part("p2", "LESS_THAN", less_than=("10", "5"), properties=(("replication_num", "1"),)),
    )
    step = describe_create_table(parse_one(CORPUS[13][0]))
    assert step.partition is not None
    assert step.partition.partitions == (
        Part(None, "STEP", lower=("2024-01-01",), upper=("2024-01-08",), interval=1, unit="DAY"),
        Part("p_max", "LESS_THAN", less_than=(None,), maxvalue=True),
    )


def test_describe_dynamic_partition_table_keeps_property_order() -> None:
    got = describe_create_table(parse_one(DYNAMIC_PARTITION_TABLE))
    assert got.partition == PartitionClause("RANGE", ("k1",), ())
    assert got.distribution == DistributionClause("HASH", ("k1",), 32)
    assert got.columns[2] == Col("v1", "VARCHAR(32)", comment="value")
    assert [k for k, _ in got.properties] == [
        "dynamic_partition.enable",
        "dynamic_partition.time_unit",
        "dynamic_partition.start",
        "dynamic_partition.end",
        "dynamic_partition.prefix",
        "dynamic_partition.buckets",
        "replication_num",
    ]
    assert dict(got.properties)["dynamic_partition.time_unit"] == "DAY"
    assert dict(got.properties)["dynamic_partition.start"] == "-7"


def test_describe_defaults_nullability_and_auto_partition() -> None:
    got = describe_create_table(parse_one(CORPUS[12][0]))
    assert got.columns == (
        Col("k", "INT"),
        Col("ts", "DATETIME", has_default=True, default="CURRENT_TIMESTAMP"),
        Col("n", "INT", has_default=True, default=None),
    )
    assert got.distribution == DistributionClause("RANDOM", (), None)
    auto = describe_create_table(parse_one(CORPUS[16][0]))
    assert auto.partition is not None and auto.partition.auto
    # date_trunc(col, unit): the column and the unit (storage/auto_partition.py uses them)
    assert auto.partition.columns == ("k",)
    assert (auto.partition.trunc_unit, auto.partition.func) == ("month", ("date_trunc",))


def test_describe_create_table_rejects_other_statements() -> None:
    with pytest.raises(TypeError):
        describe_create_table(parse_one("CREATE DATABASE d"))
    with pytest.raises(TypeError):
        describe_create_table(parse_one("SELECT 1"))  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# describe_alter / indexes
# --------------------------------------------------------------------------------------------


def test_describe_alter_actions() -> None:
    alter = parse_one(
        'ALTER TABLE t ADD PARTITION p VALUES [("a"), ("b")) DISTRIBUTED BY HASH(k) BUCKETS 3, '
        "DROP PARTITION IF EXISTS q FORCE, ADD ROLLUP r(a, b) FROM base, DROP ROLLUP r1, r2, "
        "ADD INDEX i (c) USING BITMAP COMMENT 'cc', DROP INDEX j, ADD COLUMN z INT KEY"
    )
    assert describe_alter(alter) == (
        ast_views.AddPartitionAction(
            Part("p", "FIXED", lower=("a",), upper=("b",)),
            DistributionClause("HASH", ("k",), 3),
        ),
        ast_views.DropPartitionAction("q", if_exists=True, force=True),
        ast_views.AddRollupAction((RollupClause("r", ("a", "b"), from_index="base"),)),
        ast_views.DropRollupAction(("r1", "r2")),
        ast_views.AddIndexAction(IndexClause("i", ("c",), "BITMAP", "cc")),
        ast_views.DropIndexAction("j"),
        ast_views.UnsupportedAlterAction("ColumnDef", "z INT KEY"),
    )


def test_describe_alter_set_and_add_partition_variants() -> None:
    assert describe_alter(parse_one('ALTER TABLE t SET ("x" = "1", "a.b" = "2")')) == (
        ast_views.SetPropertiesAction((("x", "1"), ("a.b", "2"))),
    )
    actions = describe_alter(
        parse_one(
            "ALTER TABLE t ADD PARTITION p1 VALUES LESS THAN MAXVALUE, "
            'ADD PARTITION IF NOT EXISTS p2 VALUES IN (("1", "x"))'
        )
    )
    assert actions == (
        ast_views.AddPartitionAction(Part("p1", "LESS_THAN", less_than=(None,), maxvalue=True)),
        ast_views.AddPartitionAction(Part("p2", "IN", values=(("1", "x"),), if_not_exists=True)),
    )
    rollups = describe_alter(
        parse_one('ALTER TABLE t ADD ROLLUP r1(a) PROPERTIES ("timeout" = "10"), r2(b, c)')
    )
    assert rollups == (
        ast_views.AddRollupAction(
            (RollupClause("r1", ("a",), properties=(("timeout", "10"),)), RollupClause("r2", ("b", "c")))
        ),
    )


def test_describe_create_and_drop_index() -> None:
    create = describe_create_index(
        parse_one("CREATE INDEX IF NOT EXISTS i ON db.t (c1) USING BITMAP COMMENT 'x'")
    )
    assert create == ast_views.CreateIndexSpec(
        "db", "t", IndexClause("i", ("c1",), "BITMAP", "x"), True
    )
    assert describe_drop_index(parse_one("DROP INDEX IF EXISTS i ON t")) == ast_views.DropIndexSpec(
        None, "t", "i", True
    )


def test_index_definition_properties() -> None:
    """PROPERTIES of an index definition (Doris' inverted index parser) in all three places,
    kept for the DDL layer to refuse, and generated back."""
    want = IndexClause("i", ("c",), "INVERTED", "x", (("parser", "english"),))
    sql = "INDEX i (c) USING INVERTED PROPERTIES (\"parser\" = \"english\") COMMENT 'x'"
    table = describe_create_table(parse_one(
        f"CREATE TABLE t (c VARCHAR(10), {sql}) DUPLICATE KEY(c) DISTRIBUTED BY HASH(c) BUCKETS 1"))
    assert table.indexes == (want,)
    (action,) = describe_alter(parse_one(f"ALTER TABLE t ADD {sql}"))
    assert action == ast_views.AddIndexAction(want)
    create = describe_create_index(parse_one(
        "CREATE INDEX i ON t (c) USING INVERTED PROPERTIES (\"parser\" = \"english\") COMMENT 'x'"))
    assert create.index == want
    text = parse_one(f"ALTER TABLE t ADD {sql}").sql(dialect=ShaleDoris)
    assert "PROPERTIES ('parser'='english')" in text


# --------------------------------------------------------------------------------------------
# Syntax errors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "line", "col", "near"),
    [
        ("CREATE TABLE t (a INT) DISTRIBUTED BY", 1, 38, ""),
        ("SELEC 1", 1, 1, "SELEC 1"),
        ("CREATE TABLE t (a INT BOGUS)", 1, 23, "BOGUS)"),
        ("FOO BAR", 1, 1, "FOO BAR"),
        ("SELECT k1 FROM t1\nWHERE k1 = 1 ORDERR BY k1", 2, 14, "ORDERR BY k1"),
        ("SELECT 'abc", 1, 8, "'abc"),
        ("SHOW FOOBAR", 1, 6, "FOOBAR"),
        ("GRANT SELECT ON db1.* TO u1", 1, 17, "db1.* TO u1"),
        ("ALTER TABLE t ADD ROLLUP", 1, 25, ""),
        ("CREATE TABLE t (a INT) DISTRIBUTED BY HASH(a) BUCKETS", 1, 54, ""),
        (
            'CREATE TABLE t (a INT) PARTITION BY LIST(a) (PARTITION p VALUES LESS THAN ("1"))',
            1,
            46,
            'PARTITION p VALUES LESS THAN ("1"))',
        ),
        (
            "CREATE TABLE t (a INT) PARTITION BY RANGE(a) (PARTITION p VALUES LESS THAN (a))",
            1,
            77,
            "a))",
        ),
        ("EXPLAIN CREATE DATABASE d", 1, 9, "CREATE DATABASE d"),
        ("SELECT * FROM a JOIN [foo] b ON a.k = b.k", 1, 22, "[foo] b ON a.k = b.k"),
        ("SELECT 1; SELEC 2", 1, 11, "SELEC 2"),
        ("ADMIN COMPACT t1 WHERE type = 'BASE'", 1, 15, "t1 WHERE type = 'BASE'"),
        ("SHOW TABLET abc", 1, 13, "abc"),
    ],
)
def test_syntax_errors(sql: str, line: int, col: int, near: str) -> None:
    with pytest.raises(SqlSyntaxError) as info:
        parse(sql)
    err = info.value
    assert (err.line, err.col, err.near) == (line, col, near), err.message
    assert "\x1b" not in err.message and "\x1b" not in err.detail
    assert err.message.startswith("You have an error in your SQL syntax;")
    assert f"near '{near}' at line {line}, column {col}" in err.message


def test_parse_one_requires_exactly_one_statement() -> None:
    with pytest.raises(SqlSyntaxError):
        parse_one("")
    with pytest.raises(SqlSyntaxError):
        parse_one("SELECT 1; SELECT 2")
    assert isinstance(parse_one("SELECT 1;"), exp.Select)


def test_near_text_is_cut_at_80_characters() -> None:
    sql = "SELEC " + ", ".join(f"c{i}" for i in range(100))
    with pytest.raises(SqlSyntaxError) as info:
        parse(sql)
    assert len(info.value.near) == 80
