"""GROUP BY ROLLUP / CUBE / GROUPING SETS (and MySQL's `WITH ROLLUP`) as Doris plans them: one
Repeat below one aggregation (a single pass over the input), rewritten on the parsed SELECT
before binding and finished on the bound one.

Owns the expansion of a GROUP BY clause into its grouping sets (the cross product of its
elements: a plain expression is one set of itself, `ROLLUP(a, b)` is `(a, b), (a), ()`,
`CUBE(a, b)` every subset, `GROUPING SETS (..)` its listed sets) and the Repeat that runs them
(`prepare` + `attach`): the SELECT is bound as a plain `GROUP BY <every key>, <set id>,
<GROUPING columns>`, whose `GROUPING(e)` / `GROUPING_ID(e1, .., en)` calls read constant
columns of the Repeat (`GROUPING(e)` is 1 when `e` is outside the set, `GROUPING_ID` those bits
with `e1` the most significant, as in Doris); `attach` then points the aggregate's keys at
the Repeat's copies of the keys, which are NULL in the rows repeated for the sets that leave
them out. Aggregate arguments keep reading the input columns, so `sum(a)` under `ROLLUP(a)`
sums the real values. The set id (the set's position, not its grouping id) keeps duplicate
sets apart, as a UNION ALL would.

`expand` keeps the older plan, a UNION ALL of one GROUP BY per set (one scan of the input per
set), for the one case the single pass cannot express: two keys written differently that
bind to the same expression (`GROUP BY ROLLUP(1, a)` with `a` the first select item).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from sqlglot import exp

from sql.binder.expressions import ColumnRef
from sql.binder.naming import generated_name, select_item_texts
from sql.binder.relations import BoundSelect, RelColumn, RepeatSpec
from sql.errors import DorisError
from sql.functions import is_aggregate
from storage.types import BIGINT

# Doris caps grouping sets by its 64-bit grouping id.
MAX_GROUPING_SETS = 64

REPEAT_ALIAS = "__repeat"  # the scope entry of the Repeat's constant columns
SET_ID = "__repeat_id"


def has_grouping_sets(select: exp.Select) -> bool:
    group = select.args.get("group")
    if group is None:
        return False
    return bool(any(group.args.get(k) for k in ("rollup", "cube", "grouping_sets"))
                or any(isinstance(g, exp.Rollup | exp.Cube | exp.GroupingSets)
                       for g in group.expressions))


def _items(node: exp.Expression) -> list[exp.Expression]:
    """The expressions of one grouping set written as `(a, b)`, `(a)`, `()` or `a`."""
    if isinstance(node, exp.Tuple):
        return list(node.expressions)
    if isinstance(node, exp.Paren):
        return [node.this]
    return [node]


def _sets_of(element: exp.Expression) -> list[list[exp.Expression]]:
    if isinstance(element, exp.Rollup):
        parts = [_items(e) for e in element.expressions]
        return [list(itertools.chain.from_iterable(parts[:n])) for n in range(len(parts), -1, -1)]
    if isinstance(element, exp.Cube):
        parts = [_items(e) for e in element.expressions]
        out = []
        for keep in itertools.product((True, False), repeat=len(parts)):
            out.append([e for k, p in zip(keep, parts) if k for e in p])
        return out
    if isinstance(element, exp.GroupingSets):
        out = []
        for s in element.expressions:
            if isinstance(s, exp.Rollup | exp.Cube | exp.GroupingSets):
                out.extend(_sets_of(s))
            else:
                out.append(_items(s))
        return out
    return [[element]]


def grouping_sets(group: exp.Group) -> list[list[exp.Expression]]:
    """Every grouping set of a GROUP BY clause, in Doris' order (ROLLUP from the full set)."""
    elements: list[exp.Expression] = list(group.expressions)
    if group.args.get("rollup"):  # MySQL `GROUP BY a, b WITH ROLLUP`
        elements = [exp.Rollup(expressions=elements)]
    for key in ("cube", "grouping_sets"):  # the clause forms sqlglot keeps apart
        for extra in group.args.get(key) or []:
            elements.append(extra)
    sets: list[list[exp.Expression]] = [[]]
    for element in elements:
        sets = [s + t for s in sets for t in _sets_of(element)]
        if len(sets) > MAX_GROUPING_SETS:
            break
    if len(sets) > MAX_GROUPING_SETS:
        raise DorisError(f"Too many grouping sets: {len(sets)} > {MAX_GROUPING_SETS}; "
                         "list the sets you need with GROUPING SETS (..)")
    return sets


