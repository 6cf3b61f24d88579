"""A test run that dies (pytest killed, a bench crashed) takes its servers with it: the harness
holds the server's stdin pipe, and the server stops cleanly when that pipe closes, releasing its
ports and data dir instead of living on as an orphan (server/app.py, tests/support/server.py)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from support.server import REPO_ROOT, ServerProcess

HARNESS = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {tests!r})
    from support.server import ServerProcess
    srv = ServerProcess({data!r}, backends=1).start()
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE DATABASE orphan")
        cur.execute("CREATE TABLE orphan.t (k INT) DUPLICATE KEY(k) "
                    "DISTRIBUTED BY HASH(k) BUCKETS 1 PROPERTIES ('replication_num' = '1')")
        cur.execute("INSERT INTO orphan.t VALUES (1), (2), (3)")
    print(srv.proc.pid, flush=True)
    time.sleep(3600)
""")


def test_server_stops_when_the_process_that_started_it_is_killed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    script = HARNESS.format(tests=str(REPO_ROOT / "tests"), data=str(data))
    harness = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert harness.stdout is not None
        server_pid = int(harness.stdout.readline())
        server = os.pidfd_open(server_pid)  # readable once that process has exited
        try:
            assert not select.select([server], [], [], 0)[0], "the server died early"
            harness.send_signal(signal.SIGKILL)
            harness.wait(timeout=60)
            # The orphaned server sees EOF on stdin and shuts down by itself.
            exited = select.select([server], [], [], 60)[0]
        finally:
            os.close(server)
    finally:
        if harness.poll() is None:
            harness.kill()
    assert exited, "the server outlived the process that started it by 60 s"
    # It stopped cleanly: the data dir is free again and kept its committed rows.
    with ServerProcess(data, backends=1) as srv, srv.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*), sum(k) FROM orphan.t")
        assert cur.fetchone() == (3, 6)
