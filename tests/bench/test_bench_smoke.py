"""Smoke test of the benchmark commands (bench/run.py): each command runs as a user runs it, at
a tiny scale (SF 0.01 or less, one timed run, a few queries, 2 s of concurrency) against one
real server (tests/bench/conftest.py, 1 s quiet-tablet compaction delay; the commands
`--attach` to it, as starting a server per command would double the test's time), and must
append its dated table (with the machine's load note and its machine-readable run line) to the
results file it was given. The numbers are
not checked (benchmarks measure, tests do not time); that the commands work and check rows is."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.server import ServerProcess

REPO = Path(__file__).resolve().parents[2]


def bench(results: Path, attach: list[str], *args: str) -> str:
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "run.py"), *args,
                           "--results", str(results), *attach],
                          cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return results.read_text()


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bench") / "RESULTS.md"


def _common(text: str, suite: str) -> None:
    assert text.startswith("<!-- bench-regressions -->")
    assert f"## {suite} — " in text
    assert "Load average (1/5/15 min) at start" in text
    assert '<!-- bench-run: {"metrics"' in text and f'"suite": "{suite}"' in text


def test_ssb_stream_load_then_settled(results: Path, attach: list[str]) -> None:
    text = bench(results, attach, "ssb", "--sf", "0.01", "--runs", "1", "--queries", "1.1,2.1")
    _common(text, "ssb")
    assert "Stream Load over HTTP" in text
    assert "| Q1.1 |" in text and "| Q2.1 |" in text and "| Q3.1 |" not in text
    assert "| base | 64,448 |" in text  # every generated row arrived through Stream Load
    assert "geometric mean" in text


def test_ssb_insert_load(results: Path, attach: list[str]) -> None:
    text = bench(results, attach, "ssb", "--sf", "0.01", "--runs", "1", "--queries", "1.1",
                 "--load", "insert", "--insert-rows", "20000", "--no-settle")
    assert "multi-row INSERT over pymysql, 20,000 rows per statement" in text
    assert text.count("| base | 64,448 |") == 2


def test_ssb_flat_with_rollups(results: Path, attach: list[str]) -> None:
    text = bench(results, attach, "ssb-flat", "--sf", "0.002", "--runs", "1", "--queries", "3.2",
                 "--rollups")
    _common(text, "ssb-flat")
    assert "| rollups | 12,055 |" in text and "| base | 12,055 |" in text
    assert "rollups settled (ms)" in text


def test_tpch(results: Path, attach: list[str]) -> None:
    text = bench(results, attach, "tpch", "--sf", "0.01", "--runs", "1", "--queries", "1,6")
    _common(text, "tpch")
    assert "| Q1 |" in text and "| Q6 |" in text


def test_concurrency(results: Path, attach: list[str]) -> None:
    text = bench(results, attach, "concurrency", "--sf", "0.002", "--seconds", "2",
                 "--clients", "3")
    _common(text, "concurrency")
    assert "No query starved" in text
    assert "Throughput 3 clients / 1 client" in text


def test_profile(bench_server: ServerProcess, attach: list[str]) -> None:
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "run.py"), "profile", "--sf",
                           "0.002", "--seconds", "1", "--probes", "select1,q1.1", *attach,
                           "--server-pid", str(bench_server.proc.pid)],
                          cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "### SELECT 1:" in out and "### SSB Q1.1 SF 0.002:" in out
    assert out.count("self time by package:") == 2
    assert "(server/" in out  # the server's own frames were sampled


def test_fixed_cost_and_no_database_left_behind(bench_server: ServerProcess, results: Path,
                                               attach: list[str]) -> None:
    text = bench(results, attach, "fixed-cost", "--iterations", "30", "--rows", "2000")
    _common(text, "fixed-cost")
    assert "| SELECT 1 |" in text and "quoted in issue 17, not measured here" in text
    # one row per probe, each with a p50 and a p99 (text protocol and COM_STMT_EXECUTE)
    for probe in ("point query", "point query, prepared"):
        row = rf"^\| {re.escape(probe)} \| \w+ \| [\d,]+ \| [\d,]+ \|"
        assert re.search(row, text, re.MULTILINE), probe

    with bench_server.connect() as c, c.cursor() as cur:
        cur.execute("SHOW DATABASES")  # every command above dropped the databases it created
        assert not [r[0] for r in cur.fetchall() if str(r[0]).startswith("bench_")]
