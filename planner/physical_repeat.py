"""Physical nodes of GROUPING SETS (planner/repeat.py has the logical ones and the plan shape):
`Repeat`, printed as Doris' `VREPEAT_NODE`, and `EmptyGroupingSets`, the grand-total row of
an empty input. Kept apart from planner/repeat.py so the executor never imports logical nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from planner.physical import PhysicalNode
from sql.binder.expressions import AggregateCall
from storage.types import DataType


@dataclass(frozen=True, kw_only=True, eq=False)
class Repeat(PhysicalNode):
    """Row-local (each instance repeats its own rows), so it runs where its child runs."""

    name: ClassVar[str] = "VREPEAT_NODE"
    key_names: tuple[str, ...]
    sets: tuple[tuple[int, ...], ...]
    id_name: str
    virtual_names: tuple[str, ...]
    virtual_values: tuple[tuple[int, ...], ...]
    key_texts: tuple[str, ...]  # what the keys compute, as EXPLAIN prints them

    def own_lines(self) -> list[str]:
        # Doris: `repeat: repeat <sets - 1> lines [<slots of each set>]`, the pre-repeat exprs,
        # the output slots (keys, then GROUPING_ID and the GROUPING columns)
        sets = "[" + ", ".join("[" + ", ".join(map(str, s)) + "]" for s in self.sets) + "]"
        outputs = [f"`{t}`" for t in self.key_texts] + ["`GROUPING_ID`"] + [
            f"`{n}`" for n in self.virtual_names]
        return [f"repeat: repeat {len(self.sets) - 1} lines {sets}",
                "exprs: " + ", ".join(self.key_texts),
                "output slots: " + ", ".join(outputs)]


@dataclass(frozen=True, kw_only=True, eq=False)
class EmptyGroupingSets(PhysicalNode):
    name: ClassVar[str] = "VREPEAT_EMPTY_SETS"
    key_names: tuple[str, ...]
    key_types: tuple[DataType, ...]
    key_rows: tuple[tuple[object, ...], ...]
    aggregates: tuple[tuple[str, AggregateCall], ...]

    def own_lines(self) -> list[str]:
        return [f"grand total rows when empty: {len(self.key_rows)}"]
