"""Latency statistics shared by the concurrency and fixed-cost probes."""

from __future__ import annotations

import statistics


def percentile(xs: list[float], p: float) -> float:
    """The p-th percentile (nearest rank) of xs; NaN when empty."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = max(0, min(len(s) - 1, round(p / 100 * len(s) + 0.5) - 1))
    return s[k]


def p50(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")
