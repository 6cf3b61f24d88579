"""Fixtures of the Spark data source tests: one local[2] SparkSession for the whole test
session (starting one costs seconds), with `shaledb_spark` registered, its Python workers
importing this checkout's shaledb_spark, task retries allowed (local[2,2]: a task may fail
once and be retried), and UTC as Spark's session time zone."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from pyspark.sql import SparkSession

    import shaledb_spark

    # Python workers: this interpreter (the venv's), importing this checkout
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = f"{REPO_ROOT}{os.pathsep}{path}" if path else str(REPO_ROOT)
    session = (
        SparkSession.builder.master("local[2,2]")
        .appName("shaledb-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
        .config("spark.executor.extraJavaOptions", "-Duser.timezone=UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
        .getOrCreate()
    )
    shaledb_spark.register(session)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def spark_options(server, db) -> dict[str, str]:
    """Options naming `db` on the test server (add `table`)."""
    return {"fenodes": f"127.0.0.1:{server.http_port}", "user": "root", "password": ""}
