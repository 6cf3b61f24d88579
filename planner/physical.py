"""Physical plan nodes: frozen, one class per operator the executor runs, each rendering its own
EXPLAIN lines (`detail_lines()`, `shape`) from its typed fields.

planner/distribute.py decides (join modes with the reasons cheaper ones were rejected, aggregate
phases, exchange placement, runtime filters); planner/lower.py builds these nodes from its
decisions and the optimized logical plan, grouped into planner/fragment.py `PlanFragment`s;
planner/explain.py prints them and nothing else.

Projections and plain LIMITs are not nodes: as in Doris, a plain LIMIT is the `limit` field of
the node below it (printed as its `limit:` line), and a projection only renames what the nodes
above print (the display texts are resolved at plan time).

Expressions are kept as the text EXPLAIN prints for them (`*_text` fields), since that text
depends on the projections below the node (planner/distribute.py `_Planner.text`).
Besides those texts each node carries what its operator needs as plain physical data: bound
expressions (sql/binder/expressions.py), names and types, scan ranges, never a logical plan
node (planner/lower.py fills them in; executor/build.py reads nothing else, and the layering
test keeps the executor from importing planner.logical).
Nodes are known by their `id` (EXPLAIN's node id): runtime filters name their join and target
scan by it, the executor keys shared states and operators by it (executor/build.py builds one
operator per node, 1:1).
Upstream: Doris Nereids `PhysicalPlan` nodes / legacy `PlanNode.getNodeExplainString`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import ClassVar

from planner.aggregate_phase import AggPhase, AggregateExprs
from planner.partitioning import DataPartition, JoinMode
from planner.runtime_filters import RuntimeFilterDesc
from planner.scan_ranges import ScanRange
from sql.binder.expressions import Expr
from sql.binder.relations import SortKey
from storage.predicates import ColumnPredicate, Disjunction
from storage.types import DataType

_MODE_WORDS = {JoinMode.COLOCATE: "colocate", JoinMode.BUCKET_SHUFFLE: "bucket shuffle",
               JoinMode.BROADCAST: "broadcast"}


@dataclass(frozen=True, slots=True)
class FoldedProject:
    """A projection run above the node (Doris prints no node for it)."""

    exprs: tuple[tuple[str, Expr], ...]


@dataclass(frozen=True, slots=True)
class FoldedLimit:
    """A plain LIMIT run above the node, printed as the node's `limit:` line."""

    limit: int | None
    offset: int = 0


@dataclass(frozen=True, kw_only=True, eq=False)
class PhysicalNode:
    id: int
    children: tuple[PhysicalNode, ...] = ()
    limits: tuple[int | None, ...] = ()  # plain LIMITs folded into this node
    verbose: tuple[str, ...] = ()  # EXPLAIN VERBOSE only
    shape: str = ""  # EXPLAIN SHAPE PLAN label
    folded: tuple[FoldedProject | FoldedLimit, ...] = ()  # run above it, in plan order
    name: ClassVar[str] = ""

    def own_lines(self) -> list[str]:
        return []

    def detail_lines(self) -> list[str]:
        lines = self.own_lines()
        return lines + [f"limit: {n}" for n in self.limits]

    @property
    def details(self) -> list[str]:
        return self.detail_lines()

    @property
    def colocated(self) -> bool:
        return False


