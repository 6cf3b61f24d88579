"""What the MySQL protocol sends for BITMAP and HLL values: NULL, unless the session sets
`return_object_data_as_binary`, as Doris 2.1 does (its result writer pushes NULL for object
types unless the variable is true; `bitmap_to_string`, `bitmap_to_base64` and
`hll_cardinality` are how a user reads them as text).

With the variable set, the stored bytes go out in a column whose charset is binary (63,
server/results.py), so drivers hand them over as bytes instead of failing to decode them as
UTF-8. Only the MySQL protocol hides them: Arrow Flight SQL results carry the bytes as Arrow
binary, which no client misreads.
"""

from __future__ import annotations

from collections.abc import Iterator

from server.statements.outcomes import RowsOutcome
from storage.batch import Batch, Column
from storage.types import TypeKind

OBJECT_KINDS = frozenset({TypeKind.BITMAP, TypeKind.HLL})


def hide_object_values(outcome: RowsOutcome, as_binary: bool) -> RowsOutcome:
    """`outcome` with every BITMAP / HLL column's values NULL, unless `as_binary` (the
    session's return_object_data_as_binary). Other results pass through untouched."""
    if as_binary or not any(t.kind in OBJECT_KINDS for t in outcome.types):
        return outcome
    hidden = frozenset(i for i, t in enumerate(outcome.types) if t.kind in OBJECT_KINDS)

    def batches() -> Iterator[Batch]:
        for batch in outcome.batches:
            n = batch.num_rows
            columns = tuple(Column.nulls(c.type, n) if i in hidden else c
                            for i, c in enumerate(batch.columns))
            yield Batch(batch.names, columns)

    return RowsOutcome(outcome.names, outcome.types, batches())
