"""The benchmark harness' own rules: a result mismatch against DuckDB fails the run (against a
real server), and RESULTS.md calls out a >10% regression against the previous run of the same
suite and settings (and only of the same settings)."""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pytest

REPO = Path(__file__).resolve().parents[2]
for _p in (REPO / "bench", REPO / "tests" / "tpch"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from harness import compare, report  # noqa: E402


def test_mismatch_fails_loudly(bench_server) -> None:
    conn = bench_server.connect()
    duck = duckdb.connect()
    with pytest.raises(compare.ResultMismatch, match="Q7: ShaleDB and DuckDB differ"):
        compare.run_query("7", conn.cursor(), duck, "SELECT 1", "SELECT 2", False, 1)
    same = compare.run_query("8", conn.cursor(), duck, "SELECT 1 + 1", "SELECT 2", False, 2)
    assert same.rows == 1 and same.shale_ms > 0 and same.duck_ms > 0


def _run(qps: float, q_ms: float, sf: float = 1.0) -> report.Run:
    return report.Run("ssb", {"sf": sf}, {"qps": (qps, "higher"), "Q1_ms": (q_ms, "lower")},
                      f"stamp {qps} {q_ms}")


def test_regression_called_out_at_the_top(tmp_path: Path) -> None:
    out = tmp_path / "RESULTS.md"
    out.write_text("# Older notes\n\nkept as they are\n")
    assert report.append(out, "## ssb run 1\n", _run(100, 10)) == []
    assert report.append(out, "## ssb at another SF\n", _run(10, 100, sf=0.1)) == []
    regs = report.append(out, "## ssb run 2\n", _run(85, 10.5))  # qps 15% worse, Q1 5% worse
    assert regs == ["qps: 100 -> 85 (+15% worse)"]
    text = out.read_text()
    top = text.split("<!-- /bench-regressions -->")[0]
    assert top.startswith("<!-- bench-regressions -->")
    assert "qps: 100 -> 85" in top and "Q1_ms" not in top and "0.1" not in top
    assert "kept as they are" in text and text.count("<!-- bench-regressions -->") == 1
    assert text.index("## ssb run 1") < text.index("## ssb run 2")
    # the next run within 10% of the previous one clears the call-out
    assert report.append(out, "## ssb run 3\n", _run(90, 10.4)) == []
    assert "None: every suite's latest run" in out.read_text().split("<!-- /bench-regressions")[0]