@dataclass(frozen=True, kw_only=True, eq=False)
class OlapScan(PhysicalNode):
    """An OLAP table scan of materialized index `index_id` (`index_name`; pre-aggregation
    `preaggregation`): `ranges` are the tablets and versions captured at plan time, `columns`
    what it outputs. The scan contract (planner/lower.py `split_scan_filters`): storage applies
    `storage_predicates` and `disjunctions` exactly, the scan evaluates `residual_filter`.
    `predicates_text` is every filter as EXPLAIN prints it; `runtime_filters` the filters
    joins above build for it (`runtime_filter_ids`)."""

    name: ClassVar[str] = "VOlapScanNode"
    table: str
    table_id: int
    index_id: int
    index_name: str
    preaggregation: bool = True
    columns: tuple[str, ...]
    column_types: tuple[DataType, ...]
    ranges: tuple[ScanRange, ...]
    row_count: int  # rows in the captured rowsets (instance sizing)
    storage_predicates: tuple[ColumnPredicate, ...] = ()
    disjunctions: tuple[Disjunction, ...] = ()
    residual_filter: Expr | None = None
    table_line: str
    predicates_text: tuple[str, ...] = ()
    runtime_filters: tuple[RuntimeFilterDesc, ...] = ()
    runtime_filter_columns: tuple[str, ...] = ()  # as EXPLAIN prints each target column
    partitions_line: str
    tablets_line: str
    cardinality: int
    num_nodes: int

    @property
    def runtime_filter_ids(self) -> tuple[int, ...]:
        return tuple(d.id for d in self.runtime_filters)

    def own_lines(self) -> list[str]:
        lines = [self.table_line]
        if self.predicates_text:
            lines.append("PREDICATES: " + " AND ".join(self.predicates_text))
        if self.runtime_filters:
            lines.append("runtime filters: " + ", ".join(
                f"{d.name}[in_or_bloom] -> {c}"
                for d, c in zip(self.runtime_filters, self.runtime_filter_columns)))
        return lines + [self.partitions_line, self.tablets_line,
                        (f"cardinality={self.cardinality}, avgRowSize=0.0, "
                         f"numNodes={self.num_nodes}"), "pushAggOp=NONE"]


@dataclass(frozen=True, kw_only=True, eq=False)
class FileScan(PhysicalNode):
    """The files of a table function: `paths` read in `format` with `options`, each giving
    `file_columns` (`file_types`); outputs `columns` (`column_types`)."""

    name: ClassVar[str] = "VFILE_SCAN_NODE"
    function: str
    format: str
    paths: tuple[str, ...]
    options: tuple[tuple[str, str], ...]
    file_columns: tuple[str, ...]
    file_types: tuple[DataType, ...]
    columns: tuple[str, ...]
    column_types: tuple[DataType, ...]
    cardinality: int

    @property
    def files(self) -> int:
        return len(self.paths)

    def own_lines(self) -> list[str]:
        return [f"table: {self.function}", f"format: {self.format}", f"files: {self.files}",
                f"cardinality={self.cardinality}"]


@dataclass(frozen=True, kw_only=True, eq=False)
class Values(PhysicalNode):
    name: ClassVar[str] = "VUNION"
    value_names: tuple[str, ...]
    value_types: tuple[DataType, ...]
    rows: tuple[tuple[object, ...], ...]

    def own_lines(self) -> list[str]:
        return [f"constant exprs: {len(self.rows)} rows"]


@dataclass(frozen=True, kw_only=True, eq=False)
class Filter(PhysicalNode):
    name: ClassVar[str] = "VSELECT"
    predicate: Expr
    predicate_text: str

    def own_lines(self) -> list[str]:
        return [f"predicates: {self.predicate_text}"]


@dataclass(frozen=True, slots=True)
class JoinExprs:
    """What a join evaluates (planner/logical.py LogicalJoin's semantics): `kind`, equi keys
    (`left_keys` over the probe side, `right_keys` over the build side), the ON `condition`
    and `residual` (both evaluated on candidate pairs), a mark join's output `mark_name` and
    null-aware `mark_keys`; the sides' output names and types; `build_base_rows`: the rows
    of the build side's tables before their filters (how selective its runtime filters are)."""

    kind: str
    left_keys: tuple[Expr, ...]
    right_keys: tuple[Expr, ...]
    condition: Expr | None
    residual: Expr | None
    mark_name: str | None
    mark_keys: tuple[Expr, Expr] | None
    left_names: tuple[str, ...]
    left_types: tuple[DataType, ...]
    right_names: tuple[str, ...]
    right_types: tuple[DataType, ...]
    build_base_rows: float


