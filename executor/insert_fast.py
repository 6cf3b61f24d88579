"""INSERT ... VALUES fast path: scanned literal tokens -> one full-schema Batch.

executor/insert_values_scanner.py hands over, per target column, every row's literal token as text;
this module converts each column at once (numpy parsing, joined-text regex checks) with the
general path's casting rules (executor/insert.py: sqlglot literal -> evaluate_constant ->
convert_value -> DataType.to_physical). Every conversion accepts only token shapes whose result
is known to equal the general path's; for anything else `scanned_batch` returns None and the
statement goes through the general path, which also produces every error (out of range, NOT
NULL, too long, bad date, ...). tests/clients/test_insert_values_fast_path.py checks the two
paths against each other.

`fast_batch` is the entry point: it scans the rows with the numba kernel
(executor/kernels/insert_values.py via `scan_tokens`) and converts the common column shapes (all
integer types but LARGEINT, FLOAT/DOUBLE, DECIMAL up to 18 digits, DATE, DATETIME, strings; with
NULLs) straight from the kernel's token arrays, without a Python object per value. A column of
any other shape gets its tokens as text and goes through the text conversion below; a statement
the kernel does not recognise goes through the regex scanner and the text conversion.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal
from functools import cache
from operator import itemgetter

import numpy as np

from executor.insert import default_value, target_columns
from executor.insert_values_scanner import TokenArrays, scan_rows, scan_tokens, unquote
from executor.kernels import insert_values as K
from sql.errors import DorisError
from storage import clock
from storage.batch import Batch, Column
from storage.catalog.meta import ColumnMeta, TableMeta
from storage.types import DataType, TypeError_, TypeKind

_DATE_TOKEN = r"['\"]\d{4}-\d{2}-\d{2}['\"]"
_DATETIME_TOKEN = r"['\"]\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?['\"]"
_INT_TOKEN = r"-?\d+"
_DECIMAL_TOKEN = r"-?(?:\d+(?:\.\d*)?|\.\d+)"
_BOOL_TOKENS = {"true": 1, "false": 0, "1": 1, "0": 0}


@cache
def _list_pattern(token: str) -> re.Pattern[str]:
    return re.compile(rf"(?:{token}\n)*{token}")


def _all_match(token: str, values: list[str]) -> bool:
    """Every value matches `token`: one regex over the newline-joined values (C speed; no
    value of these shapes contains a newline)."""
    return not values or _list_pattern(token).fullmatch("\n".join(values)) is not None


class _Fallback(Exception):
    """This column's tokens need the general path."""


def _tokens_and_validity(col: ColumnMeta,
                         tokens: Sequence[str]) -> tuple[list[str], np.ndarray | None]:
    # no "NULL" anywhere in the column's text: no NULL token (one C-speed pass)
    if "NULL" not in "\n".join(tokens).upper():
        return list(tokens), None
    nulls = [t for t in tokens if len(t) == 4 and t[0] in "Nn"]
    if not nulls:
        return list(tokens), None
    if not col.nullable:
        raise _Fallback  # the general path reports the NOT NULL violation
    valid = np.fromiter((not (len(t) == 4 and t[0] in "Nn") for t in tokens), dtype=np.bool_,
                        count=len(tokens))
    return list(tokens), valid


def _numbers(tokens: list[str], valid: np.ndarray | None, fill: str) -> np.ndarray:
    if valid is not None:
        tokens = [t if v else fill for t, v in zip(tokens, valid.tolist())]
    return np.array(tokens)


def _strip_number_quotes(tokens: Sequence[str]) -> list[str]:
    """Numbers sent as strings ('12.5', as drivers format Decimal or str parameters): the
    general path parses the string with the column type's rules, which for the plain shapes
    the checks below accept is what the unquoted literal gives."""
    out = []
    for x in tokens:
        if x[0] in "'\"":
            inner = x[1:-1]
            if "\\" in inner or "'" in inner or '"' in inner or inner.upper() == "NULL":
                raise _Fallback  # escapes, or the text 'NULL' (a string, not a NULL)
            out.append(inner)
        else:
            out.append(x)
    return out


