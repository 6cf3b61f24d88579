"""bench/RESULTS.md: each benchmark run appends a dated section (its table, its settings, the
machine's load) ending in a machine-readable line

    <!-- bench-run: {"suite": ..., "settings": {...}, "metrics": {name: [value, better]}} -->

(`better` is "lower" or "higher")

and the block between the `bench-regressions` markers at the top of the file is rewritten from
those lines: for every suite and settings, the latest run against the previous one, any metric
more than 10% worse is listed there.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

THRESHOLD = 0.10
_RUN_RE = re.compile(r"^<!-- bench-run: (\{.*\}) -->$", re.MULTILINE)
_BLOCK_RE = re.compile(r"<!-- bench-regressions -->.*?<!-- /bench-regressions -->\n?", re.DOTALL)


@dataclass
class Run:
    suite: str
    settings: dict
    metrics: dict[str, tuple[float, str]]  # name -> (value, "lower" | "higher" is better)
    stamp: str

    def key(self) -> str:
        return self.suite + " " + json.dumps(self.settings, sort_keys=True)

    def to_line(self) -> str:
        return "<!-- bench-run: " + json.dumps(
            {"suite": self.suite, "settings": self.settings, "stamp": self.stamp,
             "metrics": {k: [round(v, 4), d] for k, (v, d) in self.metrics.items()}},
            sort_keys=True) + " -->"


def parse_runs(text: str) -> list[Run]:
    runs = []
    for m in _RUN_RE.finditer(text):
        d = json.loads(m.group(1))
        runs.append(Run(d["suite"], d["settings"],
                        {k: (float(v), di) for k, (v, di) in d["metrics"].items()}, d["stamp"]))
    return runs


def regressions(previous: Run, latest: Run) -> list[str]:
    out = []
    for name, (value, better) in latest.metrics.items():
        if name not in previous.metrics:
            continue
        old = previous.metrics[name][0]
        if old <= 0:
            continue
        change = (value - old) / old if better == "lower" else (old - value) / old
        if change > THRESHOLD:
            out.append(f"{name}: {old:g} -> {value:g} ({change * 100:+.0f}% worse)")
    return out


def regression_block(runs: list[Run]) -> str:
    by_key: dict[str, list[Run]] = {}
    for r in runs:
        by_key.setdefault(r.key(), []).append(r)
    lines = ["<!-- bench-regressions -->",
             "## Regressions (> 10% worse than the previous run of the same suite and settings)",
             "",
             ("Written by `bench/run.py` from the `bench-run` lines that end its dated sections "
             "(`## <suite> — <date>`, appended at the end of this file)."),
             ""]
    found = False
    for key, rs in by_key.items():
        if len(rs) < 2:
            continue
        regs = regressions(rs[-2], rs[-1])
        if regs:
            found = True
            lines.append(f"- **{key}** ({rs[-1].stamp} vs {rs[-2].stamp}): " + "; ".join(regs))
    if not found:
        lines.append("None: every suite's latest run is within 10% of its previous run "
                     "(or has no previous run with the same settings).")
    lines += ["", "<!-- /bench-regressions -->", ""]
    return "\n".join(lines)


def append(path: Path, section: str, run: Run) -> list[str]:
    """Append `section` and its run line to `path`, rewrite the regression block at the top;
    returns this run's regressions against the previous comparable run."""
    text = path.read_text() if path.exists() else ""
    previous = [r for r in parse_runs(text) if r.key() == run.key()]
    text = _BLOCK_RE.sub("", text, count=1).rstrip("\n")
    text += "\n\n" + section.rstrip("\n") + "\n\n" + run.to_line() + "\n"
    text = regression_block(parse_runs(text)) + "\n" + text.lstrip("\n")
    path.write_text(text)
    return regressions(previous[-1], run) if previous else []
