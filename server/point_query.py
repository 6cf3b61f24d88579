"""Short-circuit point queries: `SELECT <columns> FROM <table> WHERE <col> = <literal> [AND ..]`
answered without parsing, binding or planning once the statement's shape is known.

Doris' short-circuit point query (`enable_short_circuit_query`, a prepared-statement plan
reused for key lookups on merge-on-write UNIQUE tables) skips the planner and the fragment
machinery for the one-row lookups that dominate serving workloads. Here:

- `statement_shape(sql)` scans the text once (no sqlglot) into a shape key, the text with every
  literal replaced by a typed slot, and the literals. Texts the scanner does not understand
  (comments, backslash escapes, `?`, numbers with a fraction, ...) have no shape and always
  take the normal path.
- The first time a shape runs (normally), `learn` plans it through the normal planner and
  keeps a `PointTemplate` only when that plan is a single OLAP scan whose storage predicates are
  exactly one `column = literal` per WHERE slot, with no residual filter, limit, runtime filter
  or expression above the scan but a projection of columns. Anything else is remembered as
  "no template" for the shape.
- Later executions (`PointTemplate.run`) check the statement's privileges with the same
  `authorize` the normal path uses, check that the table, its materialized indexes and the
  session's query options are those the template was learned under (DDL, schema change,
  rollups, `SET`: the template is dropped and the statement re-planned), convert the literals
  as the binder does (a value the column type cannot hold goes to the normal path), compute
  the bucket of the key in every partition (the storage hash, storage/distribution.py) at the
  partitions' current visible versions, and read those tablets with the same `ReadOptions`
  the plan's scan would use (short key, zone maps and bloom filters go straight to the page).

The session keeps one template map per connection (current database in the key); nothing here
touches sockets or the event loop.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from sqlglot import expressions as exp

from planner.physical import Exchange, FoldedProject, OlapScan
from planner.query import PlannedQuery
from server.privileges.enforce import authorize
from sql.binder.expressions import ColumnRef
from sql.options import QueryOptions
from storage import point_lookup
from storage.batch import Batch, Column
from storage.catalog.catalog import Catalog
from storage.catalog.meta import (
    DistributionType,
    MaterializedIndexMeta,
    TableMeta,
    TabletMeta,
)
from storage.distribution import hash_columns
from storage.engine import StorageEngine
from storage.predicates import ColumnPredicate, ReadOptions
from storage.scan_stats import ScanStats
from storage.types import DataType, TypeKind

TEMPLATES_PER_SESSION = 256
BATCH_SIZE = 65536  # executor/query.py execute's batch size: the same reads as the scan

# One token of the statement text; anything the alternatives do not match ends the scan.
_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<str>'(?:[^'\\]|'')*')
  | (?P<int>-?\d+(?![\w.]))
  | (?P<ident>`[^`]+`|[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<punct>[=,*.;])
  | (?P<param>\?)
""", re.VERBOSE)

_INT_BITS = {TypeKind.TINYINT: 8, TypeKind.SMALLINT: 16, TypeKind.INT: 32, TypeKind.BIGINT: 64}
_STRING_KINDS = frozenset({TypeKind.VARCHAR, TypeKind.STRING})


@dataclass(frozen=True, slots=True)
class Shape:
    """A statement with its literals taken out: `key` (tokens, literals as `?int` / `?str`)
    and the literals' texts in order."""

    key: tuple[str, ...]
    literals: tuple[str, ...]
    kinds: tuple[str, ...]  # "int" | "str" per literal
    # where each literal is in the text (statement_shape only): LiteralSlot is built from it
    spans: tuple[tuple[int, int], ...] = field(default=(), compare=False)


def statement_shape(sql: str) -> Shape | None:
    """The shape of a `SELECT .. FROM .. WHERE ..` text, or None when the scanner does not
    understand every character (such statements always take the normal path)."""
    return _scan(sql, None)


