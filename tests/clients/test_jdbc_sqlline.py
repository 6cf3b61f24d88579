"""The `sqlline` JDBC shell (Debian `sqlline`, over MariaDB Connector/J) against a live ShaleDB:
`!tables`, `!columns`, queries and an error, read from a script on stdin in tsv output mode and
checked against what pymysql reads from the same server."""

from __future__ import annotations

import shutil
import subprocess

SQLLINE = shutil.which("sqlline") or "/usr/bin/sqlline"


def run_sqlline(server, db: str, script: str) -> tuple[str, str]:
    proc = subprocess.run(
        [
            SQLLINE,
            "-u",
            f"jdbc:mysql://127.0.0.1:{server.port}/{db}",
            "-n",
            "root",
            "-p",
            "",
            "-d",
            "org.mariadb.jdbc.Driver",
            "--outputformat=tsv",
            "--force=true",
            "--showWarnings=false",
        ],
        input=script + "\n!quit\n",
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout, proc.stderr


def tsv_block(output: str, command: str) -> list[list[str]]:
    """The tsv rows (header first) sqlline printed after the prompt line ending in `command`."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith("> " + command))
    block = []
    for line in lines[start + 1 :]:
        if not line.startswith("'"):
            break
        block.append([cell[1:-1] for cell in line.split("\t")])
    return block


def test_sqlline_tables_columns_and_queries(server, db, db_conn) -> None:
    with db_conn.cursor() as cur:
        cur.execute(
            "CREATE TABLE orders (id INT, customer VARCHAR(30), amount DECIMAL(10,2), "
            "placed DATE) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1 "
            "PROPERTIES('replication_num'='1')"
        )
        cur.execute(
            "CREATE TABLE customers (name VARCHAR(30)) DISTRIBUTED BY HASH(name) BUCKETS 1 "
            "PROPERTIES('replication_num'='1')"
        )
        cur.execute(
            "INSERT INTO orders VALUES (1, 'ann', 10.50, '2024-01-02'), "
            "(2, 'bob''s', NULL, '2024-01-03'), (3, 'ann', 7.25, NULL)"
        )
        cur.execute(
            "SELECT customer, SUM(amount), COUNT(*) FROM orders GROUP BY customer ORDER BY customer"
        )
        grouped = cur.fetchall()
        cur.execute(
            "SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 'orders' ORDER BY ORDINAL_POSITION",
            (db,),
        )
        columns = cur.fetchall()
    query = (
        "SELECT customer, SUM(amount), COUNT(*) FROM orders GROUP BY customer ORDER BY customer;"
    )
    out, err = run_sqlline(
        server,
        db,
        "\n".join(
            [
                "!tables",
                "!columns orders",
                query,
                "SELECT * FROM no_such_table;",
            ]
        ),
    )

    tables = tsv_block(out, "!tables")
    assert tables[0][:4] == ["TABLE_CAT", "TABLE_SCHEM", "TABLE_NAME", "TABLE_TYPE"]
    assert sorted((r[0], r[2], r[3]) for r in tables[1:]) == [
        (db, "customers", "TABLE"),
        (db, "orders", "TABLE"),
    ]

    cols = tsv_block(out, "!columns orders")
    header = cols[0]
    name_at, type_at = header.index("COLUMN_NAME"), header.index("TYPE_NAME")
    assert [(r[name_at], r[type_at]) for r in cols[1:]] == [(n, t.upper()) for n, t in columns]

    result = tsv_block(out, query)
    assert result[0] == ["customer", "SUM(amount)", "COUNT(*)"]
    expected = [[c, "" if s is None else str(s), str(n)] for c, s, n in grouped]
    assert result[1:] == expected

    with server.connect(db) as c, c.cursor() as cur:
        try:
            cur.execute("SELECT * FROM no_such_table")
        except Exception as e:  # noqa: BLE001 - the reference error text
            message = e.args[1]
    assert message in err  # sqlline prints errors on stderr
