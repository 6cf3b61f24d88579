"""Temporary partitions (Doris 2.1 "Temporary partition"): ADD / DROP TEMPORARY PARTITION and
REPLACE PARTITION (..) WITH TEMPORARY PARTITION (..).

A temporary partition is a PartitionMeta with `temporary=True`: the catalog keeps it apart from
the formal partitions (Catalog.partitions(table_id, temporary=True)), so queries and loads that
do not name it never see it. Temporary ranges may overlap formal ones but not each other, and a
name is unique across both sets. REPLACE swaps formal partitions for temporary ones in one
catalog commit: a query that captured the old partitions' versions keeps reading their rowsets
(the files go only after the commit), later queries see the new partitions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sql.ddl.partitions import (
    PartitionSpec,
    _overlaps,
    list_text,
    range_text,
    resolve_list,
    resolve_range,
)
from sql.errors import DorisError, ErrorCode
from storage.catalog.meta import PartitionMeta, PartitionType, TableMeta
from storage.catalog.service import (
    check_alter_allowed,
    create_partition,
    remove_partition,
    swap_partitions,
)
from storage.engine import StorageEngine
from storage.partition import bound_key, key_of
from storage.types import DataType, TypeKind

REPLACE_PROPERTIES = ("strict_range", "use_temp_partition_name")


def _named(parts: Sequence[PartitionMeta], name: str) -> PartitionMeta | None:
    return next((p for p in parts if p.name.lower() == name.lower()), None)


def add_temporary_partition(
    engine: StorageEngine, table: TableMeta, spec: PartitionSpec, buckets: int | None,
) -> None:
    """ALTER TABLE t ADD TEMPORARY PARTITION tp .. [DISTRIBUTED BY .. BUCKETS n]."""
    cat = engine.catalog
    with cat.lock:
        if table.partition_info.type is PartitionType.UNPARTITIONED:
            raise DorisError(
                f"Table[{table.name}] is not a partitioned table, can not add partition")
        # a rollup job would not fill the new partition's tablets of its shadow index
        check_alter_allowed(cat, table)
        formal = cat.partitions(table.table_id)
        temporary = cat.partitions(table.table_id, temporary=True)
        if _named(formal, spec.name) or _named(temporary, spec.name):
            raise DorisError(f"Duplicate partition name {spec.name}", ErrorCode.SAME_NAME_PARTITION)
        nbuckets = buckets if buckets is not None else table.distribution.buckets
        if nbuckets <= 0:
            raise DorisError("Number of hash distribution should be greater than zero.")
        types = [table.column(c).type for c in table.partition_info.columns]
        lower = upper = None
        values: tuple[tuple[str | None, ...], ...] = ()
        # checked against the other temporary partitions only: formal ranges may overlap
        if table.partition_info.type is PartitionType.RANGE:
            lower, upper = resolve_range(types, spec, temporary)
        else:
            values = resolve_list(types, spec, temporary)
        replicas = formal[0].replication_num if formal else 1
        create_partition(engine, table, spec.name, nbuckets, replicas, lower, upper, values,
                         temporary=True)


def refuse_with_temporary_partitions(engine: StorageEngine, table: TableMeta) -> None:
    """Doris refuses rollup and schema changes while temporary partitions exist (a REPLACE
    would bring in partitions the job never converted)."""
    if engine.catalog.partitions(table.table_id, temporary=True):
        raise DorisError("Can not alter table when there are temp partitions in table")


def drop_temporary_partition(engine: StorageEngine, table: TableMeta, name: str,
                             if_exists: bool) -> None:
    """ALTER TABLE t DROP TEMPORARY PARTITION [IF EXISTS] tp."""
    cat = engine.catalog
    with cat.lock:
        part = _named(cat.partitions(table.table_id, temporary=True), name)
        if part is None:
            if if_exists:
                return
            raise DorisError(f"Error in list of partitions to {name}",
                             ErrorCode.DROP_PARTITION_NON_EXISTENT)
        remove_partition(engine, part)


def _flag(props: Mapping[str, str], key: str, default: bool) -> bool:
    text = props.get(key)
    if text is None:
        return default
    if text.strip().lower() not in ("true", "false"):
        raise DorisError(f"Invalid {key} property value: {text}")
    return text.strip().lower() == "true"


def _merged(types: Sequence[DataType], parts: Sequence[PartitionMeta]) -> list[tuple]:
    """The ranges of `parts` as sorted [lo, up) intervals, adjacent ones merged (Doris'
    "exactly same": {[0, 10), [10, 20)} equals {[0, 20)})."""
    ivs = sorted(((bound_key(types, p.lower), bound_key(types, p.upper), p) for p in parts),
                 key=lambda iv: (iv[0] is not None, iv[0]))
    out: list[list] = []
    for lo, up, p in ivs:
        if out and out[-1][1] is not None and lo is not None and out[-1][1] == lo:
            out[-1][1], out[-1][3] = up, p  # extend; keep the last part for its upper text
        else:
            out.append([lo, up, p, p])
    return [tuple(iv) for iv in out]


def _check_strict_range(table: TableMeta, old: Sequence[PartitionMeta],
                        new: Sequence[PartitionMeta]) -> None:
    types = [table.column(c).type for c in table.partition_info.columns]
    a, b = _merged(types, old), _merged(types, new)
    for x, y in zip(a, b):
        if x[0] != y[0]:
            raise DorisError("2 range lists are not stricly matched. "
                             f"{_key_text(types, x[2].lower)} vs. {_key_text(types, y[2].lower)}")
        if x[1] != y[1]:
            raise DorisError("2 range lists are not stricly matched. "
                             f"{_key_text(types, x[3].upper, True)} vs. "
                             f"{_key_text(types, y[3].upper, True)}")
    if len(a) != len(b):
        raise DorisError("2 range lists are not stricly matched. "
                         f"{len(a)} ranges vs. {len(b)} ranges")


def _key_text(types: Sequence[DataType], values: tuple[str, ...] | None, upper: bool = False
              ) -> str:
    """One bound as Doris' PartitionKey prints it (`types: [INT]; keys: [10]; `)."""
    whole = range_text(types, None if upper else values, values if upper else None)
    lower_text, _, upper_text = whole[1:-2].partition("; ..")
    return (upper_text + "; ") if upper else (lower_text + "; ")


