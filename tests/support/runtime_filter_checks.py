"""What the runtime-filter wire tests compare: rows in a NULL-safe order, and the fact table's
scan in the newest query profile (rows it returned, the runtime filter types it applied)."""

from __future__ import annotations

from typing import Any


def sorted_rows(rows: Any) -> list[tuple]:
    """`rows` as tuples in one order, NULL (None) after every value of its column."""
    return sorted((tuple(r) for r in rows), key=lambda r: [(v is None, v) for v in r])


def fact_scan(cur: Any) -> tuple[int, str]:
    """Rows the fact table's scan returned in the newest query profile, and the runtime filter
    types it applied."""
    cur.execute('SHOW QUERY PROFILE "/"')
    latest = cur.fetchone()[0]
    cur.execute(f'SHOW QUERY PROFILE "/{latest}"')
    scans = [dict(part.split(": ", 1) for part in v.split(", ") if ": " in part)
             for k, v in cur.fetchall() if k.endswith(":VOlapScanNode")]
    fact = max(scans, key=lambda c: int(c["RowsTotal"]) if "RowsTotal" in c else 0)
    return int(fact["RowsReturned"]), fact.get("RuntimeFilters", "")