def prepared_shape(sql: str, params: list[object]) -> Shape | None:
    """The shape of a prepared statement's text executed with `params` (COM_STMT_EXECUTE):
    the shape of the same statement written with those values as literals, so the text and
    the binary protocol share one template. Only INT and string parameters qualify. The text
    is scanned once (`_skeleton`, cached by text); each execution only places its values."""
    skeleton = _skeleton(sql)
    if skeleton is None or skeleton.count(None) != len(params):
        return None
    key: list[str] = []
    literals: list[str] = []
    kinds: list[str] = []
    values = iter(params)
    for tok in skeleton:
        if tok is not None:
            key.append(tok)
            continue
        literal = _parameter_literal(next(values))
        if literal is None:
            return None  # NULL, dates, decimals, bytes: the normal path binds them
        kind, text = literal
        key.append("?" + kind)
        literals.append(text)
        kinds.append(kind)
    return Shape(tuple(key), tuple(literals), tuple(kinds))


@functools.lru_cache(maxsize=1024)
def _skeleton(sql: str) -> tuple[str | None, ...] | None:
    """A prepared text's shape tokens with None for each `?` (literals written in the text
    stay in the key as their kind, as `_scan` gives them: the text's own literals then make a
    prepared statement a shape of its own)."""
    shape = _scan(sql, None, params_as_slots=True)
    return None if shape is None else tuple(None if t == "?param" else t for t in shape.key)


@dataclass(frozen=True, slots=True)
class LiteralSlot:
    """A learned statement text with one literal, cut around it: texts with the same prefix
    and suffix and one literal of the same kind between them have the learned shape (checked
    with string operations instead of the scanner). Only cut where the scanner's tokens cannot
    depend on the literal: after whitespace, `=` or `,`, and before whitespace, `;` or the end."""

    prefix: str
    suffix: str
    kind: str
    key: tuple[str, ...]

    @staticmethod
    def of(sql: str, shape: Shape) -> LiteralSlot | None:
        if len(shape.spans) != 1:
            return None
        start, end = shape.spans[0]
        prefix, suffix = sql[:start], sql[end:]
        if not prefix or prefix[-1] not in " \t\n\r=," or \
                (suffix and suffix[0] not in " \t\n\r;"):
            return None
        return LiteralSlot(prefix, suffix, shape.kinds[0], shape.key)

    def shape(self, sql: str) -> Shape | None:
        """The shape of `sql` when it is this slot's text with another literal, else None."""
        prefix, suffix = self.prefix, self.suffix
        if len(sql) <= len(prefix) + len(suffix) or not sql.startswith(prefix) \
                or not sql.endswith(suffix):
            return None
        literal = sql[len(prefix):len(sql) - len(suffix)]
        if self.kind == "int":
            digits = literal[1:] if literal[0] == "-" else literal
            if not (digits.isascii() and digits.isdigit()):
                return None
        elif (len(literal) < 2 or literal[0] != "'" or literal[-1] != "'"
              or "'" in literal[1:-1] or "\\" in literal):
            return None  # quotes inside (doubled or not) and escapes: the scanner decides
        return Shape(self.key, (literal,), (self.kind,))


def _scan(sql: str, params: list[object] | None, params_as_slots: bool = False
          ) -> Shape | None:
    head = sql.lstrip()[:6]
    if head.upper() != "SELECT":
        return None
    key: list[str] = []
    literals: list[str] = []
    kinds: list[str] = []
    spans: list[tuple[int, int]] = []
    next_param = 0
    pos, end = 0, len(sql)
    while pos < end:
        m = _TOKEN.match(sql, pos)
        if m is None:
            return None
        pos = m.end()
        kind = m.lastgroup
        if kind == "ws":
            continue
        text = m.group()
        if kind == "param" and params_as_slots:
            key.append("?param")
            continue
        if kind == "param":
            if params is None or next_param >= len(params):
                return None
            literal = _parameter_literal(params[next_param])
            next_param += 1
            if literal is None:
                return None  # NULL, dates, decimals, bytes: the normal path binds them
            kind, text = literal
        if kind in ("str", "int"):
            key.append("?" + kind)
            literals.append(text)
            kinds.append(str(kind))
            spans.append((m.start(), pos))
        else:
            key.append(text)
    if params is not None and next_param != len(params):
        return None
    return Shape(tuple(key), tuple(literals), tuple(kinds), tuple(spans))


