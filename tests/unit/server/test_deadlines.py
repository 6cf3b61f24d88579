"""server/deadlines.py: the one timer thread behind query_timeout."""

from __future__ import annotations

import threading

from server.deadlines import Deadlines


def test_deadlines_fire_in_time_order_and_disarmed_ones_never() -> None:
    deadlines = Deadlines()
    fired: list[str] = []
    done = threading.Event()

    def record(name: str) -> None:
        fired.append(name)
        if name == "last":
            done.set()

    deadlines.arm(0.06, lambda: record("last"))
    deadlines.arm(0.03, lambda: record("second"))
    dropped = deadlines.arm(0.02, lambda: record("disarmed"))
    # armed after a later one: the timer thread, already waiting, must wake up for it
    deadlines.arm(0.01, lambda: record("first"))
    dropped.disarm()
    assert done.wait(5)
    assert fired == ["first", "second", "last"]
    assert deadlines.pending() == 0


def test_disarm_after_firing_is_a_no_op() -> None:
    deadlines = Deadlines()
    ran = threading.Event()
    d = deadlines.arm(0.0, ran.set)
    assert ran.wait(5)
    d.disarm()
    d.disarm()
    assert deadlines.pending() == 0


def test_a_failing_action_does_not_stop_later_deadlines() -> None:
    deadlines = Deadlines()
    ran = threading.Event()

    def fail() -> None:
        raise RuntimeError("boom")

    deadlines.arm(0.0, fail)
    deadlines.arm(0.01, ran.set)
    assert ran.wait(5)


def test_disarmed_long_deadlines_do_not_pile_up() -> None:
    """Many short queries under the default 900 s query_timeout: the heap stays small."""
    deadlines = Deadlines()
    keep = deadlines.arm(900, lambda: None)
    for _ in range(5000):
        deadlines.arm(900, lambda: None).disarm()
    assert deadlines.pending() == 1
    assert len(deadlines._heap) < 600
    keep.disarm()
    assert deadlines.pending() == 0