def _is_aggregate(e: exp.Expression) -> bool:
    """An aggregate call (sqlglot's, or one of ours sqlglot parses as a plain function)."""
    if isinstance(e, exp.AggFunc):
        return True
    if isinstance(e, exp.Anonymous):
        return is_aggregate(e.name)
    return isinstance(e, exp.Func) and is_aggregate(e.sql_name())


def _same(a: exp.Expression, b: exp.Expression) -> bool:
    if isinstance(a, exp.Column) and isinstance(b, exp.Column):
        if a.name.lower() != b.name.lower():
            return False
        return not a.table or not b.table or a.table.lower() == b.table.lower()
    return a == b


def _index_of(e: exp.Expression, exprs: list[exp.Expression]) -> int:
    return next((i for i, g in enumerate(exprs) if _same(e, g)), -1)


def _for_set(node: exp.Expression, all_keys: list[exp.Expression],
             in_set: list[bool]) -> exp.Expression:
    """`node` as the branch of one grouping set computes it (see the module docstring)."""

    def grouping_bits(args: list[exp.Expression], what: str) -> int:
        bits = 0
        for a in args:
            k = _index_of(a, all_keys)
            if k < 0:
                raise DorisError(f"Column in {what} does not exist in GROUP BY clause: {a.sql()}")
            bits = (bits << 1) | (0 if in_set[k] else 1)
        return bits

    def walk(e: exp.Expression) -> exp.Expression:
        if isinstance(e, exp.GroupingId):
            return exp.Literal.number(grouping_bits(list(e.expressions), "GROUPING_ID"))
        if isinstance(e, exp.Grouping):
            args = list(e.expressions) or ([e.this] if e.this is not None else [])
            return exp.Literal.number(grouping_bits(args, "GROUPING"))
        if _is_aggregate(e) or isinstance(e, exp.Subquery | exp.Select):
            return e.copy()
        k = _index_of(e, all_keys)
        if k >= 0 and not in_set[k]:
            return exp.Null()
        if k >= 0:
            return e.copy()
        out = e.copy()
        for key, value in e.args.items():
            if isinstance(value, exp.Expression):
                out.set(key, walk(value))
            elif isinstance(value, list):
                out.set(key, [walk(v) if isinstance(v, exp.Expression) else v for v in value])
        return out

    return walk(node)


def _named(e: exp.Expression, name: str) -> exp.Alias:
    # exp.alias_ would set a subquery's own alias (a derived table) instead of naming the item
    return exp.Alias(this=e, alias=exp.to_identifier(name))


