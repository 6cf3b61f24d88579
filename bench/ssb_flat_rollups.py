"""SSB-flat kit: Doris' 13 flat queries on `lineorder_flat` and the sync materialized views a
Doris user creates for the query groups. The benchmark is `bench/run.py ssb-flat [--rollups]`
(bench/harness/datasets.py), which loads the table by Stream Load as users do and compares with
DuckDB on a database file; this module only holds the query texts and the view DDL.
"""

from __future__ import annotations

# The sync materialized views a Doris user creates for the query groups (CREATE MATERIALIZED
# VIEW on the DUPLICATE table): each group's filter columns and group keys as the view's keys
# (filters leading the prefix index), its aggregate as the value, and the YEAR
# (lo_orderdate DIV 10000) as the date key. The date filters of Q1.1, Q3.1-3.3 and Q4.2-4.3
# span whole years; a year key cannot express `lo_orderdate <= 19971231` (19971299 is a legal
# INT), but the rewrite drops such a filter when the scanned partitions' segment zone maps
# prove every stored row satisfies it (planner/materialized_view.py `_holds_for_stored_rows`).
# Q1.2, Q1.3 and Q3.4 filter within a year: no view answers them, the base index does (by its
# leading lo_orderdate key). The city-level views (`mv_q3n`, `mv_q3c`, `mv_q4c`) hold a
# quarter to 60% of the base rows at SF 0.2, but each is keyed first by what its query fixes
# (`c_nation =`, `c_city IN`, `s_nation =`), so the query reads a few percent of them through
# the prefix index; the rewrite's cost check counts that (planner/materialized_view.py).
MATERIALIZED_VIEWS = {
    "mv_q1": "SELECT lo_orderdate DIV 10000, lo_discount, lo_quantity, "
             "SUM(lo_extendedprice * lo_discount) FROM lineorder_flat "
             "GROUP BY lo_orderdate DIV 10000, lo_discount, lo_quantity",
    "mv_q2": "SELECT s_region, p_category, p_brand, lo_orderdate DIV 10000, SUM(lo_revenue) "
             "FROM lineorder_flat GROUP BY s_region, p_category, p_brand, lo_orderdate DIV 10000",
    "mv_q3": "SELECT c_region, s_region, c_nation, s_nation, lo_orderdate DIV 10000, "
             "SUM(lo_revenue) FROM lineorder_flat "
             "GROUP BY c_region, s_region, c_nation, s_nation, lo_orderdate DIV 10000",
    "mv_q3n": "SELECT c_nation, s_nation, c_city, s_city, lo_orderdate DIV 10000, "
              "SUM(lo_revenue) FROM lineorder_flat "
              "GROUP BY c_nation, s_nation, c_city, s_city, lo_orderdate DIV 10000",
    "mv_q3c": "SELECT c_city, s_city, lo_orderdate DIV 10000, SUM(lo_revenue) "
              "FROM lineorder_flat GROUP BY c_city, s_city, lo_orderdate DIV 10000",
    "mv_q4": "SELECT c_region, s_region, p_mfgr, c_nation, lo_orderdate DIV 10000, "
             "SUM(lo_revenue - lo_supplycost) FROM lineorder_flat "
             "GROUP BY c_region, s_region, p_mfgr, c_nation, lo_orderdate DIV 10000",
    "mv_q4s": "SELECT c_region, s_region, p_mfgr, s_nation, p_category, lo_orderdate DIV 10000, "
              "SUM(lo_revenue - lo_supplycost) FROM lineorder_flat "
              "GROUP BY c_region, s_region, p_mfgr, s_nation, p_category, lo_orderdate DIV 10000",
    "mv_q4c": "SELECT s_nation, p_category, s_city, p_brand, lo_orderdate DIV 10000, "
              "SUM(lo_revenue - lo_supplycost) FROM lineorder_flat "
              "GROUP BY s_nation, p_category, s_city, p_brand, lo_orderdate DIV 10000",
}
MV_STATEMENTS = [f"CREATE MATERIALIZED VIEW {name} AS {select}"
                 for name, select in MATERIALIZED_VIEWS.items()]

FLAT_SQL = """SELECT lo_orderdate, lo_orderkey, lo_linenumber, lo_custkey, lo_partkey, lo_suppkey,
  lo_orderpriority, lo_shippriority, lo_quantity, lo_extendedprice, lo_ordtotalprice,
  lo_discount, lo_revenue, lo_supplycost, lo_tax, lo_commitdate, lo_shipmode,
  c_city, c_nation, c_region, s_city, s_nation, s_region, p_mfgr, p_category, p_brand
FROM lineorder JOIN customer ON lo_custkey = c_custkey JOIN supplier ON lo_suppkey = s_suppkey
  JOIN part ON lo_partkey = p_partkey"""

