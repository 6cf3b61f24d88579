"""How rows are spread over the instances of a fragment, and how a join is distributed: the
typed vocabulary the planner decides in and the executor reads (no partition or join mode is
ever compared as text).

`DataPartition` is Doris' `DataPartition(TPartitionType, exprs)`: a fragment's own
partitioning (`PARTITION:` in EXPLAIN) and an exchange sink's output partitioning (the line
under `EXCHANGE ID` in EXPLAIN) are both one of these. Its kinds:
- UNPARTITIONED: one stream. As a fragment partition: one instance. As a sink's output: every
  receiving instance gets every row (one receiver: a gather; several: a broadcast);
- RANDOM: rows of a table that is not hash-distributed, spread by tablet;
- HASH: rows placed by a hash of `exprs`; with `bucketing` set the hash is the table's own
  bucket distribution (the fragment reads whole buckets, so colocate and bucket-shuffle joins
  and one-phase aggregates find every row of a bucket in one place); without it, the same
  shuffle hash both sides of a partitioned join use;
- BUCKET_SHUFFLE: a sink's output only: rows go by Doris' bucket function of `exprs` (cast
  to `bucketing.column_types`) to the instance holding that bucket seq of the receiving
  fragment's table.
`labels` are the expressions as EXPLAIN prints them (the planner renders them once, with its
display names); they never take part in routing.
Upstream: Doris `DataPartition`, `TPartitionType`, `DistributedPlanner` join modes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from sql.binder.expressions import Expr
from storage.types import DataType


class PartitionKind(Enum):
    UNPARTITIONED = "UNPARTITIONED"
    RANDOM = "RANDOM"
    HASH = "HASH_PARTITIONED"
    # (sic) Doris 2.1 prints BUCKET_SHFFULE
    BUCKET_SHUFFLE = "BUCKET_SHFFULE_HASH_PARTITIONED"


class JoinMode(Enum):
    """Distribution of a join, in Doris' order of preference (cheapest first)."""

    COLOCATE = "COLOCATE"
    BUCKET_SHUFFLE = "BUCKET_SHUFFLE"
    BROADCAST = "BROADCAST"
    PARTITIONED = "PARTITIONED"


@dataclass(frozen=True, slots=True)
class TableBucketing:
    """A table's own hash distribution, while a plan's rows are still laid out by it."""

    table_id: int
    buckets: int
    column_types: tuple[DataType, ...]  # of the distribution columns, in order
    colocate_group: int | None = None
    group_stable: bool = True


@dataclass(frozen=True, slots=True)
class DataPartition:
    kind: PartitionKind
    exprs: tuple[Expr, ...] = ()
    bucketing: TableBucketing | None = None
    labels: tuple[str, ...] = ()

    @property
    def is_partitioned(self) -> bool:
        """More than one stream (a fragment with this partition may run several instances)."""
        return self.kind is not PartitionKind.UNPARTITIONED

    def explain(self) -> str:
        """Doris' EXPLAIN spelling: `UNPARTITIONED`, `RANDOM`, `HASH_PARTITIONED: a, b`."""
        if self.kind in (PartitionKind.UNPARTITIONED, PartitionKind.RANDOM):
            return self.kind.value
        return f"{self.kind.value}: {', '.join(self.labels)}"


UNPARTITIONED = DataPartition(PartitionKind.UNPARTITIONED)
RANDOM = DataPartition(PartitionKind.RANDOM)
