"""Star Schema Benchmark kit: the data generator, Doris' DDL and the 13 queries Q1.1-Q4.3.

Generates the 5 SSB tables (lineorder, customer, supplier, part, dates) with numpy from a fixed
seed at the chosen scale factor (value domains after the SSB spec, O'Neil et al., so the standard
queries keep their intended selectivity) as Arrow tables. The benchmark itself is
`bench/run.py ssb` (bench/harness/): it loads these tables by Stream Load as users do and
compares with DuckDB on a database file. This module also loads DuckDB (`load_duckdb`) for the
single-purpose scripts that need the same rows (bench/point_lookup.py, bench/stream_load.py).

Column names and DDL follow Doris's SSB kit (table `dates`, column `p_brand` = the spec's
`p_brand1`), without the range partitioning of lineorder.
"""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pyarrow as pa

SEED = 20240101
TABLES = ("dates", "customer", "supplier", "part", "lineorder")

# ---- Doris DDL -----------------------------------------------------------------------------
DDL = {
    "lineorder": """CREATE TABLE lineorder (
  lo_orderdate INT NOT NULL, lo_orderkey INT NOT NULL, lo_linenumber INT NOT NULL,
  lo_custkey INT NOT NULL, lo_partkey INT NOT NULL, lo_suppkey INT NOT NULL,
  lo_orderpriority VARCHAR(16) NOT NULL, lo_shippriority INT NOT NULL,
  lo_quantity INT NOT NULL, lo_extendedprice INT NOT NULL, lo_ordtotalprice INT NOT NULL,
  lo_discount INT NOT NULL, lo_revenue INT NOT NULL, lo_supplycost INT NOT NULL,
  lo_tax INT NOT NULL, lo_commitdate INT NOT NULL, lo_shipmode VARCHAR(11) NOT NULL)
DUPLICATE KEY(lo_orderdate, lo_orderkey) DISTRIBUTED BY HASH(lo_orderkey) BUCKETS 8""",
    "customer": """CREATE TABLE customer (
  c_custkey INT NOT NULL, c_name VARCHAR(26) NOT NULL, c_address VARCHAR(41) NOT NULL,
  c_city VARCHAR(11) NOT NULL, c_nation VARCHAR(16) NOT NULL, c_region VARCHAR(13) NOT NULL,
  c_phone VARCHAR(16) NOT NULL, c_mktsegment VARCHAR(11) NOT NULL)
DUPLICATE KEY(c_custkey) DISTRIBUTED BY HASH(c_custkey) BUCKETS 2""",
    "supplier": """CREATE TABLE supplier (
  s_suppkey INT NOT NULL, s_name VARCHAR(26) NOT NULL, s_address VARCHAR(26) NOT NULL,
  s_city VARCHAR(11) NOT NULL, s_nation VARCHAR(16) NOT NULL, s_region VARCHAR(13) NOT NULL,
  s_phone VARCHAR(16) NOT NULL)
DUPLICATE KEY(s_suppkey) DISTRIBUTED BY HASH(s_suppkey) BUCKETS 1""",
    "part": """CREATE TABLE part (
  p_partkey INT NOT NULL, p_name VARCHAR(23) NOT NULL, p_mfgr VARCHAR(7) NOT NULL,
  p_category VARCHAR(8) NOT NULL, p_brand VARCHAR(10) NOT NULL, p_color VARCHAR(12) NOT NULL,
  p_type VARCHAR(26) NOT NULL, p_size INT NOT NULL, p_container VARCHAR(11) NOT NULL)
DUPLICATE KEY(p_partkey) DISTRIBUTED BY HASH(p_partkey) BUCKETS 2""",
    "dates": """CREATE TABLE dates (
  d_datekey INT NOT NULL, d_date VARCHAR(20) NOT NULL, d_dayofweek VARCHAR(10) NOT NULL,
  d_month VARCHAR(11) NOT NULL, d_year INT NOT NULL, d_yearmonthnum INT NOT NULL,
  d_yearmonth VARCHAR(9) NOT NULL, d_daynuminweek INT NOT NULL, d_daynuminmonth INT NOT NULL,
  d_daynuminyear INT NOT NULL, d_monthnuminyear INT NOT NULL, d_weeknuminyear INT NOT NULL,
  d_sellingseason VARCHAR(14) NOT NULL, d_lastdayinweekfl INT NOT NULL,
  d_lastdayinmonthfl INT NOT NULL, d_holidayfl INT NOT NULL, d_weekdayfl INT NOT NULL)
DUPLICATE KEY(d_datekey) DISTRIBUTED BY HASH(d_datekey) BUCKETS 1""",
}