def expand(select: exp.Select, sql: str | None) -> exp.Select:
    """The SELECT with its grouping sets as `SELECT <labels> FROM (<branch> UNION ALL ..)
    ORDER BY .. LIMIT ..`; `sql` (the statement text, when known) gives the labels."""
    if any(isinstance(n, exp.Window) for item in select.expressions for n in item.walk()):
        raise DorisError("window functions with GROUPING SETS / ROLLUP / CUBE are not "
                         "supported yet")
    group = select.args["group"]
    sets = grouping_sets(group)
    all_keys: list[exp.Expression] = []
    for s in sets:
        for e in s:
            if _index_of(e, all_keys) < 0:
                all_keys.append(e)

    items = list(select.expressions)
    texts = select_item_texts(sql, len(items))
    labels: list[str] = []
    for i, item in enumerate(items):
        node = item.this if isinstance(item, exp.Alias) else item
        if isinstance(node, exp.Star) or (isinstance(node, exp.Column)
                                          and isinstance(node.this, exp.Star)):
            raise DorisError("SELECT * is not allowed with GROUPING SETS / ROLLUP / CUBE")
        if isinstance(item, exp.Alias):
            labels.append(item.alias)
        elif isinstance(node, exp.Column):
            labels.append(node.name)
        elif texts is not None:
            labels.append(texts[i])
        else:
            labels.append(generated_name(node))
    nodes = [item.this if isinstance(item, exp.Alias) else item for item in items]

    # ORDER BY keys: an ordinal, a select alias, a select item, or else a hidden column
    order = select.args.get("order")
    hidden: list[exp.Expression] = []
    outer_order: list[exp.Ordered] = []
    for o in (order.expressions if order is not None else []):
        key = o.this
        target: str
        if isinstance(key, exp.Literal) and not key.is_string:
            k = int(key.this)
            if not 1 <= k <= len(items):
                raise DorisError(f"ORDER BY position {k} is not in select list")
            target = f"__gs{k - 1}"
        else:
            k = next((i for i, item in enumerate(items) if isinstance(item, exp.Alias)
                      and isinstance(key, exp.Column) and not key.table
                      and item.alias.lower() == key.name.lower()), -1)
            if k < 0:
                k = _index_of(key, nodes)
            if k >= 0:
                target = f"__gs{k}"
            else:
                target = f"__gso{len(hidden)}"
                hidden.append(key)
        outer_order.append(exp.Ordered(this=exp.column(target), desc=o.args.get("desc"),
                                       nulls_first=o.args.get("nulls_first")))

    branches: list[exp.Select] = []
    having = select.args.get("having")
    for s in sets:
        in_set = [_index_of(k, s) >= 0 for k in all_keys]
        branch = exp.Select(
            expressions=[_named(_for_set(n, all_keys, in_set), f"__gs{i}")
                         for i, n in enumerate(nodes)]
            + [_named(_for_set(h, all_keys, in_set), f"__gso{j}")
               for j, h in enumerate(hidden)])
        for key in ("from_", "joins", "where", "laterals"):
            value = select.args.get(key)
            if value is not None:
                branch.set(key, value.copy() if isinstance(value, exp.Expression)
                           else [v.copy() for v in value])
        if s:
            branch.set("group", exp.Group(expressions=[e.copy() for e in s]))
        if having is not None:
            branch.set("having", exp.Having(this=_for_set(having.this, all_keys, in_set)))
        branches.append(branch)

    union: exp.Expression = branches[0]
    for b in branches[1:]:
        union = exp.Union(this=union, expression=b, distinct=False)
    outer = exp.Select(
        expressions=[exp.alias_(exp.column(f"__gs{i}"), label, quoted=True)
                     for i, label in enumerate(labels)])
    outer.set("from_", exp.From(this=exp.Subquery(
        this=union, alias=exp.TableAlias(this=exp.to_identifier("__grouping_sets")))))
    if select.args.get("distinct") is not None:
        outer.set("distinct", select.args["distinct"].copy())
    if outer_order:
        outer.set("order", exp.Order(expressions=outer_order))
    for key in ("limit", "offset", "with_"):
        if select.args.get(key) is not None:
            outer.set(key, select.args[key].copy())
    return outer


# ---- the single-pass plan: Repeat + one aggregate ------------------------------------------


@dataclass(frozen=True, slots=True)
class Prepared:
    """A grouping-sets SELECT made plain (`select`), with what `attach` needs afterwards."""

    select: exp.Select
    key_count: int
    sets: tuple[tuple[int, ...], ...]
    virtual_names: tuple[str, ...]
    virtual_values: tuple[tuple[int, ...], ...]

    def scope_columns(self) -> tuple[RelColumn, ...]:
        """The Repeat's constant columns, visible to the SELECT as `__repeat.<name>`."""
        return tuple(RelColumn(n, n, BIGINT) for n in (SET_ID, *self.virtual_names))


def _check_select_list(select: exp.Select) -> None:
    for item in select.expressions:
        node = item.this if isinstance(item, exp.Alias) else item
        if isinstance(node, exp.Star) or (isinstance(node, exp.Column)
                                          and isinstance(node.this, exp.Star)):
            raise DorisError("SELECT * is not allowed with GROUPING SETS / ROLLUP / CUBE")


