"""ScanStats: the counters a storage scan reports (segments, pages and rows read or skipped).

Segment readers add to one mutable `ScanStats` as they prune and decode; the tablet reader sums
them over segments and the executor shows them in the query profile (Doris' `SegmentIterator`
profile counters: RowsKeyRangeFiltered, RowsStatsFiltered, RowsVectorPredFiltered, ...).
Row counters partition the rows a scan looked at:
`rows_total == rows_skipped_short_key + rows_skipped_zone_map + rows_skipped_bitmap_index
+ rows_skipped_bloom_filter + rows_filtered_predicate + rows_returned`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields


@dataclass(slots=True)
class ScanStats:
    segments_read: int = 0  # segments whose pages were (at least partly) read
    segments_skipped: int = 0  # segments excluded whole (segment zone map or empty key range)
    segments_skipped_zone_map: int = 0  # of those, excluded by their segment-level zone map
    rowsets_read: int = 0  # data rowsets the tablet reader read (some segment not excluded)
    rowsets_skipped: int = 0  # data rowsets whose every segment the zone maps excluded
    pages_read: int = 0  # data pages the scan used (decoded now or taken from the page cache)
    pages_cached: int = 0  # of those, pages served by the storage page cache
    pages_skipped_zone_map: int = 0  # data pages of predicate columns excluded by page zone maps
    pages_skipped_bloom_filter: int = 0  # data pages excluded by their bloom filter
    pages_skipped_bitmap_index: int = 0  # data pages holding no row the bitmap indexes selected
    # DICT string pages whose dictionary has no entry satisfying the column's predicates: no
    # row of theirs is tested or gathered (storage/segment/dict_codes.py)
    pages_skipped_dictionary: int = 0
    bitmap_index_filter_ns: int = 0  # time spent reading and combining bitmap indexes
    bloom_filter_ns: int = 0  # time spent reading and probing bloom filters
    rows_total: int = 0  # rows in all segments the scan opened
    rows_skipped_short_key: int = 0  # rows outside the short-key row ranges
    rows_skipped_zone_map: int = 0  # rows in pages / segments excluded by zone maps
    rows_skipped_bitmap_index: int = 0  # rows the bitmap indexes excluded before decoding
    rows_skipped_bloom_filter: int = 0  # rows in pages the bloom filters excluded
    rows_filtered_predicate: int = 0  # rows decoded and rejected by exact predicate evaluation
    rows_returned: int = 0
    bytes_read: int = 0  # stored bytes of the pages read (data and index pages)

    def add(self, other: ScanStats) -> None:
        """Add `other`'s counters into this one (summing over segments or tablets)."""
        for name in _COUNTERS:  # names computed once: `fields()` per call showed in profiles
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


_COUNTERS = tuple(f.name for f in fields(ScanStats))
