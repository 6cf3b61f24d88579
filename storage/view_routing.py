"""Which tablet of its partition each row of a sync materialized view is written to.

The base index places a row by the table's distribution (HASH of the distribution columns,
storage/distribution.py). Placing a view's row in the view tablet of the base row's bucket (as
Doris does: one rollup tablet per base tablet) splits every group of the view over all the
buckets of a partition: on SSB-flat (HASH(lo_orderkey), 8 buckets) each group was stored up to
8 times per partition and every view scan opened every tablet (docs/performance.md, "mvflat").

A finished view (state NORMAL) therefore places its rows by its OWN key columns, into the first
`view_tablets(buckets)` tablets of the partition: every row of one group lands in one tablet,
where the memtable, compaction and merge-on-read merge it, so a view holds each group once per
partition (and load, until compaction). A view is read instead of the base only when it holds
at most a fifth of the base rows (planner/materialized_view.py), so an eighth of the tablets
keeps a view tablet about as large as a base tablet; the rest of the view's tablets stay empty
and the rewrite does not open them.

While a view is being built (SHADOW) loads place its rows as the base does, because the build
job (storage/rollup_job.py) converts each base tablet's versions into the view tablet of the
same bucket and decides what is missing per tablet pair: a load that began while the view was
a shadow writes the same rows there that the conversion would.

Readers must therefore never assume that a view tablet holds the rows of the base tablet of the
same bucket: the rewrite scans every non-empty view tablet of the scanned partitions and
re-aggregates (correct for both placements, and for data written before this module existed).
"""

from __future__ import annotations

import numpy as np

from storage.batch import Batch
from storage.catalog.meta import MaterializedIndexMeta
from storage.distribution import hash_columns

# One view tablet per this many buckets of a partition (at least one).
BUCKETS_PER_VIEW_TABLET = 8


def routes_by_own_keys(index: MaterializedIndexMeta) -> bool:
    """Whether loads place `index`'s rows by its own keys (a finished materialized view)."""
    return index.is_materialized_view and index.state == "NORMAL"


def view_tablets(buckets: int) -> int:
    """How many of a partition's `buckets` tablets a view's rows go to (the first ones)."""
    return max(1, buckets // BUCKETS_PER_VIEW_TABLET)


def view_buckets(index: MaterializedIndexMeta, rows: Batch,
                 partition_buckets: np.ndarray) -> np.ndarray:
    """Bucket seq of each view row: the chained crc32 of its key columns modulo the view
    tablets of its partition (`partition_buckets[i]`: the bucket count of row i's partition).
    Equal keys always give the same seq within a partition."""
    n = rows.num_rows
    tablets = np.maximum(partition_buckets // BUCKETS_PER_VIEW_TABLET, 1).astype(np.int64)
    if n == 0 or int(tablets.max()) == 1:
        return np.zeros(n, dtype=np.int64)
    keys = [rows.column(name) for name in index.keys] or [rows.column(index.columns[0])]
    return (hash_columns(keys).astype(np.int64) % tablets).astype(np.int64)
