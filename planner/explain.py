"""EXPLAIN text in Doris 2.1's format (DORIS_REFERENCE a.1-a.3) from a distributed plan: its
fragments and the planner/physical.py nodes in them, each rendering its own lines.

`explain_lines(dplan, verbose)` prints fragment by fragment: `PLAN FRAGMENT n`, `OUTPUT EXPRS`
(fragment 0), `PARTITION:`, `HAS_COLO_PLAN_NODE:`, the sink (`VRESULT SINK` /
`STREAM DATA SINK` with `EXCHANGE ID`), then the node tree: `id:NAME`, detail lines under
`|  ` (or three spaces for leaves), build children drawn with `|----`, probe child below at
the same indent. VERBOSE adds each join's rejected cheaper modes with reasons.
`shape_lines(dplan)` prints `EXPLAIN SHAPE PLAN`: one line per physical operator, `--` per
level (`PhysicalResultSink`, `hashAgg[GLOBAL]`, `PhysicalDistribute[DistributionSpecHash]`,
`hashJoin[INNER_JOIN] hashCondition=(..) otherCondition=()`, `PhysicalOlapScan[t]`).
"""

from __future__ import annotations

from planner.fragment import DistributedPlan, PlanFragment
from planner.physical import Exchange, PhysicalNode

COLUMN_NAME = "Explain String(Nereids Planner)"


def explain_lines(dplan: DistributedPlan, verbose: bool = False) -> list[str]:
    out: list[str] = []
    for frag in dplan.fragments:
        out.extend(_fragment(frag, verbose))
        out.append("")
    return out[:-1] if out else out


def _fragment(frag: PlanFragment, verbose: bool) -> list[str]:
    lines = [f"PLAN FRAGMENT {frag.id}"]
    if frag.output_exprs:
        lines.append("  OUTPUT EXPRS:")
        lines.extend(f"    {e}" for e in frag.output_exprs)
    lines.append(f"  PARTITION: {frag.partition.explain()}")
    lines.append("")
    lines.append(f"  HAS_COLO_PLAN_NODE: {'true' if frag.has_colo else 'false'}")
    lines.append("")
    lines.extend(f"  {s}" for s in frag.sink.explain_lines())
    lines.append("")
    tree: list[str] = []
    _node(frag.root, "", tree, verbose)
    lines.extend(f"  {t}" if t else "" for t in tree)
    return lines


def _node(node: PhysicalNode, prefix: str, out: list[str], verbose: bool) -> None:
    out.append(f"{prefix}{node.id}:{node.name}")
    kids = node.children
    detail = prefix + ("|  " if kids else "   ")
    for d in node.detail_lines() + (list(node.verbose) if verbose else []):
        out.append(detail + d)
    if not kids:
        return
    out.append(prefix + "|")
    for child in reversed(kids[1:]):
        sub: list[str] = []
        _node(child, "", sub, verbose)
        out.append(prefix + "|----" + sub[0])
        out.extend(prefix + "|    " + line for line in sub[1:])
        out.append(prefix + "|")
    _node(kids[0], prefix, out, verbose)


def shape_lines(dplan: DistributedPlan) -> list[str]:
    out = ["PhysicalResultSink"]

    def walk(node: PhysicalNode, depth: int) -> None:
        if isinstance(node, Exchange):
            if node.shape != "PhysicalDistribute[DistributionSpecGather]" or depth > 1:
                out.append("--" * depth + node.shape)
                depth += 1
            walk(node.source, depth)
            return
        out.append("--" * depth + node.shape)
        for child in node.children:
            walk(child, depth + 1)

    walk(dplan.fragments[0].root, 1)
    return out