# Doris' ssb-flat kit queries (lower-case names); `DIV` is spelled `//` for DuckDB.
QUERIES: dict[str, str] = {
    "1.1": """SELECT SUM(lo_extendedprice * lo_discount) AS revenue FROM lineorder_flat
WHERE lo_orderdate >= 19930101 AND lo_orderdate <= 19931231
  AND lo_discount BETWEEN 1 AND 3 AND lo_quantity < 25""",
    "1.2": """SELECT SUM(lo_extendedprice * lo_discount) AS revenue FROM lineorder_flat
WHERE lo_orderdate >= 19940101 AND lo_orderdate <= 19940131
  AND lo_discount BETWEEN 4 AND 6 AND lo_quantity BETWEEN 26 AND 35""",
    "1.3": """SELECT SUM(lo_extendedprice * lo_discount) AS revenue FROM lineorder_flat
WHERE lo_orderdate >= 19940204 AND lo_orderdate <= 19940210
  AND lo_discount BETWEEN 5 AND 7 AND lo_quantity BETWEEN 26 AND 35""",
    "2.1": """SELECT SUM(lo_revenue), (lo_orderdate DIV 10000) AS year, p_brand FROM lineorder_flat
WHERE p_category = 'MFGR#12' AND s_region = 'AMERICA'
GROUP BY year, p_brand ORDER BY year, p_brand""",
    "2.2": """SELECT SUM(lo_revenue), (lo_orderdate DIV 10000) AS year, p_brand FROM lineorder_flat
WHERE p_brand >= 'MFGR#2221' AND p_brand <= 'MFGR#2228' AND s_region = 'ASIA'
GROUP BY year, p_brand ORDER BY year, p_brand""",
    "2.3": """SELECT SUM(lo_revenue), (lo_orderdate DIV 10000) AS year, p_brand FROM lineorder_flat
WHERE p_brand = 'MFGR#2239' AND s_region = 'EUROPE'
GROUP BY year, p_brand ORDER BY year, p_brand""",
    "3.1": """SELECT c_nation, s_nation, (lo_orderdate DIV 10000) AS year, SUM(lo_revenue) AS revenue
FROM lineorder_flat
WHERE c_region = 'ASIA' AND s_region = 'ASIA' AND lo_orderdate >= 19920101
  AND lo_orderdate <= 19971231
GROUP BY c_nation, s_nation, year ORDER BY year ASC, revenue DESC""",
    "3.2": """SELECT c_city, s_city, (lo_orderdate DIV 10000) AS year, SUM(lo_revenue) AS revenue
FROM lineorder_flat
WHERE c_nation = 'UNITED STATES' AND s_nation = 'UNITED STATES' AND lo_orderdate >= 19920101
  AND lo_orderdate <= 19971231
GROUP BY c_city, s_city, year ORDER BY year ASC, revenue DESC""",
    "3.3": """SELECT c_city, s_city, (lo_orderdate DIV 10000) AS year, SUM(lo_revenue) AS revenue
FROM lineorder_flat
WHERE c_city IN ('UNITED KI1', 'UNITED KI5') AND s_city IN ('UNITED KI1', 'UNITED KI5')
  AND lo_orderdate >= 19920101 AND lo_orderdate <= 19971231
GROUP BY c_city, s_city, year ORDER BY year ASC, revenue DESC""",
    "3.4": """SELECT c_city, s_city, (lo_orderdate DIV 10000) AS year, SUM(lo_revenue) AS revenue
FROM lineorder_flat
WHERE c_city IN ('UNITED KI1', 'UNITED KI5') AND s_city IN ('UNITED KI1', 'UNITED KI5')
  AND lo_orderdate >= 19971201 AND lo_orderdate <= 19971231
GROUP BY c_city, s_city, year ORDER BY year ASC, revenue DESC""",
    "4.1": """SELECT (lo_orderdate DIV 10000) AS year, c_nation, SUM(lo_revenue - lo_supplycost) AS profit
FROM lineorder_flat
WHERE c_region = 'AMERICA' AND s_region = 'AMERICA' AND p_mfgr IN ('MFGR#1', 'MFGR#2')
GROUP BY year, c_nation ORDER BY year ASC, c_nation ASC""",
    "4.2": """SELECT (lo_orderdate DIV 10000) AS year, s_nation, p_category,
  SUM(lo_revenue - lo_supplycost) AS profit
FROM lineorder_flat
WHERE c_region = 'AMERICA' AND s_region = 'AMERICA' AND lo_orderdate >= 19970101
  AND lo_orderdate <= 19981231 AND p_mfgr IN ('MFGR#1', 'MFGR#2')
GROUP BY year, s_nation, p_category ORDER BY year ASC, s_nation ASC, p_category ASC""",
    "4.3": """SELECT (lo_orderdate DIV 10000) AS year, s_city, p_brand,
  SUM(lo_revenue - lo_supplycost) AS profit
FROM lineorder_flat
WHERE s_nation = 'UNITED STATES' AND lo_orderdate >= 19970101 AND lo_orderdate <= 19981231
  AND p_category = 'MFGR#14'
GROUP BY year, s_city, p_brand ORDER BY year ASC, s_city ASC, p_brand ASC""",
}