@dataclass(frozen=True, kw_only=True, eq=False)
class HashJoin(PhysicalNode):
    """An equi-join distributed as `mode`; `rejected` holds each cheaper mode and why it was
    not taken (EXPLAIN VERBOSE); `build_filters` the runtime filters its build side makes;
    `shared_build`: the fragment's instances share one build (broadcast)."""

    name: ClassVar[str] = "VHASH JOIN"
    exprs: JoinExprs
    op: str  # `INNER JOIN`, `LEFT SEMI JOIN`, ...
    mode: JoinMode
    is_colocated: bool = False
    rejected: tuple[tuple[JoinMode, str], ...] = ()
    equal_texts: tuple[tuple[str, str], ...] = ()
    other_text: str | None = None
    mark_text: tuple[str, str] | None = None
    build_filters: tuple[RuntimeFilterDesc, ...] = ()
    build_key_texts: tuple[str, ...] = ()
    shared_build: bool = False
    cardinality: int

    @property
    def colocated(self) -> bool:
        return self.is_colocated

    @property
    def join_mode(self) -> JoinMode:
        return self.mode

    @property
    def build_filter_ids(self) -> tuple[int, ...]:
        return tuple(d.id for d in self.build_filters)

    def own_lines(self) -> list[str]:
        colo = "COLOCATE[]" if self.is_colocated else self.mode.value
        lines = [f"join op: {self.op}({colo})[]"]
        lines += [f"equal join conjunct: ({a} = {b})" for a, b in self.equal_texts]
        if self.other_text is not None:
            lines.append(f"other join predicates: {self.other_text}")
        if self.mark_text is not None:
            lines.append(f"mark join predicates: {self.mark_text[0]} = {self.mark_text[1]}")
        if self.build_filters:
            lines.append("runtime filters: " + ", ".join(
                f"{d.name}[in_or_bloom] <- {k}"
                for d, k in zip(self.build_filters, self.build_key_texts)))
        return lines + [f"cardinality={self.cardinality}"]

    @staticmethod
    def rejected_lines_of(rejected: tuple[tuple[JoinMode, str], ...]) -> list[str]:
        """EXPLAIN VERBOSE: each cheaper mode the join could not take, and why."""
        return [f"{_MODE_WORDS[m]}: false, reason: {why}" for m, why in rejected]


@dataclass(frozen=True, kw_only=True, eq=False)
class NestedLoopJoin(PhysicalNode):
    name: ClassVar[str] = "VNESTED LOOP JOIN"
    exprs: JoinExprs
    op: str
    mode: JoinMode
    other_text: str | None = None
    shared_build: bool = False
    cardinality: int

    @property
    def join_mode(self) -> JoinMode:
        return self.mode

    def own_lines(self) -> list[str]:
        lines = [f"join op: {self.op}({self.mode.value})[]"]
        if self.other_text is not None:
            lines.append(f"other join predicates: {self.other_text}")
        return lines + [f"cardinality={self.cardinality}"]


@dataclass(frozen=True, kw_only=True, eq=False)
class HashAggregate(PhysicalNode):
    phase: AggPhase
    exprs: AggregateExprs
    output_text: str
    group_texts: tuple[str, ...] = ()
    cardinality: int

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"VAGGREGATE ({self.phase.value})"

    def own_lines(self) -> list[str]:
        return [f"output: {self.output_text}" if self.output_text else "output: ",
                f"group by: {', '.join(self.group_texts)}", f"cardinality={self.cardinality}"]


def _order_text(keys: tuple[tuple[str, bool], ...]) -> str:
    return ", ".join(f"{k} {'DESC' if desc else 'ASC'}" for k, desc in keys)


