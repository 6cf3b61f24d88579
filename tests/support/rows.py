"""Rows compared as multisets across ShaleDB (over the wire) and DuckDB: floats and decimals
rounded to 4 places, dates as ISO text, booleans as 0/1 (Doris sends BOOLEAN as 1 / 0)."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterable, Sequence


def normalize_rows(rows: Iterable[Sequence[object]]) -> list[tuple[object, ...]]:
    out = []
    for r in rows:
        vals: list[object] = []
        for x in r:
            if isinstance(x, bool):
                x = int(x)
            elif isinstance(x, (float, decimal.Decimal)):
                x = round(float(x), 4)
            elif isinstance(x, (dt.date, dt.datetime)):
                x = x.isoformat()
            vals.append(x)
        out.append(tuple(vals))
    return sorted(out, key=repr)