@dataclass(frozen=True, slots=True)
class _Grammar:
    """What the tokens of an eligible shape say: the table and the WHERE slots' columns."""

    db: str | None
    table: str
    where_columns: tuple[str, ...]  # one per literal slot, in order


def _unquote(tok: str) -> str:
    return tok[1:-1] if tok.startswith("`") else tok


def _is_ident(tok: str) -> bool:
    return tok.startswith("`") or (tok[:1].isalpha() or tok[:1] == "_")


def _grammar(key: tuple[str, ...]) -> _Grammar | None:
    """SELECT (* | col [, col]*) FROM [db.]table WHERE col = ? [AND col = ?]* [;]"""
    toks = list(key)
    if toks and toks[-1] == ";":
        toks.pop()
    up = [t.upper() if not t.startswith("`") else t for t in toks]
    try:
        i = 1
        if up[i] == "*":
            i += 1
        else:
            while True:
                if not _is_ident(toks[i]) or up[i] in ("FROM", "WHERE"):
                    return None
                i += 1
                if up[i] != ",":
                    break
                i += 1
        if up[i] != "FROM" or not _is_ident(toks[i + 1]):
            return None
        db, table = None, _unquote(toks[i + 1])
        i += 2
        if up[i] == ".":
            if not _is_ident(toks[i + 1]):
                return None
            db, table = table, _unquote(toks[i + 1])
            i += 2
        if up[i] != "WHERE":
            return None
        i += 1
        columns = []
        while True:
            if not _is_ident(toks[i]) or toks[i + 1] != "=" or not toks[i + 2].startswith("?"):
                return None
            columns.append(_unquote(toks[i]).lower())
            i += 3
            if i == len(toks):
                break
            if up[i] != "AND":
                return None
            i += 1
    except IndexError:
        return None
    if len(set(columns)) != len(columns):
        return None  # `k = 1 AND k = 2`: the planner folds it; not a lookup shape
    return _Grammar(db, table, tuple(columns))


def literal_value(text: str, kind: str, dtype: DataType) -> tuple[bool, object]:
    """(ok, physical value) of a literal compared with a column of `dtype`, as the binder
    converts it; ok is False when the fast path must not answer (a value the type cannot hold,
    a literal kind the column type converts otherwise)."""
    if kind == "int" and dtype.kind in _INT_BITS:
        value = int(text)
        bits = _INT_BITS[dtype.kind]
        if -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
            return True, value
        return False, None
    if kind == "str" and dtype.kind in _STRING_KINDS:
        return True, text[1:-1].replace("''", "'")
    return False, None


def _one_value(dtype: DataType, value: object) -> Column:
    """A one-row column of a non-NULL key value (integers without `from_physical`'s passes)."""
    if dtype.kind in _INT_BITS:
        return Column(dtype, np.array([value], dtype.numpy_dtype))
    return Column.from_physical(dtype, [value])


class LiteralMismatch(ValueError):
    """`learn` saw a literal its column type cannot hold (an INT compared with 3000000000): this
    execution says nothing about the shape, another one may."""