def _distinct_keys(sets: list[list[exp.Expression]]) -> list[exp.Expression]:
    keys: list[exp.Expression] = []
    for s in sets:
        for e in s:
            if _index_of(e, keys) < 0:
                keys.append(e)
    return keys


GROUPING_PREFIX = "GROUPING_PREFIX_"


def _virtual_name(args: list[exp.Expression], taken: list[str]) -> str:
    """Doris' name for a GROUPING() / GROUPING_ID() column (Nereids' LogicalGroupBy
    GROUPING_PREFIX plus the arguments joined by `_`), so EXPLAIN shows what Doris shows.
    grouping_id(a, b) and grouping(a_b) would share a name; the later one gets a suffix."""
    base = GROUPING_PREFIX + "_".join(a.name if isinstance(a, exp.Column) else a.sql()
                                      for a in args)
    name, n = base, 1
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    return name


def prepare(select: exp.Select) -> Prepared:
    """The SELECT as a plain GROUP BY over every key plus the Repeat's constant columns, its
    GROUPING() / GROUPING_ID() calls replaced by those columns (see the module docstring)."""
    _check_select_list(select)
    sets = grouping_sets(select.args["group"])
    keys = _distinct_keys(sets)
    in_sets = [[_index_of(k, s) >= 0 for k in keys] for s in sets]
    virtual_names: list[str] = []
    virtual_values: list[tuple[int, ...]] = []
    by_call: dict[str, str] = {}

    def grouping_column(e: exp.Expression, args: list[exp.Expression], what: str) -> exp.Column:
        positions = []
        for a in args:
            k = _index_of(a, keys)
            if k < 0:
                raise DorisError(f"Column in {what} does not exist in GROUP BY clause: {a.sql()}")
            positions.append(k)
        text = e.sql()
        name = by_call.get(text)
        if name is None:
            name = by_call[text] = _virtual_name(args, virtual_names)
            values = []
            for in_set in in_sets:
                bits = 0
                for k in positions:
                    bits = (bits << 1) | (0 if in_set[k] else 1)
                values.append(bits)
            virtual_names.append(name)
            virtual_values.append(tuple(values))
        return exp.column(name, table=REPEAT_ALIAS)

    def replace_calls(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.GroupingId):
            return grouping_column(node, list(node.expressions), "GROUPING_ID")
        if isinstance(node, exp.Grouping):
            args = list(node.expressions) or ([node.this] if node.this is not None else [])
            return grouping_column(node, args, "GROUPING")
        return node

    plain = select.copy()
    for key in ("expressions", "having", "order"):
        value = plain.args.get(key)
        if isinstance(value, list):
            plain.set(key, [v.transform(replace_calls) for v in value])
        elif value is not None:
            plain.set(key, value.transform(replace_calls))
    group = [k.copy() for k in keys] + [exp.column(n, table=REPEAT_ALIAS)
                                        for n in (SET_ID, *virtual_names)]
    plain.set("group", exp.Group(expressions=group))
    return Prepared(plain, len(keys),
                    tuple(tuple(i for i, kept in enumerate(in_set) if kept) for in_set in in_sets),
                    tuple(virtual_names), tuple(virtual_values))


def attach(bound: BoundSelect, prepared: Prepared) -> BoundSelect | None:
    """The bound plain SELECT with its aggregate over the Repeat; None when two keys bound to
    one expression (the caller falls back to `expand`)."""
    n = prepared.key_count
    if len(bound.group_by) != n + 1 + len(prepared.virtual_names):
        return None
    keys = bound.group_by[:n]
    names = tuple(f"__rk{i}" for i in range(n))
    spec = RepeatSpec(names, tuple(e for _, e in keys), prepared.sets, SET_ID,
                      prepared.virtual_names, prepared.virtual_values)
    group_by = tuple((g, ColumnRef(r, e.type)) for (g, e), r in zip(keys, names))
    return replace(bound, group_by=group_by + bound.group_by[n:], repeat=spec)
