"""The operators the 22 TPC-H queries run are the nodes their EXPLAIN prints
(test_plan_operators.check_operators), at SF 0.01 on two backends with every fragment spread
over instances, with the planner's join modes and with every join forced to a shuffle."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlglot
from engine_fakes import session
from test_plan_operators import check_operators

from executor import query
from executor.query import execute
from planner.query import plan_select
from storage.engine import StorageEngine

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tpch"))
import tpch_common as C
from tpch_queries import QUERIES


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StorageEngine]:
    data = C.generate(tmp_path_factory.mktemp("tpch-parquet"), 0.01)
    eng = StorageEngine(tmp_path_factory.mktemp("tpch-shaledb"), backends=2)
    C.load_shaledb(eng, "tpch", data)
    yield eng
    eng.close()


@pytest.mark.parametrize("variables", [{}, {"broadcast_row_count_limit": 0}],
                         ids=["planned", "shuffle"])
def test_tpch_queries_run_the_printed_nodes(engine: StorageEngine, variables: dict[str, object],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(query, "scan_parallelism", lambda ctx: 4)
    checked = 0
    for q in sorted(QUERIES):
        sql = QUERIES[q]
        ctx = session("tpch", {"shaledb_small_fragment_rows": 0, **variables})
        prepared = plan_select(sqlglot.parse_one(sql, read="doris"), engine.catalog, ctx,
                               sql=sql)
        result = execute(prepared, engine, ctx)
        for _ in result.batches:
            pass
        assert result.coordinator is not None
        checked += check_operators(prepared.dplan, result.coordinator)
    assert checked > 500