# ---- the 13 standard queries (Doris SSB kit text) --------------------------------------------
QUERIES: dict[str, str] = {
    "1.1": """SELECT SUM(lo_extendedprice * lo_discount) AS revenue
FROM lineorder, dates
WHERE lo_orderdate = d_datekey AND d_year = 1993
  AND lo_discount BETWEEN 1 AND 3 AND lo_quantity < 25""",
    "1.2": """SELECT SUM(lo_extendedprice * lo_discount) AS revenue
FROM lineorder, dates
WHERE lo_orderdate = d_datekey AND d_yearmonthnum = 199401
  AND lo_discount BETWEEN 4 AND 6 AND lo_quantity BETWEEN 26 AND 35""",
    "1.3": """SELECT SUM(lo_extendedprice * lo_discount) AS revenue
FROM lineorder, dates
WHERE lo_orderdate = d_datekey AND d_weeknuminyear = 6 AND d_year = 1994
  AND lo_discount BETWEEN 5 AND 7 AND lo_quantity BETWEEN 26 AND 35""",
    "2.1": """SELECT SUM(lo_revenue), d_year, p_brand
FROM lineorder, dates, part, supplier
WHERE lo_orderdate = d_datekey AND lo_partkey = p_partkey AND lo_suppkey = s_suppkey
  AND p_category = 'MFGR#12' AND s_region = 'AMERICA'
GROUP BY d_year, p_brand
ORDER BY d_year, p_brand""",
    "2.2": """SELECT SUM(lo_revenue), d_year, p_brand
FROM lineorder, dates, part, supplier
WHERE lo_orderdate = d_datekey AND lo_partkey = p_partkey AND lo_suppkey = s_suppkey
  AND p_brand BETWEEN 'MFGR#2221' AND 'MFGR#2228' AND s_region = 'ASIA'
GROUP BY d_year, p_brand
ORDER BY d_year, p_brand""",
    "2.3": """SELECT SUM(lo_revenue), d_year, p_brand
FROM lineorder, dates, part, supplier
WHERE lo_orderdate = d_datekey AND lo_partkey = p_partkey AND lo_suppkey = s_suppkey
  AND p_brand = 'MFGR#2239' AND s_region = 'EUROPE'
GROUP BY d_year, p_brand
ORDER BY d_year, p_brand""",
    "3.1": """SELECT c_nation, s_nation, d_year, SUM(lo_revenue) AS revenue
FROM customer, lineorder, supplier, dates
WHERE lo_custkey = c_custkey AND lo_suppkey = s_suppkey AND lo_orderdate = d_datekey
  AND c_region = 'ASIA' AND s_region = 'ASIA' AND d_year >= 1992 AND d_year <= 1997
GROUP BY c_nation, s_nation, d_year
ORDER BY d_year ASC, revenue DESC""",
    "3.2": """SELECT c_city, s_city, d_year, SUM(lo_revenue) AS revenue
FROM customer, lineorder, supplier, dates
WHERE lo_custkey = c_custkey AND lo_suppkey = s_suppkey AND lo_orderdate = d_datekey
  AND c_nation = 'UNITED STATES' AND s_nation = 'UNITED STATES'
  AND d_year >= 1992 AND d_year <= 1997
GROUP BY c_city, s_city, d_year
ORDER BY d_year ASC, revenue DESC""",
    "3.3": """SELECT c_city, s_city, d_year, SUM(lo_revenue) AS revenue
FROM customer, lineorder, supplier, dates
WHERE lo_custkey = c_custkey AND lo_suppkey = s_suppkey AND lo_orderdate = d_datekey
  AND (c_city = 'UNITED KI1' OR c_city = 'UNITED KI5')
  AND (s_city = 'UNITED KI1' OR s_city = 'UNITED KI5')
  AND d_year >= 1992 AND d_year <= 1997
GROUP BY c_city, s_city, d_year
ORDER BY d_year ASC, revenue DESC""",
    "3.4": """SELECT c_city, s_city, d_year, SUM(lo_revenue) AS revenue
FROM customer, lineorder, supplier, dates
WHERE lo_custkey = c_custkey AND lo_suppkey = s_suppkey AND lo_orderdate = d_datekey
  AND (c_city = 'UNITED KI1' OR c_city = 'UNITED KI5')
  AND (s_city = 'UNITED KI1' OR s_city = 'UNITED KI5')
  AND d_yearmonth = 'Dec1997'
GROUP BY c_city, s_city, d_year
ORDER BY d_year ASC, revenue DESC""",
    "4.1": """SELECT d_year, c_nation, SUM(lo_revenue - lo_supplycost) AS profit
FROM dates, customer, supplier, part, lineorder
WHERE lo_custkey = c_custkey AND lo_suppkey = s_suppkey AND lo_partkey = p_partkey
  AND lo_orderdate = d_datekey AND c_region = 'AMERICA' AND s_region = 'AMERICA'
  AND (p_mfgr = 'MFGR#1' OR p_mfgr = 'MFGR#2')
GROUP BY d_year, c_nation
ORDER BY d_year, c_nation""",
    "4.2": """SELECT d_year, s_nation, p_category, SUM(lo_revenue - lo_supplycost) AS profit
FROM dates, customer, supplier, part, lineorder
WHERE lo_custkey = c_custkey AND lo_suppkey = s_suppkey AND lo_partkey = p_partkey
  AND lo_orderdate = d_datekey AND c_region = 'AMERICA' AND s_region = 'AMERICA'
  AND (d_year = 1997 OR d_year = 1998) AND (p_mfgr = 'MFGR#1' OR p_mfgr = 'MFGR#2')
GROUP BY d_year, s_nation, p_category
ORDER BY d_year, s_nation, p_category""",
    "4.3": """SELECT d_year, s_city, p_brand, SUM(lo_revenue - lo_supplycost) AS profit
FROM dates, customer, supplier, part, lineorder
WHERE lo_custkey = c_custkey AND lo_suppkey = s_suppkey AND lo_partkey = p_partkey
  AND lo_orderdate = d_datekey AND c_region = 'AMERICA' AND s_nation = 'UNITED STATES'
  AND (d_year = 1997 OR d_year = 1998) AND p_category = 'MFGR#14'
GROUP BY d_year, s_city, p_brand
ORDER BY d_year, s_city, p_brand""",
}

