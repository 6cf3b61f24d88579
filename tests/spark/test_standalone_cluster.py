"""examples/spark_pipeline.py, unchanged, on a standalone Spark cluster: a master and a worker
started from pyspark's own `spark-class` on this machine, the job submitted as
`python examples/spark_pipeline.py --master spark://..` (its executors run on the worker)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"


class Daemon:
    """A spark-class process whose log lines are watched for a ready pattern."""

    def __init__(self, args: list[str], ready: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([str(SPARK_CLASS), *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, env=env)
        self.lines: list[str] = []
        self.match: re.Match[str] | None = None
        self._found = threading.Event()
        pattern = re.compile(ready)

        def watch() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.lines.append(line)
                m = pattern.search(line)
                if m and self.match is None:
                    self.match = m
                    self._found.set()
            self._found.set()  # EOF: the process ended

        threading.Thread(target=watch, daemon=True).start()

    def wait_ready(self, timeout: float = 240) -> re.Match[str]:
        self._found.wait(timeout)
        if self.match is None:
            self.stop()
            raise RuntimeError("spark daemon not ready:\n" + "".join(self.lines[-40:]))
        return self.match

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def cluster(tmp_path) -> Iterator[tuple[str, dict[str, str]]]:
    env = dict(os.environ)
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               PYTHONPATH=str(REPO_ROOT), SPARK_LOG_DIR=str(tmp_path),
               SPARK_WORKER_DIR=str(tmp_path / "work"), SPARK_LOCAL_IP="127.0.0.1")
    master = Daemon(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                     "--port", "0", "--webui-port", "0"],
                    r"Starting Spark master at (spark://\S+)", env)
    try:
        url = master.wait_ready().group(1)
        worker = Daemon(["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                         "--cores", "2", "--memory", "1g", "--webui-port", "0"],
                        r"Successfully registered with master", env)
        try:
            worker.wait_ready()
            yield url, env
        finally:
            worker.stop()
    finally:
        master.stop()


def test_pipeline_on_standalone_cluster(cluster, server, make_db, tmp_path) -> None:
    url, env = cluster
    db = make_db("cluster")
    out = subprocess.run(
        [sys.executable, str(REPO_ROOT / "examples" / "spark_pipeline.py"), "--master", url,
         "--fenodes", f"127.0.0.1:{server.http_port}", "--db", db],
        check=False, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    printed = [x for x in out.stdout.splitlines() if " orders=" in x]
    assert [x.split()[0] for x in printed] == ["east", "north", "south", "west"]
    with server.connect(db) as conn, conn.cursor() as cur:
        cur.execute("SELECT region, sum(orders) FROM daily_sales GROUP BY region ORDER BY 1")
        rows = cur.fetchall()
    shown = {x.split()[0]: int(x.split("orders=")[1].split()[0]) for x in printed}
    assert shown == {r: int(n) for r, n in rows} and sum(shown.values()) > 0
