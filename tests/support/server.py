"""Start, stop and kill a real ShaleDB server process for tests.

Owns the test side of the server contract: `python -m server serve --data-dir DIR --port 0
--http-port 0 --backends N` prints exactly one line `ShaleDB ready: mysql_port=<P> http_port=<H>`
on stdout once it listens, and stops cleanly on SIGTERM. Nothing here polls with sleeps: start()
waits on the ready line (or the end of stdout when the process dies), stop()/kill() wait on the
process itself.
"""

from __future__ import annotations

import collections
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pymysql

REPO_ROOT = Path(__file__).resolve().parents[2]
# (with --arrow-flight-sql-port, the line ends in ` arrow_flight_sql_port=<F>`)
READY_RE = re.compile(
    r"^ShaleDB ready: mysql_port=(\d+) http_port=(\d+)(?: arrow_flight_sql_port=(\d+))?\s*$")
START_TIMEOUT_S = 120.0  # the first start may compile numba kernels
STOP_TIMEOUT_S = 60.0
_TAIL_LINES = 200


class ServerStartError(RuntimeError):
    """The server exited or stayed silent before printing its ready line."""


class ServerProcess:
    """One `python -m server serve` subprocess on a data directory.

    Usage::

        with ServerProcess(tmp_path / "data") as srv:
            conn = srv.connect("db1")
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        backends: int = 3,
        extra_args: tuple[str, ...] | list[str] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.env = dict(env or {})
        self._log_cond = threading.Condition()
        self.backends = backends
        self.extra_args = tuple(extra_args)
        self.proc: subprocess.Popen[str] | None = None
        self.port: int | None = None
        self.http_port: int | None = None
        self.flight_port: int | None = None  # Arrow Flight SQL, when started with its flag
        self._stdout_tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        self._ready = threading.Event()
        self._threads: list[threading.Thread] = []

    # ---- lifecycle ------------------------------------------------------------------------
    @property
    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "server",
            "serve",
            "--data-dir",
            str(self.data_dir),
            "--port",
            "0",
            "--http-port",
            "0",
            "--backends",
            str(self.backends),
            *self.extra_args,
        ]

    def start(self, timeout: float = START_TIMEOUT_S) -> ServerProcess:
        if self.proc is not None and self.proc.poll() is None:
            raise RuntimeError("server already running")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = self.http_port = None
        self._ready = threading.Event()
        self._stdout_tail.clear()
        self._stderr_tail.clear()
        env = dict(os.environ)
        env.update(self.env)
        env["PYTHONUNBUFFERED"] = "1"
        # We hold the write end of the server's stdin and never write to it: if this process
        # dies (a killed pytest, a crashed bench), the pipe closes and the server stops itself
        # instead of living on with its ports and data dir (server/app.py).
        env["SHALEDB_STOP_ON_STDIN_EOF"] = "1"
        self.proc = subprocess.Popen(
            self.command,
            cwd=str(REPO_ROOT),
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
        )
        out = threading.Thread(
            target=self._read_stdout, args=(self.proc,), daemon=True, name="shaledb-stdout"
        )
        err = threading.Thread(
            target=self._read_stderr, args=(self.proc,), daemon=True, name="shaledb-stderr"
        )
        self._threads = [out, err]
        out.start()
        err.start()
        # The stdout reader sets the event on the ready line, or at EOF (the process died).
        if not self._ready.wait(timeout):
            self._terminate_hard()
            raise ServerStartError(
                f"server printed no ready line within {timeout:.0f}s\n{self._describe()}"
            )
        if self.port is None:
            code = self.proc.wait(timeout=STOP_TIMEOUT_S)
            self._join_readers()
            raise ServerStartError(
                f"server exited with code {code} before it was ready\n{self._describe()}"
            )
        return self

    def _read_stdout(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:  # keeps draining after ready so the server never blocks on a pipe
            self._stdout_tail.append(line.rstrip("\n"))
            if self.port is None:
                m = READY_RE.match(line.strip())
                if m:
                    self.port, self.http_port = int(m.group(1)), int(m.group(2))
                    self.flight_port = int(m.group(3)) if m.group(3) else None
                    self._ready.set()
        self._ready.set()  # EOF: wake start() so it can report the death

    def _read_stderr(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            with self._log_cond:
                self._stderr_tail.append(line.rstrip("\n"))
                self._log_cond.notify_all()
        with self._log_cond:
            self._log_cond.notify_all()

    def wait_for_stderr(self, pattern: str, timeout: float = 60.0) -> str:
        """Block until a stderr line matches `pattern` (regex); returns it. Raises on timeout or exit."""
        regex = re.compile(pattern)

        def found() -> str | None:
            return next((ln for ln in list(self._stderr_tail) if regex.search(ln)), None)

        with self._log_cond:
            self._log_cond.wait_for(lambda: found() is not None or not self.running, timeout=timeout)
            hit = found()
        if hit is None:
            raise ServerStartError(
                f"no stderr line matching {pattern!r} within {timeout:.0f}s\n{self._describe()}"
            )
        return hit

    def _join_readers(self) -> None:
        for t in self._threads:
            t.join(timeout=10)
        if self.proc is not None and self.proc.stdin is not None and self.proc.poll() is not None:
            self.proc.stdin.close()  # the process is gone; nothing reads the pipe any more

    def _terminate_hard(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=STOP_TIMEOUT_S)
        self._join_readers()

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int:
        """SIGTERM and wait; returns the exit code. Kills and raises if it does not stop."""
        if self.proc is None:
            raise RuntimeError("server was never started")
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._terminate_hard()
                raise RuntimeError(
                    f"server did not stop within {timeout:.0f}s of SIGTERM\n{self._describe()}"
                ) from None
        self._join_readers()
        return self.proc.returncode

    def kill(self) -> int:
        """SIGKILL (kill -9) and wait; returns the exit code (-9)."""
        if self.proc is None:
            raise RuntimeError("server was never started")
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=STOP_TIMEOUT_S)
        self._join_readers()
        return self.proc.returncode

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.running:
            try:
                self.stop()
            except RuntimeError:
                pass

    # ---- clients --------------------------------------------------------------------------
    def connect(self, db: str | None = None, **kw: Any) -> pymysql.connections.Connection:
        """A pymysql connection as root with an empty password; autocommit on by default."""
        if self.port is None:
            raise RuntimeError("server is not running")
        params: dict[str, Any] = {
            "host": "127.0.0.1",
            "port": self.port,
            "user": "root",
            "password": "",
            "autocommit": True,
            "connect_timeout": 30,
            "read_timeout": 300,
            "write_timeout": 300,
            "charset": "utf8mb4",
            # The server offers TLS and PyMySQL then uses it unasked, building a default
            # SSLContext (loading the system CA store, ~100 ms) per connection: tests that are
            # not about TLS (tests/clients/test_tls.py) connect in plain text.
            "ssl_disabled": True,
        }
        if db is not None:
            params["database"] = db
        params.update(kw)
        return pymysql.connect(**params)

    # ---- diagnostics ----------------------------------------------------------------------
    def take_stderr(self) -> list[str]:
        """The stderr lines kept since the last call (at most the tail's length), forgotten
        afterwards, so a test can check what one case logged."""
        with self._log_cond:
            lines = list(self._stderr_tail)
            self._stderr_tail.clear()
        return lines

    def output_tail(self) -> str:
        return self._describe()

    def _describe(self) -> str:
        cmd = " ".join(self.command)
        out = "\n".join(self._stdout_tail) or "(empty)"
        err = "\n".join(self._stderr_tail) or "(empty)"
        return f"command: {cmd}\n--- stdout (tail) ---\n{out}\n--- stderr (tail) ---\n{err}"
