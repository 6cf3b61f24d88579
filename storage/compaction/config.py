"""Compaction and load tunables, named as in Doris' be.conf (seed 002, DORIS_REFERENCE.md b.8).

`server/config.py` fills this from conf/shaledb.toml; storage code receives the frozen object
and never reads files. Sizes are bytes here (Doris spells some in MB; the toml keeps Doris' names
and units and server/config converts them).
"""

from __future__ import annotations

from dataclasses import dataclass

MB = 1 << 20


@dataclass(frozen=True, slots=True)
class CompactionConfig:
    # ---- producer / consumer (seed 002 section 2) ----
    disable_auto_compaction: bool = False
    # Doris polls every 10 ms; here the producer also wakes on every publish, so a slower
    # poll only matters for time-based conditions.
    generate_compaction_tasks_interval_ms: int = 200
    cumulative_compaction_rounds_for_each_base_compaction_round: int = 9
    compaction_task_num_per_disk: int = 4
    min_compaction_failure_interval_sec: int = 5
    max_cumu_compaction_threads: int = -1  # -1: the number of data dirs (backends), at least 2
    max_base_compaction_threads: int = 4
    total_permits_for_compaction_score: int = 1_000_000
    compaction_tablet_scan_frequency_factor: float = 0.0
    compaction_tablet_compaction_score_factor: float = 1.0
    # ---- size_based cumulative policy (seed 002 section 3) ----
    compaction_promotion_size_mbytes: int = 1024
    compaction_promotion_ratio: float = 0.05
    compaction_promotion_min_size_mbytes: int = 128
    compaction_min_size_mbytes: int = 64
    cumulative_compaction_min_deltas: int = 5
    cumulative_compaction_max_deltas: int = 1000
    pick_rowset_to_compact_interval_sec: int = 86400
    # ShaleDB's own: a tablet no load touched for this long merges its leftover small deltas
    # into one (0: never; Doris leaves them, apache/doris#2668).
    cumulative_compaction_quiet_seconds: int = 30
    # ---- base compaction (seed 002 section 4) ----
    base_compaction_min_rowset_num: int = 5
    base_compaction_min_data_ratio: float = 0.3
    base_compaction_interval_seconds_since_last_operation: int = 86400
    # ---- readers ----
    # Rowsets replaced by compaction stay readable this long, and longer while a query that
    # started before the swap still runs (Doris tablet_rowset_stale_sweep_time_sec).
    tablet_rowset_stale_sweep_time_sec: int = 300
    # Share of one core compaction may take while queries run (it sleeps between batches to
    # stay under it); idle, it runs flat out. ShaleDB's own: Python threads have no priorities.
    compaction_busy_cpu_share: float = 0.25
    # ---- loads (back-pressure, memtables) ----
    max_tablet_version_num: int = 2000
    # Above this percentage of max_tablet_version_num a load waits for the tablet's compaction.
    load_back_pressure_version_threshold: int = 80
    # Memtable bytes one load buffers per tablet before it flushes a segment (Doris: 200 MB).
    write_buffer_size: int = 200 * MB
    # Memtable bytes all running loads together may buffer; above it the load adding rows
    # flushes its largest memtable (storage/txn.py). Doris <= 1.2 and StarRocks name the bytes
    # cap so; Doris 2.1 derives it as load_process_max_memory_limit_percent of mem_limit, and
    # ShaleDB has no process mem_limit to take a percentage of.
    # 256 MB (not Doris' 2 GB) keeps a Stream Load of any size under 1 GB of server RSS
    # (bench/stream_load.py, SSB lineorder SF 1: 1.13 GB peak with 2 GB or 512 MB, 717 MB with
    # 256 MB; the memtables of a 558 MB CSV take ~550 MB).
    load_process_max_memory_limit_bytes: int = 256 * MB
    # ---- load transactions and status (server/stream_load.py, executor/load/) ----
    # Doris FE: a Stream Load without a `timeout` header fails after this many seconds.
    stream_load_default_timeout_second: int = 600
    # Doris FE: a two-phase load left PRECOMMITTED this long is aborted.
    stream_load_default_precommit_timeout_second: int = 3600
    # Doris BE: load error logs (the ErrorURL files) older than this are deleted.
    load_error_log_reserve_hours: int = 48
    # Doris FE max_stream_load_record_size: load records SHOW LOAD / SHOW STREAM LOAD keep.
    max_stream_load_record_size: int = 5000

    @property
    def promotion_size(self) -> int:
        return self.compaction_promotion_size_mbytes * MB

    @property
    def promotion_min_size(self) -> int:
        return self.compaction_promotion_min_size_mbytes * MB

    @property
    def compaction_min_size(self) -> int:
        return self.compaction_min_size_mbytes * MB