def replace_partitions(engine: StorageEngine, table: TableMeta, names: Sequence[str],
                       temp_names: Sequence[str], props: Mapping[str, str]) -> None:
    """ALTER TABLE t REPLACE PARTITION (p, ..) WITH TEMPORARY PARTITION (tp, ..) [PROPERTIES
    ("strict_range" = "true", "use_temp_partition_name" = "false")], one catalog commit."""
    unknown = [k for k in props if k not in REPLACE_PROPERTIES]
    if unknown:
        raise DorisError(f"Unknown properties: {{{', '.join(f'{k}={props[k]}' for k in unknown)}}}")
    strict = _flag(props, "strict_range", True)
    use_temp_name = _flag(props, "use_temp_partition_name", False)
    cat = engine.catalog
    with cat.lock:
        formal = cat.partitions(table.table_id)
        temporary = cat.partitions(table.table_id, temporary=True)
        old: list[PartitionMeta] = []
        for n in names:
            p = _named(formal, n)
            if p is None:
                raise DorisError(f"Partition[{n}] does not exist")
            old.append(p)
        new: list[PartitionMeta] = []
        for n in temp_names:
            p = _named(temporary, n)
            if p is None:
                raise DorisError(f"Temp partition[{n}] does not exist")
            new.append(p)
        if table.partition_info.type is PartitionType.RANGE:
            if strict:
                _check_strict_range(table, old, new)
            else:
                _check_no_conflict(table, [p for p in formal if p not in old], new)
        elif table.partition_info.type is PartitionType.LIST:
            _check_list(table, [p for p in formal if p not in old], old, new, strict)
        swap_partitions(engine, old, new, rename=not use_temp_name and len(old) == len(new))


def _check_no_conflict(table: TableMeta, kept: Sequence[PartitionMeta],
                       new: Sequence[PartitionMeta]) -> None:
    types = [table.column(c).type for c in table.partition_info.columns]
    for n in new:
        for k in kept:
            if _overlaps(types, k, n.lower, n.upper):
                raise DorisError(
                    f"Range {range_text(types, n.lower, n.upper)} is intersected with range: "
                    f"{range_text(types, k.lower, k.upper)}")


