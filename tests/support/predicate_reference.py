"""SQL semantics of one storage predicate (storage/predicates.py operators) in plain Python: the
reference the storage scan property tests compare rows with (tests/unit/storage/: test_scan_plan,
test_selection_vectors, test_covered_predicates, test_index_scan_property,
test_dict_scan_property). NULL (None) satisfies only IS NULL; `str` order is code point order,
which is UTF-8 byte order, as storage compares."""

from __future__ import annotations


def holds(op: str, v: object, consts: tuple[object, ...]) -> bool:
    if op == "is_null":
        return v is None
    if op == "is_not_null":
        return v is not None
    if v is None:
        return False
    if op in ("in", "in_bloom"):
        return v in consts
    if op == "in_bitmap":  # a join's runtime key set
        (keys,) = consts
        return keys.lo <= v <= keys.hi and bool(keys.bits[v - keys.lo])  # type: ignore
    if op == "not_in":
        return v not in consts
    c = consts[0]
    return {"=": v == c, "!=": v != c, "<": v < c, "<=": v <= c,  # type: ignore[operator]
            ">": v > c, ">=": v >= c}[op]  # type: ignore[operator]
