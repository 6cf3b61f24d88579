"""Property test (issue 11, "How it is checked"): compaction never changes what a query sees.

Random AGGREGATE, UNIQUE and DUPLICATE tables with rollups (the generator of
test_rollup_properties.py) are created twice: `<name>` compacts (in the background and by
random `ADMIN COMPACT TABLE .. WHERE type = 'CUMULATIVE' | 'BASE' | 'FULL'` between steps) and
`<name>_ref` has `"disable_auto_compaction" = "true"` and never compacts. Both get the same
random sequence of loads (INSERT, several rowsets per tablet) and DELETEs. After the steps,
random queries must give the same rows on both tables and in DuckDB over the logical data;
while a compaction runs, a second connection queries the compacting table and must see the
reference rows too (readers pinned to a version are never disturbed by the swap). The
compactions must really have merged rowsets: the tables end with fewer versions per tablet
than the reference.

Reproduce a failure with the seed printed in the assertion message:
`SHALEDB_PROPERTY_SEED=<seed> pytest tests/sql/test_compaction_properties.py`.
"""

from __future__ import annotations

import collections
import json
import random
import re
import threading
import time
import urllib.request
from dataclasses import replace

import duckdb
import pytest
from support.http import authorized
from support.rows import normalize_rows
from support.seeds import property_seeds
from test_rollup_properties import (
    Model,
    _duck_table,
    _literal,
    create_sql,
    random_delete,
    random_load,
    random_model,
    random_query,
)

DEFAULT_SEEDS = (5, 41)
STEPS = 10
QUERIES = 12  # per table
KINDS = ("CUMULATIVE", "BASE", "FULL")


def _twin(m: Model) -> Model:
    return replace(m, name=m.name + "_ref",
                   properties=m.properties + ('"disable_auto_compaction" = "true"',),
                   rollups=dict(m.rollups), rows=m.rows, merged=m.merged)


def _idle(http_port: int) -> bool:
    body = json.loads(urllib.request.urlopen(authorized(
        f"http://127.0.0.1:{http_port}/api/compaction/run_status"), timeout=30).read())
    return not [t for v in body.values() if isinstance(v, dict) for ts in v.values() for t in ts]


