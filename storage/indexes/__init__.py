"""Segment indexes (seed 003): short key (prefix), ordinal and zone map.

Bitmap and bloom filter indexes are not built yet; DESIGN.md section 7 reserves them.
"""