@dataclass(frozen=True, slots=True)
class PointTemplate:
    """A learned point-lookup plan: what to read and how to label it; the ranges (tablets and
    versions) are computed per execution."""

    stmt: exp.Expression  # the statement as first parsed: the privilege check walks it
    db: str
    table: TableMeta  # as planned: another TableMeta (DDL) drops the template
    indexes: tuple[MaterializedIndexMeta, ...]
    options: QueryOptions
    index_id: int
    read_columns: tuple[str, ...]  # the scan's columns, in storage order
    slot_columns: tuple[str, ...]  # predicate column per literal slot
    slot_types: tuple[DataType, ...]
    kinds: tuple[str, ...]
    output: tuple[str, ...]  # scan columns projected, in result order
    names: tuple[str, ...]
    types: tuple[DataType, ...]
    bucket_slots: tuple[int, ...] | None  # slot of each distribution column; None: all buckets

    def still_valid(self, catalog: Catalog, options: QueryOptions) -> bool:
        """The table, its indexes and the planning options are still those planned with."""
        if catalog.table_by_id(self.table.table_id) != self.table:
            return False
        if options is not self.options and options != self.options:
            return False
        indexes = catalog.materialized_indexes(self.table.table_id)
        return tuple(indexes) == self.indexes

    def values(self, shape: Shape) -> list[object] | None:
        out = []
        for text, kind, dtype in zip(shape.literals, shape.kinds, self.slot_types):
            ok, value = literal_value(text, kind, dtype)
            if not ok:
                return None
            out.append(value)
        return out

    def _tablets(self, storage: StorageEngine, values: list[object]
                 ) -> Iterator[tuple[TabletMeta, int]]:
        """The tablets that can hold the key, with the version to read each at."""
        catalog = storage.catalog
        key_hash = None
        if self.bucket_slots is not None:  # the storage hash, once for every partition
            key_hash = int(hash_columns([_one_value(self.slot_types[s], values[s])
                                         for s in self.bucket_slots])[0])
        table_id = self.table.table_id
        for part in catalog.partitions(table_id):
            bucket = None
            if key_hash is not None:
                bucket = key_hash % part.buckets  # as bucket_of_rows computes it
            for tablet in catalog.tablets(table_id, part.partition_id, self.index_id):
                if bucket is None or tablet.bucket_seq == bucket:
                    yield tablet, part.visible_version

    def _predicates(self, values: list[object]) -> tuple[ColumnPredicate, ...]:
        return tuple(ColumnPredicate(c, "=", (v,)) for c, v in zip(self.slot_columns, values))

    def _label(self, batch: Batch) -> Batch:
        if batch.names != self.read_columns:
            batch = batch.rename(self.read_columns)
        return batch.select(self.output).rename(self.names)

    def lookup(self, storage: StorageEngine, values: list[object],
               stats: ScanStats) -> list[Batch] | None:
        """Every row, read at once by storage/point_lookup.py; None when some tablet needs a
        scan instead (a key range too wide for a lookup, see `lookup`'s conditions): the
        caller then reads with `read`. Bounded work, so the session may run it inline."""
        predicates = self._predicates(values)
        out = []
        for tablet, version in self._tablets(storage, values):
            found = point_lookup.lookup(storage, tablet, version, self.read_columns,
                                        predicates, stats)
            if found is None:
                return None
            if found.num_rows:
                out.append(self._label(found))
        return out

    def read(self, storage: StorageEngine, values: list[object],
             stats: ScanStats) -> Iterator[Batch]:
        """The rows, read as the plan's scan reads them (same ReadOptions per tablet) where a
        point lookup does not apply."""
        predicates = self._predicates(values)
        options = ReadOptions(columns=self.read_columns, predicates=predicates,
                              batch_size=BATCH_SIZE)
        for tablet, version in self._tablets(storage, values):
            found = point_lookup.lookup(storage, tablet, version, self.read_columns,
                                        predicates, stats)
            batches = (storage.read_tablet(tablet, version, options, stats)
                       if found is None else (found,))
            for batch in batches:
                if batch.num_rows:
                    yield self._label(batch)