def _convert_column(col: ColumnMeta, tokens: Sequence[str]) -> Column:
    t = col.type
    k = t.kind
    if t.is_numeric:
        text = "".join(tokens)
        if "'" in text or '"' in text:
            tokens = _strip_number_quotes(tokens)
    toks, valid = _tokens_and_validity(col, tokens)
    live = toks if valid is None else [x for x, v in zip(toks, valid.tolist()) if v]
    if k in (TypeKind.TINYINT, TypeKind.SMALLINT, TypeKind.INT, TypeKind.BIGINT):
        if not _all_match(_INT_TOKEN, live):
            raise _Fallback
        try:
            big = _numbers(toks, valid, "0").astype(np.int64)
        except (ValueError, OverflowError):
            raise _Fallback from None
        lo, hi = t.int_range()
        if len(big) and (int(big.min()) < lo or int(big.max()) > hi):
            raise _Fallback  # the general path names the value out of range
        return Column(t, big.astype(t.numpy_dtype), valid)
    if k is TypeKind.LARGEINT:
        if not _all_match(_INT_TOKEN, live):
            raise _Fallback
        lo, hi = t.int_range()
        ints = [int(x) if v else 0 for x, v in zip(toks, _valid_list(valid, len(toks)))]
        if any(not lo <= x <= hi for x in ints):
            raise _Fallback
        data = np.empty(len(ints), dtype=object)
        data[:] = ints
        return Column(t, data, valid)
    if k in (TypeKind.FLOAT, TypeKind.DOUBLE):
        if any(x[0] in "'\"tTfF" for x in live):
            raise _Fallback
        try:
            arr = _numbers(toks, valid, "0").astype(np.float64)
        except ValueError:
            raise _Fallback from None
        return Column(t, arr.astype(t.numpy_dtype), valid)
    if k is TypeKind.DECIMAL:
        if not _all_match(_DECIMAL_TOKEN, live):
            raise _Fallback
        fast = _decimal_unscaled(toks, valid, t)
        if fast is not None:
            return Column(t, fast, valid)
        try:
            unscaled = [t.to_physical(Decimal(x)) if v else 0
                        for x, v in zip(toks, _valid_list(valid, len(toks)))]
        except TypeError_:
            raise _Fallback from None
        if t.numpy_dtype == np.dtype(object):
            data = np.empty(len(unscaled), dtype=object)
            data[:] = unscaled
        else:
            data = np.array(unscaled, dtype=np.int64)
        return Column(t, data, valid)
    if k is TypeKind.BOOLEAN:
        try:
            vals = [_BOOL_TOKENS[x.lower()] if v else 0
                    for x, v in zip(toks, _valid_list(valid, len(toks)))]
        except KeyError:
            raise _Fallback from None
        return Column(t, np.array(vals, dtype=np.uint8), valid)
    if k is TypeKind.DATE:
        if not _all_match(_DATE_TOKEN, live) or "0000-" in "".join(map(_YEAR, live)):
            raise _Fallback
        texts = _inner(toks, valid, "1970-01-01")
        try:
            days = np.array(texts, dtype="datetime64[D]").astype(np.int64)
        except ValueError:
            raise _Fallback from None
        return Column(t, days.astype(np.int32), valid)
    if k is TypeKind.DATETIME:
        if not _all_match(_DATETIME_TOKEN, live) or "0000-" in "".join(map(_YEAR, live)):
            raise _Fallback
        texts = "\n".join(_inner(toks, valid, "1970-01-01T00:00:00")).replace(" ", "T").split("\n")
        try:
            micros = np.array(texts, dtype="datetime64[us]").astype(np.int64)
        except ValueError:
            raise _Fallback from None
        if t.scale < 6:
            unit = 10 ** (6 - t.scale)
            micros = (micros // unit) * unit  # Doris truncates to the declared precision
        return Column(t, micros, valid)
    if t.is_string:
        if "".join(map(_FIRST, live)).replace("'", "").replace('"', ""):
            raise _Fallback  # a token that is not a quoted string
        if valid is None and "\\" not in (text := "\n".join(toks)) and "''" not in text \
                and '""' not in text:
            strs: list[str | None] = list(map(_QUOTED_BODY, toks))  # no escapes anywhere
        else:
            strs = [unquote(x) if v else None for x, v in zip(toks, _valid_list(valid, len(toks)))]
        if k is not TypeKind.STRING:
            limit = t.length
            if any(s is not None and len(s) * 4 > limit and len(s.encode("utf-8")) > limit
                   for s in strs):
                raise _Fallback  # too long: the general path's strict-mode error
        if valid is None:
            encoded = [v.encode("utf-8") for v in strs]  # type: ignore[union-attr]
            offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
            np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)),
                      out=offsets[1:])
            return Column(t, np.frombuffer(b"".join(encoded), dtype=np.uint8).copy(), None, offsets)
        return Column.from_physical(t, strs)
    raise _Fallback  # HLL, BITMAP


