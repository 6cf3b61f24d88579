"""Fused global-aggregate kernel (numba, nogil): every aggregate of a batch in one pass.

`global_aggregate` walks the rows of a batch once and, per row, evaluates each aggregate's
argument with a tiny stack program (`ops`, compiled by executor/fused_aggregate.py from the
bound expression) and folds it into that aggregate's accumulators: no intermediate array per
operator, no per-batch Python between the operators, and the GIL released for the whole pass
(so scan instances on the shared CPU pool aggregate on both cores at once).

Integer programs compute in int64 on physical values (DECIMAL as scaled integers) and keep
every intermediate within +-2^62: a product or sum that could leave that range stops the
kernel with OVERFLOW and the caller runs the batch through the general operators instead, so
overflow behaviour (exact wide sums, errors, NULLs) is the general path's by construction.
Float columns are summed in row order into the running total the caller passes in, exactly as
the general SUM kernel (executor/kernels/aggregates.py) does, so float results are
bit-identical.

`grouped_aggregate` is the same pass for GROUP BY: rows carry their group id (from the
group table, or `first_rows` over dense key combinations) and every aggregate folds into a
per-group row of 2-D accumulators. Exact int64 sums keep a bound of any group's |sum| per
aggregate: a block that could push it past 2^62 stops the kernel with SPILL before anything
of that block is folded, the caller moves the sums into exact Python ints and resumes there.
Upstream: DuckDB's fused `PhysicalUngroupedAggregate` sink over a filtered chunk and
`GroupedAggregateHashTable::AddChunk` (all aggregates of a chunk per group-id vector); Doris
`VAggregationNode` (`_execute_without_key`, `_execute_with_serialized_key`).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

# opcodes of the argument programs: (op, operand) pairs
OP_COL = 0  # push int column `operand` (its validity folds into the row's)
OP_CONST = 1  # push constants[operand]
OP_ADD = 2
OP_SUB = 3
OP_MUL = 4
OP_NEG = 5
OP_SCALE = 6  # multiply the top by 10**operand (a widening DECIMAL cast)
OP_FCOL = 7  # the argument is float column `operand` (the whole program)

# aggregate kinds
K_COUNT = 0  # count(*) (empty program) / count(x): valid rows
K_SUM_INT = 1  # exact int64 sum (batch-local, from 0)
K_SUM_FLOAT = 2  # float64 sum of the value converted to float, onto the running total
K_MIN_INT = 3
K_MAX_INT = 4
K_MIN_FLOAT = 5
K_MAX_FLOAT = 6

OK = 0
OVERFLOW = 1
SPILL = 2  # grouped: an exact int64 sum could leave +-2^62 (the caller spills, then resumes)
LIMIT = 2.0 ** 62  # |intermediate| bound: no int64 operation below it can wrap

STACK_DEPTH = 32
BLOCK = 1024  # rows per block: the scratch stack stays in cache


@numba.njit(cache=True, nogil=True)
def eval_program(ops: np.ndarray, lo: int, hi: int, constants: np.ndarray, ints: np.ndarray,
                 int_valid: np.ndarray, int_vidx: np.ndarray, int_wide: np.ndarray, b0: int,
                 m: int, stack: np.ndarray, ok: np.ndarray, checked: bool) -> bool:
    """Run the integer program ops[lo:hi] over rows b0..b0+m-1: the values land in
    stack[0, :m], `ok[j]` says whether row b0+j is non-NULL. `checked`: False when an
    intermediate of a non-NULL row could leave +-2^62 (the stack then holds garbage);
    unchecked (the caller proved every intermediate within the bound, `program_bounds`) the
    loops are plain int64 arithmetic."""
    ok[:m] = True
    sp = 0
    for k in range(lo, hi):
        op = ops[k, 0]
        arg = ops[k, 1]
        if op == OP_COL:
            vi = int_vidx[arg]
            if vi >= 0:
                for j in range(m):
                    ok[j] = ok[j] and int_valid[vi, b0 + j]
            for j in range(m):
                stack[sp, j] = ints[arg, b0 + j]
            if checked and int_wide[arg]:
                for j in range(m):
                    if ok[j] and abs(float(stack[sp, j])) >= LIMIT:
                        return False
            sp += 1
        elif op == OP_CONST:
            stack[sp, :m] = constants[arg]
            sp += 1
        elif op == OP_NEG:
            for j in range(m):
                stack[sp - 1, j] = -stack[sp - 1, j]
        elif op == OP_SCALE:
            factor = 1
            for _ in range(arg):
                factor *= 10
            if checked:
                for j in range(m):
                    if ok[j] and abs(float(stack[sp - 1, j])) * float(factor) >= LIMIT:
                        return False
            for j in range(m):
                stack[sp - 1, j] = stack[sp - 1, j] * factor
        else:
            sp -= 1
            if checked:
                for j in range(m):
                    left = float(stack[sp - 1, j])
                    r = float(stack[sp, j])
                    res = left * r if op == OP_MUL else left + r if op == OP_ADD else left - r
                    if ok[j] and abs(res) >= LIMIT:
                        return False
            if op == OP_MUL:
                for j in range(m):
                    stack[sp - 1, j] = stack[sp - 1, j] * stack[sp, j]
            elif op == OP_ADD:
                for j in range(m):
                    stack[sp - 1, j] = stack[sp - 1, j] + stack[sp, j]
            else:
                for j in range(m):
                    stack[sp - 1, j] = stack[sp - 1, j] - stack[sp, j]
    return True


@numba.njit(cache=True, nogil=True)
def global_aggregate(ops: np.ndarray, starts: np.ndarray, kinds: np.ndarray,
                     constants: np.ndarray, safe: np.ndarray, value_bounds: np.ndarray,
                     ints: np.ndarray, int_valid: np.ndarray,
                     int_vidx: np.ndarray, int_wide: np.ndarray, floats: np.ndarray,
                     float_valid: np.ndarray, float_vidx: np.ndarray, sums: np.ndarray,
                     fvals: np.ndarray, has: np.ndarray, counts: np.ndarray) -> int:
    """Fold every row of a batch into the accumulators of every aggregate, in place.

    Aggregate a's program is ops[starts[a]:starts[a + 1]] (rows of (opcode, operand)).
    `ints` (k x n) holds the int columns as int64 (`int_wide[c]`: stored as int64, so its
    values may exceed the bound), `floats` (m x n) the float columns; `int_vidx[c]` is column
    c's row in `int_valid` (-1: no NULLs), same for floats. Accumulators per aggregate: `sums`
    (int64: SUM totals, MIN/MAX values), `fvals` (float64), `has` (saw a value), `counts`
    (valid values). `safe` / `value_bounds` as in `grouped_aggregate` (a safe program runs
    unchecked, and its SUM too when the batch cannot reach the bound). Returns OK, or
    OVERFLOW (accumulators then hold garbage: the caller passes copies and drops them).

    Rows go in blocks of BLOCK: each program step runs over the block (tight loops over a
    cache-resident scratch stack, no per-row dispatch), then the block is folded in row
    order. Values under NULL rows are computed but never checked nor folded."""
    n = ints.shape[1] if ints.shape[0] > 0 else floats.shape[1]
    naggs = len(kinds)
    stack = np.empty((STACK_DEPTH, BLOCK), np.int64)
    ok = np.empty(BLOCK, np.bool_)
    for b0 in range(0, n, BLOCK):
        m = min(BLOCK, n - b0)
        for a in range(naggs):
            kind = kinds[a]
            lo = starts[a]
            hi = starts[a + 1]
            if lo == hi:  # count(*)
                counts[a] += m
                continue
            if ops[lo, 0] == OP_FCOL:
                c = ops[lo, 1]
                vi = float_vidx[c]
                for j in range(m):
                    i = b0 + j
                    if vi >= 0 and not float_valid[vi, i]:
                        continue
                    f = floats[c, i]
                    counts[a] += 1
                    if kind == K_COUNT:
                        continue
                    if kind == K_SUM_FLOAT:
                        fvals[a] += f
                    elif not has[a] or f != f or (  # noqa: PLR0124 - f != f: f is NaN (it wins)
                            f < fvals[a] if kind == K_MIN_FLOAT else f > fvals[a]):
                        fvals[a] = f
                    has[a] = True
                continue
            if not eval_program(ops, lo, hi, constants, ints, int_valid, int_vidx, int_wide,
                                b0, m, stack, ok, not safe[a]):
                return OVERFLOW
            check_sum = not safe[a] or value_bounds[a] * n >= LIMIT
            for j in range(m):
                if not ok[j]:
                    continue
                v = stack[0, j]
                counts[a] += 1
                if kind == K_COUNT:
                    continue
                if kind == K_SUM_INT:
                    s = sums[a] + v
                    if check_sum and abs(float(s)) >= LIMIT:
                        return OVERFLOW
                    sums[a] = s
                elif kind == K_SUM_FLOAT:
                    fvals[a] += float(v)
                elif not has[a] or (v < sums[a] if kind == K_MIN_INT else v > sums[a]):
                    sums[a] = v  # MIN / MAX (the remaining kinds)
                has[a] = True
    return OK


def _program_values_reference(ops: np.ndarray, lo: int, hi: int, constants: np.ndarray,
                              ints: np.ndarray, int_valid: np.ndarray, int_vidx: np.ndarray,
                              n: int) -> tuple[list[int], list[bool]]:
    """Pure-Python reference of `eval_program` for the references below: the exact value of
    program ops[lo:hi] per row (Python ints, no overflow) and whether every column it reads
    is non-NULL there."""
    keep = [True] * n
    stack: list[list[int]] = []
    for op, arg in ops[lo:hi].tolist():
        if op == OP_COL:
            if int_vidx[arg] >= 0:
                keep = [k and bool(v) for k, v in zip(keep, int_valid[int_vidx[arg]].tolist())]
            stack.append(ints[arg].tolist())
        elif op == OP_CONST:
            stack.append([int(constants[arg])] * n)
        elif op == OP_NEG:
            stack.append([-x for x in stack.pop()])
        elif op == OP_SCALE:
            stack.append([x * 10 ** arg for x in stack.pop()])
        else:
            r, left = stack.pop(), stack.pop()
            fn = {OP_ADD: lambda x, y: x + y, OP_SUB: lambda x, y: x - y,
                  OP_MUL: lambda x, y: x * y}[op]
            stack.append([fn(x, y) for x, y in zip(left, r)])
    return stack[0], keep


def global_aggregate_reference(ops: np.ndarray, starts: np.ndarray, kinds: np.ndarray,
                               constants: np.ndarray, ints: np.ndarray, int_valid: np.ndarray,
                               int_vidx: np.ndarray, int_wide: np.ndarray, floats: np.ndarray,
                               float_valid: np.ndarray, float_vidx: np.ndarray,
                               sums: np.ndarray, fvals: np.ndarray, has: np.ndarray,
                               counts: np.ndarray) -> int:
    """Pure-numpy reference of `global_aggregate` (same contract; tests compare the two):
    each program evaluated column-wise with Python-int arithmetic, then reduced."""
    n = ints.shape[1] if ints.shape[0] > 0 else floats.shape[1]
    for a in range(len(kinds)):
        lo, hi = int(starts[a]), int(starts[a + 1])
        kind = int(kinds[a])
        if lo == hi:
            counts[a] += n
            continue
        if ops[lo, 0] == OP_FCOL:
            c = int(ops[lo, 1])
            keep = np.ones(n, np.bool_) if float_vidx[c] < 0 else float_valid[float_vidx[c]]
            vals = floats[c][keep]
            counts[a] += len(vals)
            if len(vals) == 0 or kind == K_COUNT:
                continue
            if kind == K_SUM_FLOAT:
                acc = fvals[a]
                for f in vals.tolist():  # row order, as the kernel
                    acc += f
                fvals[a] = acc
            else:
                best = fvals[a]
                seen = bool(has[a])
                for f in vals.tolist():  # NaN wins, like the kernel and np.minimum
                    if not seen or f != f or (  # noqa: PLR0124 - f is NaN
                            f < best if kind == K_MIN_FLOAT else f > best):
                        best = f
                    seen = True
                fvals[a] = best
            has[a] = True
            continue
        values, keep_rows = _program_values_reference(ops, lo, hi, constants, ints, int_valid,
                                                      int_vidx, n)
        vals = [v for v, k in zip(values, keep_rows) if k]
        if any(abs(v) >= LIMIT for v in vals):
            return OVERFLOW  # (the kernel may stop earlier, on an intermediate)
        counts[a] += len(vals)
        if not vals or kind == K_COUNT:
            continue
        if kind == K_SUM_INT:
            total = int(sums[a]) + sum(vals)
            if abs(total) >= LIMIT:
                return OVERFLOW
            sums[a] = total
        elif kind == K_SUM_FLOAT:
            acc = fvals[a]
            for v in vals:
                acc += float(v)
            fvals[a] = acc
        elif kind in (K_MIN_INT, K_MAX_INT):
            best = min(vals) if kind == K_MIN_INT else max(vals)
            if has[a]:
                best = min(best, int(sums[a])) if kind == K_MIN_INT else max(best, int(sums[a]))
            sums[a] = best
        has[a] = True
    return OK


@numba.njit(cache=True, nogil=True)
def first_rows(combos: np.ndarray, size: int) -> np.ndarray:
    """first[c] = the first row whose dense key combination is c (-1: none); combos < size."""
    first = np.full(size, -1, np.int64)
    for i in range(len(combos)):
        c = combos[i]
        if first[c] < 0:
            first[c] = i
    return first


@numba.njit(cache=True, nogil=True)
def grouped_aggregate(gids: np.ndarray, start: int, ops: np.ndarray, starts: np.ndarray,
                      kinds: np.ndarray, constants: np.ndarray, safe: np.ndarray,
                      value_bounds: np.ndarray, ints: np.ndarray, int_valid: np.ndarray,
                      int_vidx: np.ndarray, int_wide: np.ndarray, floats: np.ndarray,
                      float_valid: np.ndarray, float_vidx: np.ndarray, isums: np.ndarray,
                      fvals: np.ndarray, counts: np.ndarray, bounds: np.ndarray
                      ) -> tuple[int, int]:
    """Fold rows start.. of a batch into per-group accumulators, in place.

    Programs and columns as in `global_aggregate`; row i belongs to group `gids[i]`.
    `safe[a]`: every intermediate of aggregate a's program is known to stay within +-2^62
    for this batch and `value_bounds[a]` bounds its |value| (so its program runs unchecked).
    Accumulators are (aggregates x groups): `isums` (exact int64 sums from 0, int MIN/MAX),
    `fvals` (float sums onto the running totals, float MIN/MAX), `counts` (values folded; a
    group has a SUM/MIN/MAX value iff its count is not 0); `bounds[a]` bounds every
    |isums[a, g]| of an int SUM. Returns (OK, n), or (status, b) with every row before b
    folded and nothing from b on: SPILL (a sum bound would reach 2^62: the caller moves the
    sums out, zeroes them and their bounds, and resumes at b) or OVERFLOW (an intermediate
    left +-2^62, or one block's values alone could: rows b.. take the general path). Each
    aggregate folds a block in row order, so float sums are those of the general kernels."""
    n = len(gids)
    naggs = len(kinds)
    stack = np.empty((STACK_DEPTH, BLOCK), np.int64)
    ok = np.empty(BLOCK, np.bool_)
    vals = np.empty((naggs, BLOCK), np.int64)
    oks = np.empty((naggs, BLOCK), np.bool_)
    added = np.zeros(naggs, np.float64)
    for b0 in range(start, n, BLOCK):
        m = min(BLOCK, n - b0)
        # evaluate every integer program of the block (and check the sums' bounds) first,
        # so a stop leaves the block wholly unfolded
        for a in range(naggs):
            lo = starts[a]
            hi = starts[a + 1]
            if lo == hi or ops[lo, 0] == OP_FCOL:
                continue
            if not eval_program(ops, lo, hi, constants, ints, int_valid, int_vidx, int_wide,
                                b0, m, stack, ok, not safe[a]):
                return OVERFLOW, b0
            for j in range(m):
                vals[a, j] = stack[0, j]
                oks[a, j] = ok[j]
            if kinds[a] == K_SUM_INT:
                s = value_bounds[a] * m if safe[a] else LIMIT
                if bounds[a] + s >= LIMIT:  # the coarse bound fails: measure the block
                    s = 0.0
                    for j in range(m):
                        if ok[j]:
                            s += abs(float(stack[0, j]))
                    if bounds[a] + s >= LIMIT:
                        return (SPILL if bounds[a] > 0.0 else OVERFLOW), b0
                added[a] = s
        for a in range(naggs):
            kind = kinds[a]
            lo = starts[a]
            hi = starts[a + 1]
            if lo == hi:  # count(*)
                for j in range(m):
                    counts[a, gids[b0 + j]] += 1
            elif ops[lo, 0] == OP_FCOL:
                c = ops[lo, 1]
                vi = float_vidx[c]
                for j in range(m):
                    i = b0 + j
                    if vi >= 0 and not float_valid[vi, i]:
                        continue
                    g = gids[i]
                    f = floats[c, i]
                    seen = counts[a, g]
                    counts[a, g] = seen + 1
                    if kind == K_SUM_FLOAT:
                        fvals[a, g] += f
                    elif kind != K_COUNT and (
                            seen == 0 or f != f  # noqa: PLR0124 - f is NaN (it wins)
                            or (f < fvals[a, g] if kind == K_MIN_FLOAT else f > fvals[a, g])):
                        fvals[a, g] = f
            elif kind == K_SUM_INT:
                for j in range(m):
                    if oks[a, j]:
                        g = gids[b0 + j]
                        counts[a, g] += 1
                        isums[a, g] += vals[a, j]
                bounds[a] += added[a]
            elif kind == K_SUM_FLOAT:
                for j in range(m):
                    if oks[a, j]:
                        g = gids[b0 + j]
                        counts[a, g] += 1
                        fvals[a, g] += float(vals[a, j])
            elif kind == K_COUNT:
                for j in range(m):
                    if oks[a, j]:
                        counts[a, gids[b0 + j]] += 1
            else:  # MIN / MAX of integers
                for j in range(m):
                    if oks[a, j]:
                        g = gids[b0 + j]
                        v = vals[a, j]
                        seen = counts[a, g]
                        counts[a, g] = seen + 1
                        if seen == 0 or (v < isums[a, g] if kind == K_MIN_INT
                                         else v > isums[a, g]):
                            isums[a, g] = v
    return OK, n


def grouped_aggregate_reference(gids: np.ndarray, ops: np.ndarray, starts: np.ndarray,
                                kinds: np.ndarray, constants: np.ndarray, ints: np.ndarray,
                                int_valid: np.ndarray, int_vidx: np.ndarray,
                                int_wide: np.ndarray, floats: np.ndarray,
                                float_valid: np.ndarray, float_vidx: np.ndarray,
                                groups: int) -> list[dict[int, tuple[Any, int]]] | None:
    """Pure-Python reference of `grouped_aggregate` from zero accumulators: per aggregate,
    {group: (exact value or None, valid count)} (float sums as Python float additions in row
    order; MIN/MAX with NaN winning), or None when some value leaves +-2^62."""
    n = len(gids)
    out: list[dict[int, tuple[Any, int]]] = []
    for a in range(len(kinds)):
        lo, hi = int(starts[a]), int(starts[a + 1])
        kind = int(kinds[a])
        acc: dict[int, list[Any]] = {}
        if lo == hi:
            for g in gids.tolist():
                acc.setdefault(g, [None, 0])[1] += 1
            out.append({g: (v, c) for g, (v, c) in acc.items()})
            continue
        if ops[lo, 0] == OP_FCOL:
            c = int(ops[lo, 1])
            keep = [True] * n if float_vidx[c] < 0 else float_valid[float_vidx[c]].tolist()
            values: list[Any] = floats[c].tolist()
        else:
            values, keep = _program_values_reference(ops, lo, hi, constants, ints, int_valid,
                                                     int_vidx, n)
            if any(k and abs(v) >= LIMIT for v, k in zip(values, keep)):
                return None
        for g, v, k in zip(gids.tolist(), values, keep):
            if not k:
                continue
            slot = acc.setdefault(g, [None, 0])
            slot[1] += 1
            if kind == K_COUNT:
                continue
            if kind == K_SUM_INT:
                slot[0] = (0 if slot[0] is None else slot[0]) + v
            elif kind == K_SUM_FLOAT:  # onto 0.0 like the kernel (so -0.0 becomes 0.0)
                slot[0] = (0.0 if slot[0] is None else slot[0]) + float(v)
            else:
                best = slot[0]
                low = kind in (K_MIN_INT, K_MIN_FLOAT)
                if best is None or v != v or (v < best if low else v > best):  # noqa: PLR0124
                    slot[0] = v
        out.append({g: (v, c) for g, (v, c) in acc.items()})
    return out
