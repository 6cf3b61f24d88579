"""Doris' load properties -> a validated `LoadSpec`, and what a load reports back.

The same property names configure every load path: Stream Load's HTTP headers, LOAD DATA's
PROPERTIES, and the file table functions' arguments (column_separator, line_delimiter, format,
columns, max_filter_ratio, strict_mode, ...). `spec_from_properties` checks everything that can
be checked before any data arrives, so Stream Load can refuse before `100 Continue`.
Messages follow Doris' (`[INVALID_ARGUMENT]...`, `[ANALYSIS_ERROR]TStatus: ...`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from executor.insert import default_value
from executor.load.format_options import FormatError, FormatOptions, format_options
from sql.errors import DorisError
from storage import clock
from storage.catalog.catalog import Catalog
from storage.catalog.meta import ColumnMeta, TableMeta, TemporaryPartitionNames
from storage.errors import load_analysis_message
from storage.txn import LabelAlreadyUsed
from storage.types import BLOB_KINDS

MAX_ERROR_ROWS = 50_000  # filtered rows a load's error log lists (executor/load/error_log.py)

if TYPE_CHECKING:
    from executor.load.mapping import ColumnMapping


class LoadFailed(Exception):
    """A load refused or failed: `message` is Doris' text (with its status tag)."""

    def __init__(self, message: str, status: str = "Fail", existing: str | None = None,
                 http_status: int = 200) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.existing = existing
        self.http_status = http_status
        self.stats: LoadStats | None = None


@dataclass
class LoadSpec:
    """A validated load: which table, under which label, the file's columns and tolerance."""

    db: str
    table: TableMeta
    label: str
    targets: list[ColumnMeta]  # the file's columns, in file order
    format: FormatOptions
    max_filter_ratio: float
    strict: bool
    mapping: ColumnMapping | None = None  # columns / where (mapping.py); None: file = table
    partitions: tuple[str, ...] | None = None  # the `partitions` property

    @property
    def separator(self) -> str:
        return self.format.separator


@dataclass
class LoadStats:
    """Counters and phase timings that end up in the JSON response."""

    total_rows: int = 0
    loaded_rows: int = 0
    filtered_rows: int = 0
    skipped_rows: int = 0  # rows a reader dropped (wrong column count, bad JSON), filtered
    unselected_rows: int = 0  # rows the `where` property dropped (not filtered rows)
    load_bytes: int = 0
    txn_id: int = -1
    begin_txn_ms: int = 0
    read_data_ms: int = 0
    write_data_ms: int = 0
    commit_ms: int = 0
    first_errors: list[str] = field(default_factory=list)
    # every filtered row's reason (capped), for the load's error log behind its ErrorURL
    error_rows: list[str] = field(default_factory=list)

    def filtered(self, reason: str, row: int = -1) -> None:  # row: for StatsRecord's order
        self.filtered_rows += 1
        if len(self.first_errors) < 10:
            self.first_errors.append(reason)
        if len(self.error_rows) < MAX_ERROR_ROWS:
            self.error_rows.append(reason)


@dataclass
class StatsRecord:
    """The LoadStats surface readers and conversion write (skipped, filtered and unselected
    rows), kept by a thread that works ahead of the load thread (executor/load/prefetch.py,
    job.py) and added to the load's LoadStats in stream order by `apply_to`, so the error log
    lists filtered rows in file order. A reason may carry the row it is about (its position in
    the batch being converted), which `ordered` sorts by."""

    skipped_rows: int = 0
    unselected_rows: int = 0
    reasons: list[str] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)  # each reason's row (-1: before them all)

    def filtered(self, reason: str, row: int = -1) -> None:
        self.reasons.append(reason)
        self.rows.append(row)

    def handed_over(self) -> StatsRecord:
        """What was recorded since the last call (and start afresh)."""
        out = StatsRecord(self.skipped_rows, self.unselected_rows, self.reasons, self.rows)
        self.skipped_rows, self.unselected_rows, self.reasons, self.rows = 0, 0, [], []
        return out

    def apply_to(self, stats: LoadStats | StatsRecord, at_row: int = -1) -> None:
        """Add this record to `stats`; its reasons about no row in particular (a reader's)
        go to `stats` as about `at_row`."""
        stats.skipped_rows += self.skipped_rows
        stats.unselected_rows += self.unselected_rows
        for reason, row in zip(self.reasons, self.rows, strict=True):
            stats.filtered(reason, row if row >= 0 else at_row)

    def ordered(self) -> StatsRecord:
        """The reasons sorted by row (stable: a row's reasons keep their order)."""
        order = sorted(range(len(self.rows)), key=self.rows.__getitem__)
        return StatsRecord(self.skipped_rows, self.unselected_rows,
                           [self.reasons[i] for i in order], [self.rows[i] for i in order])