_FIRST = itemgetter(0)
_YEAR = itemgetter(slice(1, 6))
_QUOTED_BODY = itemgetter(slice(1, -1))


def _inner(toks: list[str], valid: np.ndarray | None, fill: str) -> list[str]:
    """The text inside each quoted token (`fill` for NULLs)."""
    if valid is None:
        return list(map(_QUOTED_BODY, toks))
    return [x[1:-1] if v else fill for x, v in zip(toks, valid.tolist())]


def _decimal_unscaled(toks: list[str], valid: np.ndarray | None, t: DataType) -> np.ndarray | None:
    """DECIMAL(p <= 18, s) tokens with at most s fraction digits, as int64 unscaled values by
    digit-string arithmetic (exact: no rounding happens); None otherwise."""
    if t.precision > 18:
        return None
    scale = t.scale
    if valid is None and scale > 0 and _all_match(rf"-?\d+\.\d{{{scale}}}", toks):
        # every value written with exactly `scale` decimals (the usual formatting): the
        # unscaled integer is the text without its point
        texts = "\n".join(toks).replace(".", "").split("\n")
    else:
        unscaled = _unscaled_texts(toks, valid, scale)
        if unscaled is None:
            return None
        texts = unscaled
    try:
        data = np.array(texts).astype(np.int64)
    except (ValueError, OverflowError):
        return None
    bound = 10 ** t.precision - 1
    if len(data) and (int(data.min()) < -bound or int(data.max()) > bound):
        raise _Fallback  # out of range: the general path's error
    return data


def _unscaled_texts(toks: list[str], valid: np.ndarray | None, scale: int) -> list[str] | None:
    texts = []
    for x, v in zip(toks, _valid_list(valid, len(toks))):
        if not v:
            texts.append("0")
            continue
        ip, _, fp = x.partition(".")
        if len(fp) > scale:
            return None  # needs rounding: Decimal path
        texts.append((ip if ip not in ("", "-") else ip + "0") + fp.ljust(scale, "0"))
    return texts


def _valid_list(valid: np.ndarray | None, n: int) -> list[bool]:
    return [True] * n if valid is None else valid.tolist()


def scanned_batch(table: TableMeta, column_names: Sequence[str] | None,
                  values: Sequence[Sequence[str]], num_rows: int) -> Batch | None:
    """The full-schema Batch of a scanned INSERT VALUES, or None when it needs the general path."""
    try:
        targets = target_columns(table, column_names)
    except DorisError:
        return None
    if len(targets) != len(values):
        return None
    by_name = {c.name.lower(): (c, v) for c, v in zip(targets, values)}
    now = clock.now()
    cols = []
    try:
        for c in table.columns:
            hit = by_name.get(c.name.lower())
            if hit is None:
                cols.append(Column.constant(c.type, default_value(c, now), num_rows))
            else:
                cols.append(_convert_column(c, hit[1]))
    except (_Fallback, DorisError):
        return None
    return Batch(table.column_names, tuple(cols))


_INT_KINDS = (TypeKind.TINYINT, TypeKind.SMALLINT, TypeKind.INT, TypeKind.BIGINT)


