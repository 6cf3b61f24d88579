"""HISTOGRAM / HIST (sql/functions/histogram.py) and MURMUR_HASH3_64 (sql/functions/hashes.py)
over the MySQL protocol. Hash values: the Doris 2.1 documentation examples; histograms: the
bucket layout of Doris' BE tests (tests/unit/sql/test_histogram_buckets.py) through SQL, and a
Python reference on random data per group."""

from __future__ import annotations

import json
import random
from collections import Counter

from sql.functions.histogram import histogram_json
from storage.types import INT


def test_murmur_hash3_64_doc_examples(db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute("SELECT murmur_hash3_64(NULL), murmur_hash3_64('hello'), "
                "murmur_hash3_64('hello', 'world'), murmur_hash3_64('hello', NULL)")
    assert cur.fetchone() == (None, -3215607508166160593, 3583109472027628045, None)


def test_histogram_buckets_through_sql(db_conn) -> None:
    cur = db_conn.cursor()
    cur.execute("CREATE TABLE hist_t (k INT, v INT, s VARCHAR(10)) DUPLICATE KEY(k) "
                "DISTRIBUTED BY HASH(k) BUCKETS 3 PROPERTIES ('replication_num'='1')")
    # Doris BE test `not_enough_buckets`: values 1..4 with counts 5, 10, 20, 30 in 2 buckets
    rows = [(i, v, f"s{v}") for i, v in enumerate(
        [1] * 5 + [2] * 10 + [3] * 20 + [4] * 30 + [None] * 3)]
    cur.execute("INSERT INTO hist_t VALUES " + ", ".join(
        f"({k}, {'NULL' if v is None else v}, '{s}')" for k, v, s in rows))
    cur.execute("SELECT histogram(v, 2), hist(v, 2) FROM hist_t")
    a, b = cur.fetchone()
    assert a == b == (
        '{"num_buckets":2,"buckets":[{"lower":"1","upper":"3","ndv":3,"count":35,"pre_sum":0},'
        '{"lower":"4","upper":"4","ndv":1,"count":30,"pre_sum":35}]}')
    cur.execute("SELECT histogram(s, 1) FROM hist_t WHERE v IS NOT NULL")
    assert json.loads(cur.fetchone()[0]) == {"num_buckets": 1, "buckets": [
        {"lower": "s1", "upper": "s4", "ndv": 4, "count": 65, "pre_sum": 0}]}
    cur.execute("SELECT histogram(v) FROM hist_t WHERE v IS NULL")
    assert cur.fetchone()[0] == '{"num_buckets":0,"buckets":[]}'


def test_histogram_per_group_matches_reference(db_conn) -> None:
    rng = random.Random(5)
    rows = [(i, rng.randint(0, 4), None if rng.random() < 0.1 else rng.randint(-20, 20))
            for i in range(400)]
    cur = db_conn.cursor()
    cur.execute("CREATE TABLE hist_g (k INT, g INT, v INT) DUPLICATE KEY(k) "
                "DISTRIBUTED BY HASH(k) BUCKETS 4 PROPERTIES ('replication_num'='1')")
    cur.execute("INSERT INTO hist_g VALUES " + ", ".join(
        f"({k}, {g}, {'NULL' if v is None else v})" for k, g, v in rows))
    cur.execute("SELECT g, histogram(v, 5), histogram(v) FROM hist_g GROUP BY g ORDER BY g")
    got = cur.fetchall()
    for g, five, default in got:
        counter = Counter(v for _, gg, v in rows if gg == g and v is not None)
        assert five == histogram_json(INT, counter, 5)
        assert default == histogram_json(INT, counter, 128)
    assert [r[0] for r in got] == sorted({g for _, g, _ in rows})