def _wait_idle(http_port: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not _idle(http_port):
        assert time.monotonic() < deadline, "compaction still running after 120 s"
        time.sleep(0.02)


def _version_counts(cur, table: str) -> list[int]:
    cur.execute(f"SHOW TABLETS FROM {table}")
    names = [d[0] for d in cur.description]
    return [int(r[names.index("VersionCount")]) for r in cur.fetchall()]


def _scan_index(cur, sql: str, table: str) -> list[str]:
    cur.execute("EXPLAIN " + sql)
    text = "\n".join(str(r[0]) for r in cur.fetchall())
    return re.findall(rf"TABLE: [^.\s]+\.{table}\((\w+)\)", text)


def _run_seed(server, db: str, seed: int) -> collections.Counter:
    rnd = random.Random(seed)
    duck = duckdb.connect()
    stats: collections.Counter = collections.Counter()
    conn, other = server.connect(db), server.connect(db)
    try:
        cur, ocur = conn.cursor(), other.cursor()
        cur.execute("SET delete_without_partition = true")
        models = [random_model(f"{kind.lower()}_c", kind, rnd)
                  for kind in ("AGGREGATE", "UNIQUE", "DUPLICATE")]
        for m in models:
            cur.execute(create_sql(m))
            cur.execute(create_sql(_twin(m)))
        log: list[str] = []
        for step in range(STEPS):
            for m in models:
                d = random_delete(m, rnd) if step and rnd.random() < 0.25 else None
                if d is not None:
                    sqls = [f"DELETE FROM {t} WHERE {d[0]}" for t in (m.name, m.name + "_ref")]
                    m.delete(d[1])
                    stats["deletes"] += 1
                else:
                    rows = random_load(m, rnd)
                    values = ", ".join("(" + ", ".join(_literal(x) for x in r) + ")"
                                       for r in rows)
                    sqls = [f"INSERT INTO {t} VALUES {values}" for t in (m.name, m.name + "_ref")]
                    m.load(rows)
                for sql in sqls:
                    cur.execute(sql)
                log.append(sqls[0][:90])
                if rnd.random() < 0.4:
                    kind = rnd.choice(KINDS)
                    _compact_while_reading(server, cur, ocur, m, kind, rnd, log, seed)
                    log.append(f"ADMIN COMPACT TABLE {m.name} WHERE type = '{kind}'")
                    stats[f"compact {kind}"] += 1
        for m in models:
            cur.execute(f"ADMIN COMPACT TABLE {m.name} WHERE type = 'FULL'")
        _wait_idle(server.http_port)
        for m in models:
            _duck_table(duck, m)
            ref = _version_counts(cur, m.name + "_ref")
            got = _version_counts(cur, m.name)
            assert sum(got) < sum(ref) and max(got) <= 2, (
                f"seed={seed}: {m.name} did not compact: {got} vs reference {ref}")
            for i in range(QUERIES):
                sql = _query(m, rnd)
                where = f"seed={seed} query #{i} on {m.keys_type} table {m.name}\nSQL: {sql}"
                expected = normalize_rows(duck.execute(sql).fetchall())
                cur.execute(sql)
                got_rows = normalize_rows(cur.fetchall())
                cur.execute(sql.replace(f" {m.name}", f" {m.name}_ref"))
                ref_rows = normalize_rows(cur.fetchall())
                assert ref_rows == expected, f"{where}\nreference differs from DuckDB\n{log}"
                assert got_rows == expected, (
                    f"{where}\ncompacted table differs\nexpected {expected[:10]}\n"
                    f"got {got_rows[:10]}\nsteps: {log}")
                if any(ix != m.name for ix in _scan_index(cur, sql, m.name)):
                    stats["rollup reads"] += 1
                stats["queries"] += 1
        return stats
    finally:
        conn.close()
        other.close()
        duck.close()


def _query(m: Model, rnd: random.Random) -> str:
    """A random query of test_rollup_properties without its join (no dimension table here)."""
    while True:
        sql = random_query(m, "dim", rnd)
        if " JOIN " not in sql:
            return sql


def _compact_while_reading(server, cur, ocur, m: Model, kind: str, rnd: random.Random,
                           log: list[str], seed: int) -> None:
    """ADMIN COMPACT the table while another connection keeps querying it; every answer must
    equal the reference table's."""
    sql = _query(m, rnd)
    cur.execute(sql.replace(f" {m.name}", f" {m.name}_ref"))
    expected = normalize_rows(cur.fetchall())
    stop = threading.Event()
    seen: list[object] = []

    def reader() -> None:
        while not stop.is_set():
            try:
                ocur.execute(sql)
                seen.append(normalize_rows(ocur.fetchall()))
            except BaseException as e:  # noqa: BLE001 - reported below
                seen.append(e)
                return

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    cur.execute(f"ADMIN COMPACT TABLE {m.name} WHERE type = '{kind}'")
    _wait_idle(server.http_port)
    stop.set()
    t.join(timeout=60)
    bad = [s for s in seen if s != expected]
    assert not bad, (f"seed={seed}: a query during {kind} compaction of {m.name} saw "
                     f"{bad[0]!r:.300}\nexpected {expected[:10]}\nSQL: {sql}\nsteps: {log}")


@pytest.mark.parametrize("seed", property_seeds(DEFAULT_SEEDS))
def test_compaction_never_changes_results(server, make_db, seed: int) -> None:
    db = make_db(f"compactprop{seed}")
    stats = _run_seed(server, db, seed)
    assert stats["queries"] == 3 * QUERIES, dict(stats)
    assert sum(stats[f"compact {k}"] for k in KINDS) >= 3, dict(stats)
    assert stats["rollup reads"] >= 1, f"seed={seed}: no query read a rollup: {dict(stats)}"
