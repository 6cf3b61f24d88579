"""planner/statistics.py: estimates are remembered per plan object (planning asked for the
estimate of every join input, each answer recursing over the whole subtree), and the
remembered value is the one computed from scratch."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_optimizer import plan

import planner.statistics as stats
from planner.logical import LogicalScan, walk


def test_estimates_are_computed_once_per_plan_object(monkeypatch: pytest.MonkeyPatch) -> None:
    p = plan("SELECT a FROM t WHERE a > 1 AND s = 'x' ORDER BY b LIMIT 5")
    calls: list[object] = []
    real = stats._estimate_rows
    monkeypatch.setattr(stats, "_estimate_rows", lambda n: calls.append(n) or real(n))
    stats._cache.clear()
    first = stats.estimate_rows(p)
    n_nodes = sum(1 for _ in walk(p))
    assert len(calls) == n_nodes  # each node once
    assert stats.estimate_rows(p) == first
    assert len(calls) == n_nodes  # nothing recomputed
    stats._cache.clear()
    assert real(p) == first  # the remembered value is the computed one


def test_an_equal_but_new_plan_object_is_estimated_afresh() -> None:
    p = plan("SELECT a FROM t WHERE a > 1")
    scan = next(n for n in walk(p) if isinstance(n, LogicalScan))
    before = stats.estimate_rows(scan)
    bigger = replace(scan, row_count=scan.row_count * 10 + 100)
    assert stats.estimate_rows(bigger) > before
    assert stats.estimate_rows(scan) == before