# ---- data generation ---------------------------------------------------------------------
NATIONS = [  # (name, region) as in TPC-H / SSB
    ("ALGERIA", "AFRICA"), ("ARGENTINA", "AMERICA"), ("BRAZIL", "AMERICA"),
    ("CANADA", "AMERICA"), ("EGYPT", "MIDDLE EAST"), ("ETHIOPIA", "AFRICA"),
    ("FRANCE", "EUROPE"), ("GERMANY", "EUROPE"), ("INDIA", "ASIA"), ("INDONESIA", "ASIA"),
    ("IRAN", "MIDDLE EAST"), ("IRAQ", "MIDDLE EAST"), ("JAPAN", "ASIA"),
    ("JORDAN", "MIDDLE EAST"), ("KENYA", "AFRICA"), ("MOROCCO", "AFRICA"),
    ("MOZAMBIQUE", "AFRICA"), ("PERU", "AMERICA"), ("CHINA", "ASIA"), ("ROMANIA", "EUROPE"),
    ("SAUDI ARABIA", "MIDDLE EAST"), ("VIETNAM", "ASIA"), ("RUSSIA", "EUROPE"),
    ("UNITED KINGDOM", "EUROPE"), ("UNITED STATES", "AMERICA"),
]
SEGMENTS = ["AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD"]
PRIORITIES = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECI", "5-LOW"]
SHIPMODES = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"]
COLORS = ["almond", "antique", "aquamarine", "azure", "beige", "bisque", "black", "blanched",
          "blue", "blush", "brown", "burlywood", "burnished", "chartreuse", "chiffon",
          "chocolate", "coral", "cornflower", "cornsilk", "cream", "cyan", "dark", "deep",
          "dim", "dodger", "drab", "firebrick", "floral", "forest", "frosted", "gainsboro",
          "ghost", "goldenrod", "green", "grey", "honeydew", "hot", "indian", "ivory", "khaki",
          "lace", "lavender", "lawn", "lemon", "light", "lime", "linen", "magenta", "maroon",
          "medium", "metallic", "midnight", "mint", "misty", "moccasin", "navajo", "navy",
          "olive", "orange", "orchid", "pale", "papaya", "peach", "peru", "pink", "plum",
          "powder", "puff", "purple", "red", "rose", "rosy", "royal", "saddle", "salmon",
          "sandy", "seashell", "sienna", "sky", "slate", "smoke", "snow", "spring", "steel",
          "tan", "thistle", "tomato", "turquoise", "violet", "wheat", "white", "yellow"]
