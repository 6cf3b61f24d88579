"""QueryOptions (sql/options.py) built by server/variables.py: every field comes from its session
variable, defaults come from the registry only, and a bad value is refused at SET with Doris'
MySQL error (so nothing downstream parses text or falls back to a default)."""

from __future__ import annotations

import dataclasses

import pytest

from planner.query import distribute_options, optimizer_rules_off
from server.variables import (
    VARIABLES,
    GlobalVariables,
    SessionVariables,
    default_query_options,
    query_options,
)
from sql.errors import ShaleError
from sql.options import QueryOptions

# field -> (its variable, a value a client would SET (text, as over the wire), the field's value
# after that SET). Each SET value differs from the registry's default.
SOURCES: dict[str, tuple[str, str, object]] = {
    "version": ("version", "8.0.33", "8.0.33"),  # read only: set with force below
    "disable_join_reorder": ("disable_join_reorder", "true", True),
    "disable_nereids_rules": ("disable_nereids_rules", " partition_prune , Reorder_Joins",
                              frozenset({"PARTITION_PRUNE", "REORDER_JOINS"})),
    "disable_colocate_plan": ("disable_colocate_plan", "1", True),
    "disable_colocate_join": ("disable_colocate_join", "ON", True),
    "enable_bucket_shuffle_join": ("enable_bucket_shuffle_join", "false", False),
    "broadcast_row_count_limit": ("broadcast_row_count_limit", "12345", 12345),
    "runtime_filters": ("runtime_filter_mode", "off", False),
    "parallel_fragment_exec_instance_num": ("parallel_fragment_exec_instance_num", "3", 3),
    "exec_mem_limit": ("exec_mem_limit", "1073741824", 1073741824),
    "small_fragment_rows": ("shaledb_small_fragment_rows", "0", 0),
    "query_timeout": ("query_timeout", "60", 60),
    "enable_profile": ("enable_profile", "true", True),
    "enable_insert_strict": ("enable_insert_strict", "false", False),
    "insert_max_filter_ratio": ("insert_max_filter_ratio", "0.25", 0.25),
    "group_commit": ("group_commit", "ASYNC_MODE", "async_mode"),
    "delete_without_partition": ("delete_without_partition", "true", True),
    "max_allowed_in_element_num_of_delete": ("max_allowed_in_element_num_of_delete", "7", 7),
}

# fields whose value is derived from the variable's text rather than equal to it
DERIVED_DEFAULTS = {"disable_nereids_rules": frozenset(), "runtime_filters": True}


def session() -> SessionVariables:
    return SessionVariables(GlobalVariables())


def test_every_field_has_a_source_variable() -> None:
    assert set(SOURCES) == {f.name for f in dataclasses.fields(QueryOptions)}
    for variable, _, _ in SOURCES.values():
        assert variable in VARIABLES


def test_defaults_come_from_the_registry() -> None:
    options = default_query_options()
    assert VARIABLES["runtime_filter_mode"][1] == "GLOBAL"  # what DERIVED_DEFAULTS assumes
    assert VARIABLES["disable_nereids_rules"][1] == ""
    for name, (variable, _, _) in SOURCES.items():
        expected = DERIVED_DEFAULTS.get(name, VARIABLES[variable][1])
        assert getattr(options, name) == expected, name
    # e.g. Doris' broadcast limit and instance count, without a copy of them anywhere else
    assert options.broadcast_row_count_limit == 30000000
    assert options.parallel_fragment_exec_instance_num == 8


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_each_field_reads_its_variable(name: str) -> None:
    variable, text, expected = SOURCES[name]
    variables = session()
    variables.set(variable, text, force=True)
    options = query_options(variables)
    assert getattr(options, name) == expected
    assert type(getattr(options, name)) is type(expected)
    # and nothing else moved
    assert dataclasses.replace(options, **{name: getattr(default_query_options(), name)}) == \
        default_query_options()


