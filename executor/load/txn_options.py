"""The transaction side of a load's properties: `two_phase_commit`, `timeout`,
`exec_mem_limit` and `group_commit` (Doris' Stream Load headers of the same names), validated
into `TxnOptions` before any data arrives (`timezone` is a format property:
executor/load/format_options.py).

- `timeout` (seconds; default `stream_load_default_timeout_second`): a load still running
  after it fails and is aborted (checked between blocks and while waiting for the body).
- `two_phase_commit: true`: the load ends PRECOMMITTED and may wait for its commit
  `stream_load_default_precommit_timeout_second` (read when the server checks, as Doris does).
- `exec_mem_limit` (bytes): validated and accepted; memory is bounded by the memtable limits
  (`write_buffer_size`, `load_process_max_memory_limit_bytes`), not per load.
- `group_commit`: off_mode, sync_mode or async_mode (Doris refuses it with a label or with
  two-phase commit); see server/stream_load.py for what the modes do.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from executor.load.spec import LoadFailed

GROUP_COMMIT_MODES = ("off_mode", "sync_mode", "async_mode")


@dataclass(frozen=True)
class TxnOptions:
    two_phase: bool = False
    timeout_s: int = 600
    exec_mem_limit: int = 2 << 30
    group_commit: str = "off_mode"
    started: float = field(default_factory=time.monotonic)

    @property
    def deadline(self) -> float:
        return self.started + self.timeout_s

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def expired(self) -> bool:
        return self.remaining() <= 0


def timeout_failure(options: TxnOptions) -> LoadFailed:
    return LoadFailed(f"[TIMEOUT]load timeout: the load did not finish within its timeout of "
                      f"{options.timeout_s} seconds, aborted")


def _positive_int(props: Mapping[str, str], name: str, default: int) -> int:
    raw = props.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise LoadFailed(f"[INVALID_ARGUMENT]Invalid {name}: {raw}, it should be a positive "
                         "integer")
    return value


def txn_options(props: Mapping[str, str], default_timeout_s: int = 600) -> TxnOptions:
    """Validate the transaction headers. Raises LoadFailed with Doris' wording."""
    two_phase_raw = props.get("two_phase_commit", "false").strip().lower()
    if two_phase_raw not in ("true", "false"):
        raise LoadFailed(f"[INVALID_ARGUMENT]Invalid two_phase_commit: {two_phase_raw}, it "
                         "should be true or false")
    two_phase = two_phase_raw == "true"
    timeout_s = _positive_int(props, "timeout", default_timeout_s)
    mem = _positive_int(props, "exec_mem_limit", 2 << 30)
    group_commit = props.get("group_commit", "off_mode").strip().lower() or "off_mode"
    if group_commit not in GROUP_COMMIT_MODES:
        raise LoadFailed("[INVALID_ARGUMENT]group_commit can only be [async_mode, sync_mode, "
                         "off_mode]")
    if group_commit != "off_mode":
        if props.get("label", "").strip():
            raise LoadFailed("[INVALID_ARGUMENT]label and group_commit can't be set at the "
                             "same time")
        if two_phase:
            raise LoadFailed("[INVALID_ARGUMENT]group commit can't be set with 2pc")
    return TxnOptions(two_phase=two_phase, timeout_s=timeout_s, exec_mem_limit=mem,
                      group_commit=group_commit)
