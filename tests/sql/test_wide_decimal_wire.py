"""Wide-DECIMAL arithmetic and sums over the wire, against Python's exact `Decimal`.

DECIMAL(15,2) products are DECIMAL(31,4) / DECIMAL(38,6): the executor computes them in int64
while the operands' magnitudes allow it and in Python ints beyond (sql/functions/operators.py),
and the GROUP BY kernels sum them exactly past the int64 range (executor/grouped_state.py). The
data mixes extreme DECIMAL(15,2) values, negatives and NULLs so every path is taken.
"""

from __future__ import annotations

import random
from decimal import ROUND_HALF_UP, Decimal, localcontext

MAXV = Decimal("9999999999999.99")


def _rows() -> list[tuple]:  # type: ignore[type-arg]
    rng = random.Random(20261122)
    out = []
    for i in range(4000):
        big = i % 5 == 0  # extreme prices push the products past int64
        p = MAXV if i % 50 == 0 else Decimal(rng.randint(-10**15 + 1 if big else -10**7,
                                                         10**15 - 1 if big else 10**7)) / 100
        d = Decimal(rng.randint(-99, 99)) / 100
        t = Decimal(rng.randint(0, 8)) / 100
        out.append((i, "ABC"[i % 3], None if i % 23 == 0 else p, None if i % 31 == 0 else d, t))
    return out


def _setup(cur) -> list[tuple]:  # type: ignore[no-untyped-def,type-arg]
    cur.execute("CREATE TABLE w (k INT, g VARCHAR(1), p DECIMAL(15,2), d DECIMAL(15,2), "
                "t DECIMAL(15,2)) DUPLICATE KEY(k) DISTRIBUTED BY HASH(k) BUCKETS 3")
    rows = _rows()
    for s in range(0, len(rows), 1000):
        cur.execute("INSERT INTO w VALUES " + ", ".join(
            f"({k}, '{g}', {'NULL' if p is None else p}, {'NULL' if d is None else d}, {t})"
            for k, g, p, d, t in rows[s: s + 1000]))
    return rows


def _exact(p: Decimal | None, d: Decimal | None, t: Decimal) -> tuple:  # type: ignore[type-arg]
    if p is None or d is None:
        return None, None
    return p * (1 - d), p * (1 - d) * (1 + t)


_Q1 = ("SELECT g, sum(p), sum(p * (1 - d)), sum(p * (1 - d) * (1 + t)), avg(p * (1 - d)), "
       "count(*) FROM w {where} GROUP BY g ORDER BY g")


def test_q1_shaped_sums_are_exact(db_conn) -> None:  # type: ignore[no-untyped-def]
    cur = db_conn.cursor()
    rows = _setup(cur)
    # all rows: products beyond int64 (Python ints), sums beyond int64
    _check_q1(cur, _Q1.format(where=""), rows, big=True)
    # small prices only: int64 products and sums
    small = [r for r in rows if r[2] is not None and abs(r[2]) <= 100000]
    _check_q1(cur, _Q1.format(where="WHERE p BETWEEN -100000 AND 100000"), small, big=False)


def _check_q1(cur, sql: str, rows: list, big: bool) -> None:  # type: ignore[no-untyped-def]
    cur.execute(sql)
    got = cur.fetchall()
    expect = []
    with localcontext() as ctx:
        ctx.prec = 80
        for g in "ABC":
            mine = [r for r in rows if r[1] == g]
            ps = [r[2] for r in mine if r[2] is not None]
            e1 = [_exact(r[2], r[3], r[4]) for r in mine]
            s1 = sum(x for x, _ in e1 if x is not None)
            s2 = sum(y for _, y in e1 if y is not None)
            n1 = sum(1 for x, _ in e1 if x is not None)
            expect.append((g, sum(ps), s1, s2, s1 / n1, len(mine)))
    assert [r[0] for r in got] == ["A", "B", "C"]
    assert (max(abs(r[3]) for r in expect) * 10**6 > 2**63) == big  # the sums leave int64
    for row, exp in zip(got, expect):
        assert row[1] == exp[1] and row[2] == exp[2] and row[3] == exp[3] and row[5] == exp[5]
        assert row[2].as_tuple().exponent == -4 and row[3].as_tuple().exponent == -6
        avg = row[4]
        assert avg == exp[4].quantize(Decimal(1).scaleb(avg.as_tuple().exponent), ROUND_HALF_UP)


def test_wide_products_in_projections_and_filters(db_conn) -> None:  # type: ignore[no-untyped-def]
    cur = db_conn.cursor()
    rows = _setup(cur)
    cur.execute("SELECT k, p * (1 - d) * (1 + t), -(p * d) FROM w "
                "WHERE p * d * t > 1000000 ORDER BY k")
    got = cur.fetchall()
    expect = [(k, p * (1 - d) * (1 + t), -(p * d)) for k, _, p, d, t in rows
              if p is not None and d is not None and p * d * t > 1000000]
    assert len(expect) > 10
    assert [tuple(r) for r in got] == expect
