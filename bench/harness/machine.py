"""The machine's state noted beside every benchmark table: cores, load averages at the start and
end of the run, and the date. The bench machine is shared (6 engineers and CI on 2 cores), so a
table without its load note cannot be compared with another."""

from __future__ import annotations

import datetime as dt
import os
import platform
from dataclasses import dataclass, field


def _loadavg() -> tuple[float, float, float]:
    return os.getloadavg()


@dataclass
class MachineLoad:
    """Load averages sampled at the start of a run (`start`) and when it is written (`end`)."""

    started: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    start: tuple[float, float, float] = field(default_factory=_loadavg)
    end: tuple[float, float, float] | None = None

    def finish(self) -> None:
        self.end = _loadavg()

    @property
    def cores(self) -> int:
        return os.cpu_count() or 1

    def note(self) -> str:
        end = self.end or _loadavg()
        fmt = "/".join(f"{x:.2f}" for x in self.start), "/".join(f"{x:.2f}" for x in end)
        busy = max(self.start[0], end[0]) > 0.5 * self.cores
        return (f"Machine: {platform.machine()}, {self.cores} cores, Python "
                f"{platform.python_version()}. Load average (1/5/15 min) at start {fmt[0]}, "
                f"at end {fmt[1]}"
                + (" — the machine is shared and was busy: timings are noisy, compare ratios "
                   "measured in the same run rather than absolute times." if busy else
                   " (the machine is shared: other jobs may still add noise)."))

    def stamp(self) -> str:
        return self.started.strftime("%Y-%m-%d %H:%M UTC")