def _token_column(col: ColumnMeta, ta: TokenArrays, j: int) -> Column | None:
    """Column `j` converted from the kernel's arrays, or None when its tokens need the text
    conversion (`_convert_column`); raises _Fallback where that one would."""
    t = col.type
    k = t.kind
    kind = np.ascontiguousarray(ta.kind[:, j])
    nulls = kind == K.K_NULL
    valid: np.ndarray | None = None
    if nulls.any():
        if not col.nullable:
            raise _Fallback  # the general path reports the NOT NULL violation
        valid = ~nulls
    flags = ta.flags[:, j]
    if k in _INT_KINDS:
        if not np.all((kind == K.K_INT) | nulls) or (flags & K.F_BIG).any():
            return None
        vals = ta.mant[:, j]
        lo, hi = t.int_range()
        if len(vals) and (int(vals.min()) < lo or int(vals.max()) > hi):
            raise _Fallback  # the general path names the value out of range
        return Column(t, vals.astype(t.numpy_dtype), valid)
    if k in (TypeKind.FLOAT, TypeKind.DOUBLE):
        numeric = (kind == K.K_INT) | (kind == K.K_DEC) | (kind == K.K_EXP)
        if not np.all(numeric | nulls):
            return None
        vals = ta.fval[:, j].copy()
        slow = np.flatnonzero(((flags & K.F_INEXACT) != 0) & numeric)
        if len(slow):
            raw = ta.buf
            starts, ends = ta.start[:, j], ta.end[:, j]
            for i in slow.tolist():
                v = float(raw[starts[i]:ends[i]].tobytes())
                if v in (float("inf"), float("-inf")):
                    return None  # out of double range: as the text conversion does it
                vals[i] = v
        vals[nulls] = 0.0
        return Column(t, vals.astype(t.numpy_dtype, copy=False), valid)
    if k is TypeKind.DECIMAL:
        if t.precision > 18:
            return None
        if not np.all((kind == K.K_INT) | (kind == K.K_DEC) | nulls) or (flags & K.F_BIG).any():
            return None
        frac = np.where(nulls, 0, ta.frac[:, j])
        if len(frac) and int(frac.max()) > t.scale:
            return None  # needs rounding: the text conversion's Decimal path
        pow10 = np.array([10**i for i in range(19)], dtype=np.int64)[t.scale - frac]
        mant = np.where(nulls, 0, ta.mant[:, j])
        if (np.abs(mant) > (10**t.precision - 1) // pow10).any():
            raise _Fallback  # out of range: the general path's error
        return Column(t, mant * pow10, valid)
    if k is TypeKind.DATE or k is TypeKind.DATETIME:
        out = np.empty(len(kind), dtype=np.int64)
        args = (ta.buf, kind, np.ascontiguousarray(ta.start[:, j]),
                np.ascontiguousarray(ta.end[:, j]), np.ascontiguousarray(flags), out)
        if k is TypeKind.DATE:
            if K.decode_dates(*args) >= 0:
                return None
            return Column(t, out.astype(np.int32), valid)
        if K.decode_datetimes(*args) >= 0:
            return None
        if t.scale < 6:
            unit = 10 ** (6 - t.scale)
            out = (out // unit) * unit  # Doris truncates to the declared precision
        return Column(t, out, valid)
    if t.is_string:
        starts = np.ascontiguousarray(ta.start[:, j])
        ends = np.ascontiguousarray(ta.end[:, j])
        offsets = np.empty(len(kind) + 1, dtype=np.int64)
        data = np.empty(int((ends - starts).sum()), dtype=np.uint8)
        if K.gather_strings(ta.buf, kind, starts, ends, np.ascontiguousarray(flags), offsets,
                            data) >= 0:
            return None
        if k is not TypeKind.STRING and len(kind) and int(np.diff(offsets).max()) > t.length:
            raise _Fallback  # too long: the general path's strict-mode error
        return Column(t, data[: offsets[-1]].copy(), valid, offsets)
    return None


def tokens_batch(table: TableMeta, column_names: Sequence[str] | None,
                 ta: TokenArrays) -> Batch | None:
    """The full-schema Batch of a kernel-scanned INSERT VALUES, or None for the general path."""
    try:
        targets = target_columns(table, column_names)
    except DorisError:
        return None
    if len(targets) != ta.kind.shape[1]:
        return None
    by_name = {c.name.lower(): (c, j) for j, c in enumerate(targets)}
    now = clock.now()
    cols = []
    try:
        for c in table.columns:
            hit = by_name.get(c.name.lower())
            if hit is None:
                cols.append(Column.constant(c.type, default_value(c, now), ta.num_rows))
                continue
            converted = _token_column(c, ta, hit[1])
            cols.append(converted if converted is not None
                        else _convert_column(c, ta.texts(hit[1])))
    except (_Fallback, DorisError):
        return None
    return Batch(table.column_names, tuple(cols))


def fast_batch(table: TableMeta, column_names: Sequence[str] | None, sql: str,
               start: int) -> Batch | None:
    """The Batch of `INSERT ... VALUES` rows starting at str offset `start` (after the header
    scan_header matched), or None when the statement needs the general path."""
    ncols = len(column_names) if column_names is not None else len(table.columns)
    ta = scan_tokens(sql, start, ncols)
    if ta is not None:
        return tokens_batch(table, column_names, ta)
    values = scan_rows(sql, start, ncols)
    if values is None:
        return None
    return scanned_batch(table, column_names, values, len(values[0]))
