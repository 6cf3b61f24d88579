"""Seeds of the randomized property tests: the defaults, or one seed from
SHALEDB_PROPERTY_SEED to rerun a failure."""

from __future__ import annotations

import os


def property_seeds(defaults: tuple[int, ...]) -> tuple[int, ...]:
    env = os.environ.get("SHALEDB_PROPERTY_SEED")
    return (int(env),) if env else defaults
