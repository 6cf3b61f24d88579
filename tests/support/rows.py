"""Rows compared as multisets across ShaleDB (over the wire) and DuckDB: floats and decimals
rounded to 4 places, dates as ISO text, booleans as 0/1 (Doris sends BOOLEAN as 1 / 0)."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterable, Sequence


def normalize_value(x: object) -> object:
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, (float, decimal.Decimal)):
        return round(float(x), 4)
    if isinstance(x, (dt.date, dt.datetime)):
        return x.isoformat()
    return x


def normalize_rows(rows: Iterable[Sequence[object]]) -> list[tuple[object, ...]]:
    return sorted((tuple(normalize_value(x) for x in r) for r in rows), key=repr)