def test_session_value_overrides_global_value() -> None:
    global_variables = GlobalVariables()
    variables = SessionVariables(global_variables)
    global_variables.set("broadcast_row_count_limit", "100")
    assert query_options(variables).broadcast_row_count_limit == 100  # SET GLOBAL seen
    variables.set("broadcast_row_count_limit", "5")
    assert query_options(variables).broadcast_row_count_limit == 5
    assert query_options(SessionVariables(global_variables)).broadcast_row_count_limit == 100


def test_cached_options_follow_every_set() -> None:
    global_variables = GlobalVariables()
    variables = SessionVariables(global_variables)
    first = query_options(variables)
    assert query_options(variables) is first  # nothing changed: the same object
    global_variables.set("enable_profile", "true")  # SET GLOBAL, seen by the session
    assert query_options(variables).enable_profile is True
    variables.set("enable_profile", "false")
    assert query_options(variables).enable_profile is False
    variables.set("enable_profile", None)  # SET enable_profile = DEFAULT: the global value
    assert query_options(variables).enable_profile is True


def test_options_are_frozen_and_built_per_call() -> None:
    variables = session()
    before = query_options(variables)
    with pytest.raises(dataclasses.FrozenInstanceError):
        before.query_timeout = 1  # type: ignore[misc]
    variables.set("query_timeout", "5")
    assert before.query_timeout == 900  # a statement keeps the options it started with
    assert query_options(variables).query_timeout == 5


@pytest.mark.parametrize("variable, text, code, message", [
    # Doris' VariableMgr: a number that does not parse -> 1232 ER_WRONG_TYPE_FOR_VAR
    ("broadcast_row_count_limit", "lots", 1232,
     "Incorrect argument type to variable 'broadcast_row_count_limit'"),
    ("parallel_fragment_exec_instance_num", "4.5", 1232,
     "Incorrect argument type to variable 'parallel_fragment_exec_instance_num'"),
    ("exec_mem_limit", "2G", 1232, "Incorrect argument type to variable 'exec_mem_limit'"),
    ("insert_max_filter_ratio", "half", 1232,
     "Incorrect argument type to variable 'insert_max_filter_ratio'"),
    # a boolean or a choice that is not one -> 1231 ER_WRONG_VALUE_FOR_VAR
    ("enable_profile", "maybe", 1231,
     "Variable 'enable_profile' can't be set to the value of 'maybe'"),
    ("disable_join_reorder", "2", 1231,
     "Variable 'disable_join_reorder' can't be set to the value of '2'"),
    ("group_commit", "fast_mode", 1231,
     "Variable 'group_commit' can't be set to the value of 'fast_mode'"),
])
def test_bad_value_is_refused_at_set(variable: str, text: str, code: int, message: str) -> None:
    variables = session()
    with pytest.raises(ShaleError) as caught:
        variables.set(variable, text)
    assert caught.value.code == code
    assert caught.value.message == f"errCode = 2, detailMessage = {message}"  # Doris' text
    assert query_options(variables) == default_query_options()  # the old value stays


def test_planner_reads_the_typed_fields() -> None:
    variables = session()
    for name, value in (("disable_colocate_join", "true"), ("enable_bucket_shuffle_join", "0"),
                        ("broadcast_row_count_limit", "42"),
                        ("disable_nereids_rules", "OLAP_SCAN_PARTITION_PRUNE,my_rule"),
                        ("disable_join_reorder", "true")):
        variables.set(name, value)
    options = query_options(variables)

    class TwoBackends:
        def backends(self) -> list[object]:
            return [object(), object()]

    dist = distribute_options(options, TwoBackends())
    assert (dist.disable_colocate, dist.bucket_shuffle, dist.broadcast_row_limit,
            dist.backends) == (True, False, 42, 2)
    # Doris' rule names map to ours; others are taken as our own names
    assert optimizer_rules_off(options) == {"prune_scans", "my_rule", "reorder_joins"}
    assert optimizer_rules_off(default_query_options()) == frozenset()
