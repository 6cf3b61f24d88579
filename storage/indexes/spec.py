"""SegmentIndexSpec: which user-declared indexes (bitmap, bloom filter) a segment is written with.

The catalog declares them per table (INDEX .. USING BITMAP, `"bloom_filter_columns"` /
`"bloom_filter_fpp"`); every writer of segments (loads through RowsetWriter, compaction, rollup
and index-building jobs) derives the spec from the table it writes for with `index_spec_of`, so
a segment always carries the indexes its table declared when it was written. The segment footer
records what a segment actually holds; scans use an index only where the segment has it.
"""

from __future__ import annotations

from dataclasses import dataclass

from storage.catalog.meta import MaterializedIndexMeta, TableMeta

DEFAULT_BLOOM_FILTER_FPP = 0.05
# Index types served by the bitmap index: BITMAP, and INVERTED without a parser (what Doris 2.1
# users write for the same exact-match purpose).
BITMAP_INDEX_TYPES = frozenset({"BITMAP", "INVERTED"})


@dataclass(frozen=True, slots=True)
class SegmentIndexSpec:
    bitmap_columns: frozenset[str] = frozenset()  # lower-case names
    bloom_filter_columns: frozenset[str] = frozenset()  # lower-case names
    bloom_filter_fpp: float = DEFAULT_BLOOM_FILTER_FPP

    @property
    def empty(self) -> bool:
        return not self.bitmap_columns and not self.bloom_filter_columns


NO_INDEXES = SegmentIndexSpec()


def index_spec_of(table: TableMeta, index: MaterializedIndexMeta) -> SegmentIndexSpec:
    """The bitmap / bloom filter indexes of `table` on the columns `index` (base or rollup)
    stores."""
    stored = {c.lower() for c in index.columns}
    bitmap = frozenset(
        c.lower() for d in table.indexes if d.index_type.upper() in BITMAP_INDEX_TYPES
        for c in d.columns if c.lower() in stored
    )
    raw = table.property("bloom_filter_columns") or ""
    bloom = frozenset(n.strip().lower() for n in raw.split(",") if n.strip().lower() in stored)
    fpp_text = table.property("bloom_filter_fpp")
    fpp = float(fpp_text) if fpp_text else DEFAULT_BLOOM_FILTER_FPP
    if not bitmap and not bloom:
        return NO_INDEXES
    return SegmentIndexSpec(bitmap, bloom, fpp)


def spec_signature(spec: SegmentIndexSpec) -> str:
    """A canonical text of `spec`, recorded in RowsetMeta.index_spec by every rowset writer:
    equal texts mean the same indexes ("" for none)."""
    if spec.empty:
        return ""
    return (f"bitmap={','.join(sorted(spec.bitmap_columns))};"
            f"bloom={','.join(sorted(spec.bloom_filter_columns))};"
            f"fpp={spec.bloom_filter_fpp if spec.bloom_filter_columns else ''}")
