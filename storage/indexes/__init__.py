"""Segment indexes (seed 003): short key (prefix), ordinal, zone map, and the user-declared
bitmap index (bitmap_index.py) and bloom filters (bloom_filter.py); spec.py says which of the
latter a segment is written with.
"""