TYPE1 = ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"]
TYPE2 = ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"]
TYPE3 = ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"]
CONT1 = ["SM", "LG", "MED", "JUMBO", "WRAP"]
CONT2 = ["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
ALNUM = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 ,",
                      dtype=np.uint8)


def _pick(rng: np.random.Generator, choices: list[str], n: int) -> np.ndarray:
    return np.asarray(choices, dtype=object)[rng.integers(0, len(choices), n)]


def _rand_strings(rng: np.random.Generator, n: int, lo: int, hi: int) -> list[str]:
    lens = rng.integers(lo, hi + 1, n)
    chars = ALNUM[rng.integers(0, len(ALNUM), int(lens.sum()))].tobytes().decode()
    ends = np.cumsum(lens)
    return [chars[e - n_:e] for e, n_ in zip(ends.tolist(), lens.tolist())]


def _phones(rng: np.random.Generator, nation_idx: np.ndarray) -> list[str]:
    a, b, c = (rng.integers(100, 1000, len(nation_idx)), rng.integers(100, 1000, len(nation_idx)),
               rng.integers(1000, 10000, len(nation_idx)))
    return [f"{n + 10}-{x}-{y}-{z}" for n, x, y, z in
            zip(nation_idx.tolist(), a.tolist(), b.tolist(), c.tolist())]


def _geo(rng: np.random.Generator, n: int) -> tuple[np.ndarray, list[str], list[str], list[str]]:
    """nation index, city (first 9 chars of the nation padded with blanks + digit 0-9), nation,
    region."""
    nat = rng.integers(0, len(NATIONS), n)
    digit = rng.integers(0, 10, n)
    names = [NATIONS[i][0] for i in nat.tolist()]
    cities = [f"{nm[:9]:<9}{d}" for nm, d in zip(names, digit.tolist())]
    regions = [NATIONS[i][1] for i in nat.tolist()]
    return nat, cities, names, regions