def _check_list(table: TableMeta, kept: Sequence[PartitionMeta], old: Sequence[PartitionMeta],
                new: Sequence[PartitionMeta], strict: bool) -> None:
    """LIST tables, as Doris' OlapTable.checkPartition: with strict_range the replaced and the
    replacing value lists must match (ListUtil.checkPartitionKeyListsMatch); without it no value
    of a replacing partition may belong to a partition that stays (checkListsConflict)."""
    types = [table.column(c).type for c in table.partition_info.columns]
    if strict:
        _check_list_match(types, list(old), list(new))
        return
    for p in new:
        for v in p.list_values:
            for k in kept:
                if v in k.list_values:
                    raise DorisError(f"The partition key[{_key_sql(types, v)}] is overlap with "
                                     f"current {_item_text(types, k)}")


def _physical(types: Sequence[DataType], value: tuple[str | None, ...]) -> list[object]:
    return [None if x is None else t.to_physical(x) for t, x in zip(types, value)]


def _key_string(types: Sequence[DataType], value: tuple[str | None, ...]) -> str:
    """Doris PartitionKey.toString(): `types: [INT]; keys: [1]; `."""
    return list_text(types, (value,))[1:-1]


def _keys_string(types: Sequence[DataType], values: Sequence[tuple[str | None, ...]]) -> str:
    return "[" + ", ".join(_key_string(types, v) for v in values) + "]"  # java List.toString


def _item_text(types: Sequence[DataType], p: PartitionMeta) -> str:
    """Doris ListPartitionItem.toString()."""
    return "partitionKeys: [" + "".join(_key_string(types, v) for v in p.list_values) + "]; "


def _key_sql(types: Sequence[DataType], value: tuple[str | None, ...]) -> str:
    """Doris PartitionKey.toSql(): `("a", "1")`, dates single-quoted, NULL bare."""
    out = []
    for t, x in zip(types, value):
        if x is None:
            out.append("NULL")
        elif t.kind in (TypeKind.DATE, TypeKind.DATETIME):
            out.append(f"'{x}'")
        else:
            out.append(f'"{x}"')
    return "(" + ", ".join(out) + ")"


def _check_list_match(types: Sequence[DataType], old: list[PartitionMeta],
                      new: list[PartitionMeta]) -> None:
    """Doris ListUtil.checkPartitionKeyListsMatch, step for step (items sorted by their first
    key, then walked in parallel, a longer item's surplus carried to the next one)."""
    list1, list2 = (sorted(ps, key=lambda p: key_of(_physical(types, p.list_values[0])))
                    for ps in (old, new))
    i1 = i2 = 0
    keys1, keys2 = list(list1[0].list_values), list(list2[0].list_values)
    while True:
        for a, b in zip(keys1, keys2):
            if key_of(_physical(types, a)) != key_of(_physical(types, b)):
                raise DorisError("2 partition key lists are not matched. "
                                 f"{_keys_string(types, keys1)} vs. {_keys_string(types, keys2)}")
        diff = len(keys1) - len(keys2)
        if diff == 0:
            i1, i2 = i1 + 1, i2 + 1
            if i1 == len(list1) or i2 == len(list2):
                break
            keys1, keys2 = list(list1[i1].list_values), list(list2[i2].list_values)
        elif diff > 0:
            i2 += 1
            if i2 == len(list2):
                break
            keys1 = [k for k in keys1 if k not in keys2]
            keys2 = list(list2[i2].list_values)
        else:
            i1 += 1
            if i1 == len(list1):
                break
            keys2 = [k for k in keys2 if k not in keys1]
            keys1 = list(list1[i1].list_values)
    if i1 < len(list1) or i2 < len(list2):
        items1 = "[" + ", ".join(_item_text(types, p) for p in list1) + "]"
        items2 = "[" + ", ".join(_item_text(types, p) for p in list2) + "]"
        raise DorisError(f"2 partition key lists are not matched. {items1} vs. {items2}")
