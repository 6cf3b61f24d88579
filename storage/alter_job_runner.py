"""AlterJobRunner: the thread, cancel and state handling every asynchronous ALTER job shares.

An ALTER job (ADD ROLLUP in storage/rollup_job.py, the index-building schema change in
storage/index_job.py) lives in the catalog as an `AlterJobMeta` and runs on its own daemon
thread: PENDING -> WAITING_TXN (until every load of the table that began before the job, txn id
below its watershed `transaction_id`, has published or failed) -> RUNNING (the subclass' `_work`)
-> FINISHED, or CANCELLED with a message on CANCEL ALTER, timeout or any failure
(`_finish_cancel`, the subclass' undo). Every state change is one catalog transaction, so a
restart resumes unfinished jobs (`resume`) from the state they reached. A resumed RUNNING job
waits for loads again: a two-phase load PRECOMMITTED before the job survives a restart, and its
rows must reach the job's output once it commits. `stop` (engine close) ends the threads
without touching the jobs' states, so the next start resumes them.
Upstream: Doris `AlterJobV2` (runPendingJob / runWaitingTxnJob / runRunningJob, cancelImpl).
"""

from __future__ import annotations

import abc
import gc
import threading
import time
from dataclasses import replace

from storage.catalog.meta import AlterJobMeta
from storage.catalog.repository import Mutation
from storage.engine import StorageEngine

FINAL_STATES = ("FINISHED", "CANCELLED")


class JobCancelled(Exception):
    pass


class _Stopped(Exception):
    """The engine is closing: the job's thread ends, the job keeps its state."""


class AlterJobRunner(abc.ABC):
    """Runs the engine's jobs of one `JOB_TYPE`. Subclasses implement `_work` (RUNNING) and
    `_finish_cancel` (undo what the job changed, then mark it CANCELLED)."""

    JOB_TYPE = ""

    def __init__(self, engine: StorageEngine) -> None:
        self.engine = engine
        self._threads: dict[int, threading.Thread] = {}
        self._cancel: dict[int, str] = {}
        self._lock = threading.Lock()
        self._stopping = False

    # ---- control ----------------------------------------------------------------------------
    def start(self, job_id: int) -> None:
        with self._lock:
            if self._stopping:
                return  # the engine is closing; the next start resumes the job
            t = self._threads.get(job_id)
            if t is not None and t.is_alive():
                return
            t = threading.Thread(target=self._run, args=(job_id,),
                                 name=f"{self.JOB_TYPE.lower()}-job-{job_id}", daemon=True)
            self._threads[job_id] = t
        t.start()

    def resume(self) -> None:
        """Run again every job of this type a previous process left unfinished."""
        for job in self.engine.catalog.alter_jobs():
            if job.job_type == self.JOB_TYPE and job.state not in FINAL_STATES:
                self.start(job.job_id)

    def cancel(self, job_id: int, msg: str = "user cancelled") -> None:
        """Stop a job; CANCEL is synchronous, as in Doris: the job is CANCELLED on return. A
        thread still in a step after the wait sees the CANCELLED state at its next one."""
        with self._lock:
            self._cancel[job_id] = msg
            t = self._threads.get(job_id)
        if t is not None and t is not threading.current_thread():
            t.join(5)
        self._finish_cancel(job_id, msg)

    def stop(self, timeout: float = 10) -> None:
        """Engine close: end every job thread at its next step (the job keeps its state in the
        catalog) and wait up to `timeout` seconds in all for them."""
        with self._lock:
            self._stopping = True
            threads = list(self._threads.values())
        deadline = time.monotonic() + timeout
        for t in threads:
            if t is not threading.current_thread():
                t.join(max(0.0, deadline - time.monotonic()))

    def running_threads(self) -> int:
        """Job threads still alive (for tests and shutdown checks)."""
        with self._lock:
            return sum(1 for t in self._threads.values() if t.is_alive())

    def wait(self, job_id: int, timeout: float | None = None) -> None:
        t = self._threads.get(job_id)
        if t is not None:
            t.join(timeout)

    # ---- the job ----------------------------------------------------------------------------
    def _check(self, job: AlterJobMeta) -> None:
        """Raise JobCancelled on CANCEL or once the job's `timeout` (seconds) has passed;
        _Stopped when the engine is closing."""
        if self._stopping:
            raise _Stopped
        msg = self._cancel.get(job.job_id)
        if msg is not None:
            raise JobCancelled(msg)
        if job.timeout and time.time() - job.create_time > job.timeout:
            raise JobCancelled("Timeout")

    def _set(self, job: AlterJobMeta, **changes: object) -> AlterJobMeta:
        """Commit `changes` to the job; JobCancelled when it ended meanwhile."""
        cat = self.engine.catalog
        with cat.lock:
            current = cat.alter_job(job.job_id)
            if current is None or current.state in FINAL_STATES:
                raise JobCancelled(current.msg if current is not None else "job removed")
            job = replace(current, **changes)  # type: ignore[arg-type]
            m = Mutation()
            m.put(job)
            cat.commit(m)
        return job

    def _run(self, job_id: int) -> None:
        job = self.engine.catalog.alter_job(job_id)
        if job is None or job.state in FINAL_STATES or job.job_type != self.JOB_TYPE:
            return
        try:
            if job.state in ("PENDING", "WAITING_TXN"):
                job = self._set(job, state="WAITING_TXN")
                self._wait_txns(job)
                job = self._set(job, state="RUNNING")
            else:
                self._wait_txns(job)  # resumed RUNNING: precommitted loads survive a restart
            self._work(job)
        except _Stopped:
            return
        except JobCancelled as e:
            self._finish_cancel(job_id, str(e))
        except Exception as e:  # noqa: BLE001 - any failure cancels the job with its message
            if self._stopping:
                return  # the engine closed under the step (its catalog): resumed at restart
            detail = getattr(e, "detail", None) or getattr(e, "message", None) or str(e)
            self._finish_cancel(job_id, detail or type(e).__name__)

    def _wait_txns(self, job: AlterJobMeta) -> None:
        """WAITING_TXN: until every load of the table that began before the job (txn id below
        the watershed `job.transaction_id`, so it wrote without the job's change) has published
        or failed; its rowsets are then input the job converts."""
        running = self.engine.txns
        collected = time.monotonic()
        while True:
            self._check(job)
            with running.changed:
                if not running.before(job.table_id, job.transaction_id):
                    return
                # woken when a load finishes; the timeout re-checks CANCEL, the job timeout and
                # loads that were abandoned without finishing (freed, so dropped from the set)
                running.changed.wait(0.2)
            if time.monotonic() - collected > 5:
                # an abandoned load kept alive only by a reference cycle (an exception's
                # traceback) is freed by the cycle collector: run it rather than wait for it
                gc.collect()
                collected = time.monotonic()

    @abc.abstractmethod
    def _work(self, job: AlterJobMeta) -> None:
        """RUNNING: the job's conversion, ending with the job FINISHED."""

    @abc.abstractmethod
    def _finish_cancel(self, job_id: int, msg: str) -> None:
        """Undo what the job changed and mark it CANCELLED with `msg` (idempotent)."""
