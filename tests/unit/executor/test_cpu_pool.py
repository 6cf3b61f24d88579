"""executor/cpu_pool.py: at most `slots` tasks run at once, tasks that wait on each other give
their slot back (a chain of waits longer than the slots finishes), freed slots go to the
oldest waiter, and pooled threads are reused."""

from __future__ import annotations

import threading

from executor.cpu_pool import CpuPool


def test_running_tasks_never_exceed_the_slots() -> None:
    pool = CpuPool(2)
    running, most = [0], [0]
    lock = threading.Lock()

    def task() -> None:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        sum(range(20_000))  # holds the slot while it computes
        with lock:
            running[0] -= 1

    for j in [pool.spawn(task, f"t{i}") for i in range(12)]:
        j.join()
    assert most[0] <= 2 and pool.peak <= 2


def test_tasks_waiting_on_each_other_do_not_deadlock_one_slot() -> None:
    """Task i waits (as an exchange receiver does) for task i+1's output: 8 tasks, 1 slot."""
    pool = CpuPool(1)
    ready = [threading.Event() for _ in range(9)]
    ready[8].set()
    order: list[int] = []

    def task(i: int) -> None:
        with pool.blocked():
            assert ready[i + 1].wait(30)
        order.append(i)
        ready[i].set()

    joins = [pool.spawn(lambda i=i: task(i), f"t{i}") for i in range(8)]
    for j in joins:
        j.join()
    assert order == list(range(7, -1, -1))
    assert pool.peak == 1


def test_a_freed_slot_goes_to_the_oldest_waiter() -> None:
    pool = CpuPool(1)
    got: list[str] = []
    holder_in, release_holder = threading.Event(), threading.Event()

    def holder() -> None:
        holder_in.set()
        assert release_holder.wait(30)

    first = pool.spawn(holder, "holder")
    assert holder_in.wait(30)
    waiters = []
    for name in ("a", "b", "c"):
        queued = len(pool._waiters)
        waiters.append(pool.spawn(lambda name=name: got.append(name), name))
        while len(pool._waiters) == queued:  # until it is queued behind the holder
            threading.Event().wait(0.001)
    release_holder.set()
    for j in [first, *waiters]:
        j.join()
    assert got == ["a", "b", "c"]


def test_threads_are_reused() -> None:
    pool = CpuPool(2)
    names: set[int] = set()
    for _ in range(5):
        pool.spawn(lambda: names.add(threading.get_ident()), "t").join()
    assert len(pool._idle) == 1 and len(names) == 1
