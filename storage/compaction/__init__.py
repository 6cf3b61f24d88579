"""Compaction (seed 002): merging a tablet's rowsets in the background.

- `config.py`: every tunable, under its Doris BE name (conf/shaledb.toml [compaction], [load]).
- `policy.py`: the size_based cumulative policy and base compaction conditions (pure functions).
- `merger.py`: one compaction task: read the input rowsets merged per the data model, write
  one NONOVERLAPPING output rowset, swap it in with one catalog transaction.
- `stale.py`: rowsets replaced by compaction, kept for readers pinned to older versions.
- `scheduler.py`: the producer thread, the permit-limited worker pools, manual triggers.
"""
