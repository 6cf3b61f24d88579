"""sql/functions/nested.py against a pure-Python reference on random arrays and maps (NULL
containers, NULL elements, empty values, negative and out-of-range indexes), and
shaledb_spark's reading of Doris' nested text back into Spark values."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sql.functions import EvalEnv, scalar_function
from sql.functions.vector import Vec, object_array
from storage.types import BIGINT, INT, STRING, array_of, map_of

_arrays = st.lists(st.none() | st.lists(st.none() | st.integers(-3, 3), max_size=5),
                   min_size=1, max_size=12)
_maps = st.lists(st.none() | st.dictionaries(st.sampled_from("abcd"), st.none() |
                                               st.integers(-3, 3), max_size=4),
                 min_size=1, max_size=12)


def _nested_vec(t, values) -> Vec:  # type: ignore[no-untyped-def]
    import numpy as np

    cells = [b"" if v is None else t.to_physical(v) for v in values]
    valid = np.array([v is not None for v in values])
    return Vec(t, object_array(cells), None if valid.all() else valid)


def _scalar_vec(t, values) -> Vec:  # type: ignore[no-untyped-def]
    import numpy as np

    valid = np.array([v is not None for v in values])
    if t.is_string:
        data = object_array(["" if v is None else v for v in values])
    else:
        data = np.array([0 if v is None else v for v in values], dtype=t.numpy_dtype)
    return Vec(t, data, None if valid.all() else valid)


def _run(name: str, args: list[Vec]) -> list[object]:
    fn = scalar_function(name)
    out = fn.impl(args, EvalEnv(len(args[0])))
    if fn.propagate_nulls:  # the compiler's part: NULL wherever an argument is NULL
        import numpy as np

        valid = np.ones(len(out), dtype=bool)
        for a in args:
            if a.validity is not None:
                valid &= a.validity
        if out.validity is not None:
            valid &= out.validity
        out = out.with_validity(valid)
    vals = out.data.tolist()
    res = [None if out.validity is not None and not out.validity[i] else vals[i]
           for i in range(len(vals))]
    if out.type.is_nested:
        return [None if r is None else out.type.to_python(r) for r in res]
    return res


@settings(max_examples=150, deadline=None)
@given(_arrays, st.integers(-6, 6), st.integers(-3, 3))
def test_array_functions(arrays, index, probe) -> None:  # type: ignore[no-untyped-def]
    t = array_of(INT)
    arr = _nested_vec(t, arrays)
    n = len(arrays)

    def element(a):  # type: ignore[no-untyped-def]
        if a is None or index == 0 or abs(index) > len(a):
            return None
        return a[index - 1] if index > 0 else a[index]

    assert _run("element_at", [arr, _scalar_vec(BIGINT, [index] * n)]) == \
        [element(a) for a in arrays]
    assert _run("array_size", [arr]) == [None if a is None else len(a) for a in arrays]
    assert _run("array_contains", [arr, _scalar_vec(INT, [probe] * n)]) == \
        [None if a is None else int(probe in a) for a in arrays]


@settings(max_examples=150, deadline=None)
@given(_maps, st.sampled_from("abcde"))
def test_map_functions(maps, key) -> None:  # type: ignore[no-untyped-def]
    t = map_of(STRING, INT)
    m = _nested_vec(t, maps)
    n = len(maps)
    keys = _scalar_vec(STRING, [key] * n)
    assert _run("element_at", [m, keys]) == [None if x is None else x.get(key) for x in maps]
    assert _run("map_keys", [m]) == [None if x is None else list(x) for x in maps]
    assert _run("map_values", [m]) == [None if x is None else list(x.values()) for x in maps]
    assert _run("map_contains_key", [m, keys]) == \
        [None if x is None else int(key in x) for x in maps]
    assert _run("size", [m]) == [None if x is None else len(x) for x in maps]


def test_spark_reads_doris_text() -> None:
    import datetime as dt
    from decimal import Decimal

    from shaledb_spark.types import nested_from_text, nested_spark_type

    cases = [
        ("ARRAY<DECIMAL(10,2)>", "[1.25, null]", [Decimal("1.25"), None]),
        ("MAP<TEXT,BIGINT>", '{"x":1, "y":null}', [("x", 1), ("y", None)]),
        ("MAP<INT,ARRAY<DATE>>", '{1:["2020-01-02"]}', [(1, [dt.date(2020, 1, 2)])]),
        ("STRUCT<f1:INT,f2:TEXT>", '{"f1":1, "f2":"é"}', {"f1": 1, "f2": "é"}),
        ("ARRAY<ARRAY<TEXT>>", '[["a", "b, c"], [], null]', [["a", "b, c"], [], None]),
        ("ARRAY<DATETIME(3)>", '["2024-01-02 03:04:05.123"]',
         [dt.datetime(2024, 1, 2, 3, 4, 5, 123000)]),
    ]
    for type_text, text, value in cases:
        assert nested_from_text(nested_spark_type(type_text), text) == value