def learn(stmt: exp.Expression, shape: Shape, planned: PlannedQuery, catalog: Catalog,
          db: str | None, options: QueryOptions) -> PointTemplate | None:
    """A template for `shape` from the normal plan of its first execution, or None when the
    plan is not a plain point lookup (see the module docstring)."""
    grammar = _grammar(shape.key)
    if grammar is None or options.enable_profile:
        return None
    frags = planned.dplan.fragments
    if planned.dplan.runtime_filters or len(frags) > 2:
        return None
    scans = [f.root for f in frags if isinstance(f.root, OlapScan)]
    others = [f.root for f in frags if not isinstance(f.root, OlapScan)]
    if len(scans) != 1 or any(not isinstance(r, Exchange) or r.folded or r.limits
                              for r in others):
        return None
    scan = scans[0]
    if (scan.children or scan.limits or scan.residual_filter is not None or scan.disjunctions
            or scan.runtime_filters):
        return None
    table_db = grammar.db or db
    table = catalog.get_table(table_db, grammar.table) if table_db else None
    if table is None or table.table_id != scan.table_id:
        return None  # a view, or a name resolved some other way: the normal path
    if len(scan.folded) > 1:
        return None
    output: tuple[str, ...] = scan.columns
    if scan.folded:
        project = scan.folded[0]
        if not isinstance(project, FoldedProject):
            return None
        refs = [e for _, e in project.exprs if isinstance(e, ColumnRef) and e.name in scan.columns]
        if len(refs) != len(project.exprs):
            return None
        output = tuple(e.name for e in refs)
    if len(output) != len(planned.names):
        return None
    by_name = {c.name.lower(): c for c in table.columns}
    slot_columns, slot_types = [], []
    for col in grammar.where_columns:
        meta = by_name.get(col)
        if meta is None:
            return None
        slot_columns.append(meta.name)
        slot_types.append(meta.type)
    # the plan must hold exactly the slots' predicates, with the values converted as we would
    expected = set()
    for name, dtype, text, kind in zip(slot_columns, slot_types, shape.literals, shape.kinds):
        ok, value = literal_value(text, kind, dtype)
        if not ok:
            if (kind == "int") == (dtype.kind in _INT_BITS) and \
                    (kind == "str") == (dtype.kind in _STRING_KINDS):
                raise LiteralMismatch(text)  # out of the type's range: try other literals
            return None
        expected.add((name, "=", (type(value), value)))
    got = {(p.column, p.op, (type(p.values[0]), p.values[0]))
           for p in scan.storage_predicates if len(p.values) == 1}
    if len(scan.storage_predicates) != len(slot_columns) or got != expected:
        return None
    bucket_slots: tuple[int, ...] | None = None
    dist = table.distribution
    if dist.type is DistributionType.HASH and dist.columns:
        lowered = [c.lower() for c in slot_columns]
        if all(c.lower() in lowered for c in dist.columns):
            bucket_slots = tuple(lowered.index(c.lower()) for c in dist.columns)
    indexes = tuple(catalog.materialized_indexes(table.table_id))
    return PointTemplate(
        stmt=stmt, db=table_db or "", table=table, indexes=indexes, options=options,
        index_id=scan.index_id, read_columns=scan.columns, slot_columns=tuple(slot_columns),
        slot_types=tuple(slot_types), kinds=shape.kinds, output=output, names=planned.names,
        types=planned.types, bucket_slots=bucket_slots)


def check_privileges(template: PointTemplate, access: object, current_db: str | None) -> None:
    """The normal path's check (server/privileges/enforce.py) on the statement's tables."""
    if access is not None:
        authorize(access, template.stmt, current_db)  # type: ignore[arg-type]


def _parameter_literal(value: object) -> tuple[str, str] | None:
    """A prepared statement's parameter as (kind, SQL literal text): "int" or "str" (quotes
    doubled); None for any other value, which the normal path binds."""
    if isinstance(value, int) and not isinstance(value, bool):
        return "int", str(value)
    if isinstance(value, str):
        return "str", "'" + value.replace("'", "''") + "'"
    return None
