"""One server for the benchmark tests (tests/bench), with a 1 s quiet-tablet compaction delay so
that `settle` returns within seconds; the bench commands `--attach` to it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.server import ServerProcess

QUIET_SECONDS = 1


@pytest.fixture(scope="package")
def bench_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    work = tmp_path_factory.mktemp("bench-server")
    conf = work / "shaledb.toml"
    conf.write_text(f"[compaction]\ncumulative_compaction_quiet_seconds = {QUIET_SECONDS}\n")
    with ServerProcess(work / "data", backends=3, extra_args=["--conf", str(conf)]) as srv:
        yield srv


@pytest.fixture(scope="package")
def attach(bench_server: ServerProcess) -> list[str]:
    """bench/run.py's arguments to use `bench_server`."""
    return ["--attach", f"{bench_server.port}:{bench_server.http_port}",
            "--quiet-seconds", str(QUIET_SECONDS)]