@dataclass(frozen=True, kw_only=True, eq=False)
class TopN(PhysicalNode):
    """ORDER BY .. LIMIT: the first `offset + top` rows in order (the local TOP-N of a
    TOP-N gather keeps them all; the merging one above the exchange skips `offset`)."""

    name: ClassVar[str] = "VTOP-N"
    order_by: tuple[tuple[str, bool], ...]  # (key text, descending)
    order_keys: tuple[SortKey, ...]  # what the operator sorts by
    offset: int
    top: int
    local: bool = False  # below a TOP-N gather: keeps `offset + top` rows, the merge skips

    def own_lines(self) -> list[str]:
        return [f"order by: {_order_text(self.order_by)}", f"offset: {self.offset}",
                f"limit: {self.top}"]


@dataclass(frozen=True, kw_only=True, eq=False)
class Sort(PhysicalNode):
    name: ClassVar[str] = "VSORT"
    order_by: tuple[tuple[str, bool], ...]
    keys: tuple[SortKey, ...]  # what the operator sorts by

    def own_lines(self) -> list[str]:
        return [f"order by: {_order_text(self.order_by)}", "offset: 0"]


@dataclass(frozen=True, kw_only=True, eq=False)
class Window(PhysicalNode):
    name: ClassVar[str] = "VANALYTIC-EVAL"
    windows: tuple[tuple[str, Expr], ...]  # (output name, WindowCall)
    functions_text: str

    def own_lines(self) -> list[str]:
        return [f"functions: {self.functions_text}"]


@dataclass(frozen=True, kw_only=True, eq=False)
class TableFunction(PhysicalNode):
    """LATERAL VIEW (logical.LogicalGenerate): row-local, so it runs where its child runs."""

    name: ClassVar[str] = "TABLE FUNCTION NODE"
    function: str
    args: tuple[Expr, ...]
    gen_names: tuple[str, ...]
    gen_types: tuple[DataType, ...]
    function_text: str

    def own_lines(self) -> list[str]:
        return [f"table function: {self.function_text}"]


@dataclass(frozen=True, kw_only=True, eq=False)
class SetOp(PhysicalNode):
    op: str  # union_all / intersect / except
    names: tuple[str, ...]
    types: tuple[DataType, ...]

    @property
    def name(self) -> str:  # type: ignore[override]
        return {"intersect": "VINTERSECT", "except": "VEXCEPT"}.get(self.op, "VUNION")


@dataclass(frozen=True, kw_only=True, eq=False)
class AssertOneRow(PhysicalNode):
    name: ClassVar[str] = "VASSERT-NUM-ROWS"

    def own_lines(self) -> list[str]:
        return ["assert number of rows: EQ 1"]


class Carries(Enum):
    """What crosses an exchange (always as Batches)."""

    ROWS = "rows"  # the rows of the node below
    AGG_STATE = "agg_state"  # the partial states of the `update serialize` aggregate below
    TOP_N = "top_n"  # the rows of a local TOP-N, merged by a TOP-N above the exchange


@dataclass(frozen=True, kw_only=True, eq=False)
class Exchange(PhysicalNode):
    """The receiving end of the stream from fragment `sender_fragment` (whose root is
    `source`), routed by `partition`: UNPARTITIONED sends every row to every receiving
    instance (`replicated`: a broadcast, else a gather), HASH by the shuffle hash of
    `partition.exprs`, BUCKET_SHUFFLE to the instance holding the row's bucket. `carries`:
    `rows` (named `names`), `agg_state` (the partial states of the `update serialize`
    aggregate at the sender's root, merged here) or `top_n` (the sender's root is the local
    TOP-N; the receiver merges its streams and cuts `offset`, `limits` again)."""

    name: ClassVar[str] = "VEXCHANGE"
    source: PhysicalNode
    source_partition: DataPartition  # how the sending fragment's rows are spread
    partition: DataPartition
    replicated: bool = False
    carries: Carries = Carries.ROWS
    sender_fragment: int
    names: tuple[str, ...]  # the columns of the rows it moves
    offset: int = 0

    def own_lines(self) -> list[str]:
        return [f"offset: {self.offset}"]


def walk(root: PhysicalNode) -> list[PhysicalNode]:
    """The nodes of one fragment (an exchange's source is another fragment), pre-order."""
    out, stack = [], [root]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(n.children))
    return out