def gen_dates() -> pa.Table:
    days = [dt.date(1992, 1, 1) + dt.timedelta(i) for i in range((dt.date(1999, 1, 1)
                                                                   - dt.date(1992, 1, 1)).days)]
    n = len(days)

    def season(d: dt.date) -> str:
        if d.month == 12 or (d.month == 11 and d.day >= 1):
            return "Christmas" if d.month == 12 else "Fall"
        return {1: "Winter", 2: "Winter", 3: "Spring", 4: "Spring", 5: "Spring",
                6: "Summer", 7: "Summer", 8: "Summer", 9: "Fall", 10: "Fall"}[d.month]

    holidays = {(1, 1), (7, 4), (12, 25), (12, 31), (11, 24), (5, 30), (9, 1)}
    nxt = [d + dt.timedelta(1) for d in days]
    cols = {
        "d_datekey": [d.year * 10000 + d.month * 100 + d.day for d in days],
        "d_date": [f"{MONTHS[d.month - 1]} {d.day}, {d.year}" for d in days],
        "d_dayofweek": [DAYS[d.weekday()] for d in days],
        "d_month": [MONTHS[d.month - 1] for d in days],
        "d_year": [d.year for d in days],
        "d_yearmonthnum": [d.year * 100 + d.month for d in days],
        "d_yearmonth": [f"{MONTHS[d.month - 1][:3]}{d.year}" for d in days],
        "d_daynuminweek": [d.isoweekday() % 7 + 1 for d in days],  # Sunday = 1
        "d_daynuminmonth": [d.day for d in days],
        "d_daynuminyear": [d.timetuple().tm_yday for d in days],
        "d_monthnuminyear": [d.month for d in days],
        # week 1 = the week containing Jan 1 (weeks counted from the year start, 1..53)
        "d_weeknuminyear": [(d.timetuple().tm_yday - 1) // 7 + 1 for d in days],
        "d_sellingseason": [season(d) for d in days],
        "d_lastdayinweekfl": [int(d.weekday() == 5) for d in days],
        "d_lastdayinmonthfl": [int(x.month != d.month) for d, x in zip(days, nxt)],
        "d_holidayfl": [int((d.month, d.day) in holidays) for d in days],
        "d_weekdayfl": [int(d.weekday() < 5) for d in days],
    }
    assert all(len(v) == n for v in cols.values())
    return pa.table({k: pa.array(v, pa.string() if isinstance(v[0], str) else pa.int32())
                     for k, v in cols.items()})


def _table(cols: dict[str, object]) -> pa.Table:
    out = {}
    for k, v in cols.items():
        if isinstance(v, np.ndarray) and v.dtype != object:
            out[k] = pa.array(v.astype(np.int32))
        else:
            out[k] = pa.array(list(v), pa.string())
    return pa.table(out)


def sizes(sf: float) -> dict[str, int]:
    part = int(200_000 * (math.floor(1 + math.log2(sf)) if sf >= 1 else sf))
    return {"customer": max(int(30_000 * sf), 1), "supplier": max(int(2_000 * sf), 1),
            "part": max(min(part, 2_000_000), 1), "orders": max(int(1_500_000 * sf), 1)}


def _part_price(pk: np.ndarray) -> np.ndarray:
    """The TPC-H/SSB retail price formula, in cents."""
    return 90_000 + (pk // 10) % 20_001 + 100 * (pk % 1_000)


def generate(sf: float, seed: int = SEED) -> dict[str, pa.Table]:
    rng = np.random.default_rng(seed)
    n = sizes(sf)
    out: dict[str, pa.Table] = {"dates": gen_dates()}
    datekeys = np.asarray(out["dates"].column("d_datekey").to_numpy(), dtype=np.int64)

    nc = n["customer"]
    nat, city, nation, region = _geo(rng, nc)
    ck = np.arange(1, nc + 1)
    out["customer"] = _table({
        "c_custkey": ck, "c_name": [f"Customer#{k:09d}" for k in ck.tolist()],
        "c_address": _rand_strings(rng, nc, 10, 25), "c_city": city, "c_nation": nation,
        "c_region": region, "c_phone": _phones(rng, nat),
        "c_mktsegment": _pick(rng, SEGMENTS, nc)})

    ns = n["supplier"]
    nat, city, nation, region = _geo(rng, ns)
    sk = np.arange(1, ns + 1)
    out["supplier"] = _table({
        "s_suppkey": sk, "s_name": [f"Supplier#{k:09d}" for k in sk.tolist()],
        "s_address": _rand_strings(rng, ns, 10, 25), "s_city": city, "s_nation": nation,
        "s_region": region, "s_phone": _phones(rng, nat)})

    np_ = n["part"]
    pk = np.arange(1, np_ + 1)
    m = rng.integers(1, 6, np_)
    c = rng.integers(1, 6, np_)
    b = rng.integers(1, 41, np_)
    ml, cl, bl = m.tolist(), c.tolist(), b.tolist()
    c1 = _pick(rng, COLORS, np_)
    c2 = _pick(rng, COLORS, np_)
    out["part"] = _table({
        "p_partkey": pk, "p_name": [f"{x} {y}" for x, y in zip(c1, c2)],
        "p_mfgr": [f"MFGR#{x}" for x in ml], "p_category": [f"MFGR#{x}{y}" for x, y in zip(ml, cl)],
        "p_brand": [f"MFGR#{x}{y}{z:02d}" for x, y, z in zip(ml, cl, bl)],
        "p_color": _pick(rng, COLORS, np_),
        "p_type": [f"{a} {b_} {c_}" for a, b_, c_ in zip(_pick(rng, TYPE1, np_),
                                                      _pick(rng, TYPE2, np_),
                                                      _pick(rng, TYPE3, np_))],
        "p_size": rng.integers(1, 51, np_),
        "p_container": [f"{a} {b_}" for a, b_ in zip(_pick(rng, CONT1, np_),
                                                   _pick(rng, CONT2, np_))]})

    # lineorder: orders with 1..7 lines each (avg 4 -> 6M x SF rows); order dates uniform over
    # 1992-01-01 .. 1998-08-02 (the last 151 days have no orders, as in dbgen).
    no = n["orders"]
    nlines = rng.integers(1, 8, no)
    nl = int(nlines.sum())
    order_idx = np.repeat(np.arange(no), nlines)
    okey = order_idx + 1
    starts = np.cumsum(nlines) - nlines
    linenum = np.arange(nl) - np.repeat(starts, nlines) + 1
    od_idx = rng.integers(0, len(datekeys) - 151, no)[order_idx]
    partkey = rng.integers(1, np_ + 1, nl)
    price = _part_price(partkey)
    qty = rng.integers(1, 51, nl)
    ext = qty * price
    disc = rng.integers(0, 11, nl)
    tax = rng.integers(0, 9, nl)
    ordtotal = np.bincount(order_idx, weights=ext * (100 + tax) // 100).astype(np.int64)
    out["lineorder"] = _table({
        "lo_orderdate": datekeys[od_idx], "lo_orderkey": okey, "lo_linenumber": linenum,
        "lo_custkey": rng.integers(1, nc + 1, no)[order_idx],
        "lo_partkey": partkey, "lo_suppkey": rng.integers(1, ns + 1, nl),
        "lo_orderpriority": _pick(rng, PRIORITIES, no)[order_idx],
        "lo_shippriority": np.zeros(nl, dtype=np.int64),
        "lo_quantity": qty, "lo_extendedprice": ext, "lo_ordtotalprice": ordtotal[order_idx],
        "lo_discount": disc, "lo_revenue": ext * (100 - disc) // 100,
        "lo_supplycost": 6 * price // 10, "lo_tax": tax,
        "lo_commitdate": datekeys[od_idx + rng.integers(30, 91, nl)],
        "lo_shipmode": _pick(rng, SHIPMODES, nl)})
    return out


# ---- DuckDB --------------------------------------------------------------------------------
def load_duckdb(con, data: dict[str, pa.Table]) -> None:
    """Create the SSB tables in the DuckDB connection `con` from `generate`'s Arrow tables."""
    for name in TABLES:
        con.register("_src", data[name])
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM _src")
        con.unregister("_src")
