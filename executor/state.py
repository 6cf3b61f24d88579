"""The states fragment instances of one query share, created by the coordinator and handed to
the operators' constructors (executor/build.py), keyed by the plan node they belong to.

- `JoinBuildState`: a broadcast join's build side, built once per fragment and probed by every
  instance (the planner marks such joins `shared_build`; JoinTable probes only read it).
  Instance 0 builds and publishes a `JoinBuild`, the others wait for it.
- `RuntimeFilterState`: a runtime filter whose target scan runs in another fragment than its
  join (across an exchange): every instance of the join's fragment publishes its build keys,
  the target scans wait for the union.
- `InstanceStates`: what one instance is given: the shared builds and filters by physical node
  id (planner/physical.py).
Upstream: Doris' shared hash table for broadcast joins
(`enable_share_hash_table_for_broadcast_join`), global runtime filter merge.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from executor.cpu_pool import POOL
from executor.join_table import JoinTable
from executor.runtime_filter import USELESS_FRACTION, build_predicates
from sql.errors import QueryCancelled
from storage.batch import Batch, Column
from storage.predicates import ColumnPredicate


@dataclass(frozen=True, slots=True)
class JoinBuild:
    """What a hash join's build phase produces; read-only once built."""

    batch: Batch  # every build row
    keys: list[Column]  # its equi-key columns
    table: JoinTable | None  # keys -> rows (None: no equi keys)
    # mark joins without a residual: the table over keys + the mark value, and over the rows
    # whose mark value is NULL
    full_table: JoinTable | None = None
    null_table: JoinTable | None = None
    any_null: bool = False


def _wait_ready(ready: threading.Event, halt: threading.Event) -> None:
    """Wait for another instance to publish, without holding a CPU slot
    (executor/cpu_pool.py); the timeout only bounds how late a halt is noticed."""
    if ready.is_set():
        return
    with POOL.blocked():
        while not ready.wait(0.05):
            if halt.is_set():
                raise QueryCancelled()


class JoinBuildState:
    """One broadcast join's build, shared by the instances of its fragment."""

    def __init__(self) -> None:
        self._ready = threading.Event()
        self._build: JoinBuild | None = None

    def publish(self, build: JoinBuild) -> None:
        self._build = build
        self._ready.set()

    def wait(self, halt: threading.Event) -> JoinBuild:
        _wait_ready(self._ready, halt)
        assert self._build is not None
        return self._build


class RuntimeFilterState:
    """A runtime filter whose target scan runs in another fragment (across an exchange).

    Every instance of the join's fragment publishes its build keys; when all have (or the
    first, when each holds the whole build side: broadcast), the union becomes the filter.
    The target scans wait for it before reading: they feed the join's probe side, which the
    join only pulls once its build is complete, so waiting costs no time on the query's
    critical path and saves reading and shipping rows the join would drop. Each instance's
    `keep` is its share of the build input's base rows, so the union's is their sum.
    Upstream: Doris global runtime filters (merge of every instance's filter, then publish
    to the remote target scans).
    """

    def __init__(self, column: str, key_index: int, publishers: int, whole: bool) -> None:
        self.column = column
        self.key_index = key_index
        self.publishers = publishers
        self.whole = whole  # each publisher holds every build row (broadcast)
        self._keys: list[Column] = []
        self._keep = 0.0
        self._published = 0
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self.predicates: list[ColumnPredicate] = []
        self.keep = 1.0

    def publish(self, keys: Column, keep: float) -> None:
        with self._lock:
            if self._ready.is_set():
                return
            self._published += 1
            self._keys.append(keys)
            self._keep += keep
            if not (self.whole or self._published >= self.publishers):
                return
            keep_all = min(1.0, self._keep)
            if keep_all < USELESS_FRACTION:
                union = Column.concat(self._keys) if len(self._keys) > 1 else self._keys[0]
                self.predicates = build_predicates(self.column, union)
                self.keep = keep_all
            self._keys = []
            self._ready.set()

    def wait(self, halt: threading.Event) -> list[ColumnPredicate]:
        """The filter's predicates once every publisher built (empty: no useful filter)."""
        _wait_ready(self._ready, halt)
        return self.predicates


@dataclass
class InstanceStates:
    """The shared states one fragment instance's operators get, by physical node id."""

    # broadcast joins whose build is shared, and whether this instance builds it
    join_builds: dict[int, JoinBuildState] = field(default_factory=dict)
    build_owner: bool = True
    # runtime filters crossing an exchange: published by joins, awaited by scans
    join_filters: dict[int, list[RuntimeFilterState]] = field(default_factory=dict)
    scan_filters: dict[int, list[RuntimeFilterState]] = field(default_factory=dict)