def parse_ratio(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise LoadFailed(f"[INVALID_ARGUMENT]Invalid max_filter_ratio: {raw}, it should be "
                         "between 0 and 1")
    return value


def spec_from_properties(catalog: Catalog, db_name: str, table: TableMeta,
                         props: Mapping[str, str]) -> LoadSpec:
    """Everything that can be checked before the data arrives. Raises LoadFailed.
    `props` maps Doris' property names (case-sensitive, as Doris' headers) to their text."""
    # mapping.py builds on convert.py, which imports this module: imported here
    from executor.load.mapping import MappingError, build_mapping, parse_partitions

    h = props
    try:
        fmt_options = format_options(h)
    except FormatError as e:
        raise LoadFailed(e.message) from None
    targets: list[ColumnMeta] = list(table.columns)
    mapping = None
    if "columns" in h or "where" in h:  # executor/load/mapping.py
        try:
            mapping = build_mapping(table, h.get("columns"), h.get("where"),
                                    h.get("timezone"))
        except MappingError as e:
            raise LoadFailed(f"[{e.tag}]{e.message}") from None
        targets = mapping.targets
    partitions = None
    if h.get("partitions", "").strip():
        try:
            partitions = parse_partitions(h["partitions"], table, [
                p.name for p in catalog.partitions(table.table_id)])
        except MappingError as e:
            raise LoadFailed(f"[{e.tag}]{e.message}") from None
    if h.get("temporary_partitions", "").strip():
        if partitions:
            raise LoadFailed(load_analysis_message(
                "Can not specify both partitions and temporary partitions"))
        try:
            partitions = TemporaryPartitionNames(parse_partitions(
                h["temporary_partitions"], table,
                [p.name for p in catalog.partitions(table.table_id, temporary=True)]))
        except MappingError as e:
            raise LoadFailed(f"[{e.tag}]{e.message}") from None
    for c in (targets if mapping is None else mapping.direct.values()):
        if c.type.kind in BLOB_KINDS and not c.type.is_nested:  # nested cells load as values
            raise LoadFailed(f"[INVALID_ARGUMENT]column {c.name} of type {c.type.sql()} needs "
                             "a columns expression (to_bitmap, hll_hash)")
    chosen = ({c.name.lower() for c in targets} if mapping is None
              else mapping.loaded_columns())
    now = clock.now()
    for c in table.columns:
        if c.name.lower() not in chosen:
            try:
                default_value(c, now)
            except DorisError:
                raise LoadFailed(load_analysis_message(
                    f"Column has no default value. column: {c.name}")) from None
    label = h.get("label", "").strip() or f"stream_load_{uuid.uuid4().hex}"
    prev = catalog.txn_by_label(table.db_id, label)  # labels are unique per database
    if prev is not None:
        raise label_exists(label, prev.txn_id)
    strict = h.get("strict_mode", "false").strip().lower() == "true"
    return LoadSpec(db_name, table, label, targets, fmt_options,
                    parse_ratio(h.get("max_filter_ratio", "0")), strict, mapping, partitions)

def label_exists(label: str, txn_id: int, existing: str = "FINISHED") -> LoadFailed:
    """`existing`: Doris' ExistingJobStatus, RUNNING while the label's load is not visible."""
    return LoadFailed(f"[LABEL_ALREADY_EXISTS]Label [{label}] has already been used, relate to "
                      f"txn [{txn_id}]", status="Label Already Exists", existing=existing)


def label_used(label: str, e: LabelAlreadyUsed) -> LoadFailed:
    """LabelAlreadyUsed names the txn holding the label: `... relate to txn [<id>]`."""
    return label_exists(label, int(e.detail.rsplit("[", 1)[1].rstrip("]")))

