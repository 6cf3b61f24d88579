"""Which rowsets of a tablet to compact, and when (seed 002 sections 3 and 4).

Pure functions over `RowsetMeta` values and a `CompactionConfig`: no I/O, no clock, no
threads. The scheduler owns the tablet's cumulative point and its success times and passes
them in; the merger runs what these functions pick. Upstream (Doris 2.1 BE):
`SizeBasedCumulativeCompactionPolicy` (cumulative_compaction_policy.cpp),
`CumulativeCompaction::pick_rowsets_to_compact`, `BaseCompaction::pick_rowsets_to_compact`,
`FullCompaction::pick_rowsets_to_compact`, `Tablet::_calc_base_compaction_score` and the
`Tablet::pick_candidate_rowsets_to_*` helpers.

Where ShaleDB's model differs from Doris:

* **No physical [0-1].** Doris writes an empty rowset [0-1] when it creates a tablet; ShaleDB
  does not. Every function here first adds a *virtual* one (`with_initial_rowset`: no files,
  size 0, non-overlapping, no deletes, rowset_id "") when no rowset starts at version 0, so the
  Doris rules (promotion size from the base rowset, "[0-1] plus one delta is not worth a base
  compaction", VersionCount) read the same. The virtual rowset is never a cumulative input; it
  may be a base or full compaction input, where the merger skips it (no files).
* **Skipped versions are empty versions.** A load publishes a rowset only to the tablets it
  wrote rows to, so [2-2], [5-5], [6-6] is a complete tablet: versions 3 and 4 were empty
  there. Doris' version-hole checks (the hole test in calculate_cumulative_point,
  `find_longest_consecutive_version`, `check_version_continuity`) therefore never fire here:
  consecutive rowsets in version order count as adjacent.
* **Overlapping** follows Doris `RowsetMeta::is_segments_overlapping`: flagged overlapping
  and more than one segment (a one-segment rowset is one sorted run whatever its flag). Current
  Doris also requires a singleton version; ShaleDB's compaction outputs are always non-overlapping,
  so that clause can never matter and is left out.
* Times are seconds (Doris keeps success times in milliseconds).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from storage.catalog.meta import RowsetMeta
from storage.compaction.config import CompactionConfig

__all__ = [
    "INVALID_CUMULATIVE_POINT",
    "NO_DELETE_VERSION",
    "BasePick",
    "CumulativePick",
    "base_candidates",
    "base_score",
    "calculate_cumulative_point",
    "cumulative_candidates",
    "cumulative_score",
    "is_delete",
    "is_overlapping",
    "is_virtual",
    "level_size",
    "pick_base_inputs",
    "pick_cumulative_inputs",
    "pick_full_inputs",
    "promotion_size",
    "update_cumulative_point",
    "version_count",
    "with_initial_rowset",
]

# Doris Tablet::K_INVALID_CUMULATIVE_POINT: the point has not been calculated yet.
INVALID_CUMULATIVE_POINT = -1
NO_DELETE_VERSION: tuple[int, int] = (-1, -1)


# ---------------------------------------------------------------------------------------------
# the virtual initial rowset


def is_virtual(rs: RowsetMeta) -> bool:
    """True for the virtual [0-1] that `with_initial_rowset` adds (no id, no files)."""
    return rs.rowset_id == "" and rs.start_version == 0 and rs.end_version == 1 and not rs.files


def with_initial_rowset(
    rowsets: Iterable[RowsetMeta], create_time: float = 0.0
) -> list[RowsetMeta]:
    """The tablet's rowsets in version order, led by a virtual empty [0-1] when no rowset
    starts at version 0 (the tablet was never base-compacted).

    `create_time` is the virtual rowset's creation time; Doris' [0-1] is written when the
    tablet is created, so pass the tablet's creation time where the age of the base matters
    (`pick_base_inputs` does). Idempotent: a list that already starts at 0 is only sorted.
    """
    out = sorted(rowsets, key=_version_key)
    if not out or out[0].start_version != 0:
        tablet_id = out[0].tablet_id if out else 0
        out.insert(
            0,
            RowsetMeta(
                rowset_id="",
                tablet_id=tablet_id,
                start_version=0,
                end_version=1,
                num_rows=0,
                data_size=0,
                files=(),
                create_time=create_time,
            ),
        )
    return out


def version_count(rowsets: Sequence[RowsetMeta]) -> int:
    """SHOW TABLETS' VersionCount: the rowsets, plus the [0-1] Doris would hold physically."""
    return len(rowsets) + (0 if any(rs.start_version == 0 for rs in rowsets) else 1)


# ---------------------------------------------------------------------------------------------
# sizes


def is_overlapping(rs: RowsetMeta) -> bool:
    """Doris RowsetMeta::is_segments_overlapping (see the module docstring)."""
    return rs.segments_overlap and rs.num_segments > 1


def is_delete(rs: RowsetMeta) -> bool:
    """A delete version (DELETE FROM ... WHERE): it carries predicates, not rows."""
    return bool(rs.delete_predicates)


def level_size(size: int, cfg: CompactionConfig) -> int:
    """SizeBasedCumulativeCompactionPolicy::_level_size: the size class of `size` bytes.

    0 below 1 KiB; otherwise the largest power of two <= size, capped at the largest power of
    two <= promotion_size / 2 (the configured maximum promotion size, not the tablet's).
    """
    if size < 1024:
        return 0
    half = cfg.promotion_size // 2
    max_level = _floor_pow2(half) if half >= 1 else 0
    if size >= max_level:
        return max_level
    return _floor_pow2(size)


def promotion_size(base: RowsetMeta, cfg: CompactionConfig) -> int:
    """SizeBasedCumulativeCompactionPolicy::_calc_promotion_size: base size * ratio, clamped
    to [promotion_min_size, promotion_size] (the maximum is tested first, as in Doris)."""
    size = int(base.data_size * cfg.compaction_promotion_ratio)
    if size >= cfg.promotion_size:
        return cfg.promotion_size
    if size <= cfg.promotion_min_size:
        return cfg.promotion_min_size
    return size


# ---------------------------------------------------------------------------------------------
# cumulative compaction


@dataclass(frozen=True, slots=True)
class CumulativePick:
    """What one cumulative compaction round decided.

    `inputs` empty means nothing to merge; then `new_point` (if set) is where the caller must
    move the cumulative point, `init_success_times` asks the caller to stamp both compaction
    success times with `now` (Doris does so on the first empty pick), and `reason` says why
    (shown by the compaction status endpoint). `last_delete_version` is the delete version the
    walk met, (-1, -1) if none; pass it to `update_cumulative_point` after the merge.
    """

    inputs: tuple[RowsetMeta, ...]
    score: int
    last_delete_version: tuple[int, int] = NO_DELETE_VERSION
    new_point: int | None = None
    reason: str = ""
    init_success_times: bool = False


def calculate_cumulative_point(
    rowsets: Sequence[RowsetMeta], current_point: int, cfg: CompactionConfig
) -> int:
    """SizeBasedCumulativeCompactionPolicy::calculate_cumulative_point (tablet RUNNING).

    Computed once: a point other than -1 is returned unchanged (compaction moves it after
    that). Otherwise walk the rowsets from the base: a non-delete rowset that is overlapping,
    or (past the base) smaller than the promotion size, stops the walk at its start version;
    every other rowset (delete versions included) is passed and the point becomes its end + 1.
    An empty tablet (only the virtual [0-1]) gives 2. Doris also stops at a version hole; here
    there are none (module docstring).
    """
    if current_point != INVALID_CUMULATIVE_POINT:
        return current_point
    all_rs = with_initial_rowset(rowsets)
    promotion = promotion_size(all_rs[0], cfg)
    point = INVALID_CUMULATIVE_POINT
    for rs in all_rs:
        if not is_delete(rs):
            if is_overlapping(rs):
                return rs.start_version
            if rs.start_version != 0 and rs.data_size < promotion:
                return rs.start_version
        point = rs.end_version + 1
    return point


def cumulative_candidates(rowsets: Sequence[RowsetMeta], point: int) -> list[RowsetMeta]:
    """Tablet::pick_candidate_rowsets_to_cumulative_compaction: rowsets starting at or above
    the point, in version order; none while the point is -1. Never the virtual [0-1].

    Doris 2.x has no cumulative_compaction_skip_window_seconds any more (seed 002 3.2 predates
    that), so every such rowset is a candidate.
    """
    if point == INVALID_CUMULATIVE_POINT:
        return []
    return [
        rs
        for rs in with_initial_rowset(rowsets)
        if rs.start_version >= point and not is_virtual(rs)
    ]


def pick_cumulative_inputs(
    rowsets: Sequence[RowsetMeta],
    point: int,
    cfg: CompactionConfig,
    now: float,
    last_cumu_success: float,
    last_base_success: float,
) -> CumulativePick:
    """CumulativeCompaction::pick_rowsets_to_compact with the size_based pick_input_rowsets.

    1. Walk the candidates: a delete version is recorded in last_delete_version; it ends the
       walk when inputs were collected, and is skipped (inputs reset) otherwise.
    2. Trim from the back while the score exceeds cumulative_compaction_max_deltas (at least one
       input stays); if one non-overlapping rowset is left, the last popped one comes back (a
       lone non-overlapping rowset cannot be merged, so accept a one-off overshoot).
    3. Inputs of at least the promotion size are taken as they are.
    4. After a delete version: taken as they are, except one non-overlapping rowset.
    5. Level trimming: drop leading rowsets whose size level is above that of the rest
       (128M, 16M, 16M, 16M -> the three 16M). If nothing is left but the score reached
       max_deltas, merge the rowset with the highest score (> 1), else all of them: the inputs
       would never change otherwise.
    6. Below compaction_min_size the score must reach cumulative_compaction_min_deltas; above
       it, one non-overlapping rowset is not worth a merge.
    7. Nothing picked: after a delete version the point moves past it. Otherwise, once neither
       compaction succeeded for pick_rowset_to_compact_interval_sec, merge every candidate if
       one of them is overlapping, else move the point past them so base compaction takes them.

    Step 2 follows Doris' current trim-from-the-back (2.1 stopped collecting once the score
    reached max_deltas, overshooting by up to one rowset). Step 7's point for non-overlapping
    candidates is the last candidate's end + 1 where Doris writes start + 1: equal for a
    single-version rowset, and it never splits a merged [a-b] across the point.
    """
    candidates = cumulative_candidates(rowsets, point)
    if not candidates:
        return CumulativePick((), 0, reason="candidate_rowsets is empty")
    promotion = promotion_size(with_initial_rowset(rowsets)[0], cfg)
    inputs, last_delete = _collect_inputs(candidates)
    inputs = _trim_to_max_deltas(inputs, cfg.cumulative_compaction_max_deltas)
    picked = _apply_size_policy(inputs, last_delete, promotion, cfg)
    if picked:
        return CumulativePick(tuple(picked), _score(picked), last_delete)

    if last_delete != NO_DELETE_VERSION:
        # Hand the delete version over to base compaction: only base compaction applies it to
        # every lower version.
        return CumulativePick(
            (),
            0,
            last_delete,
            new_point=last_delete[0] + 1,
            reason=f"meet a delete version [{last_delete[0]}-{last_delete[1]}]; "
            "cumulative point moves past it",
        )
    if last_cumu_success == 0 and last_base_success == 0:
        return CumulativePick((), 0, reason=_not_enough(inputs, cfg), init_success_times=True)
    interval = cfg.pick_rowset_to_compact_interval_sec
    if now - last_cumu_success > interval and now - last_base_success > interval:
        if any(is_overlapping(rs) for rs in candidates):
            return CumulativePick(tuple(candidates), _score(candidates))
        return CumulativePick(
            (),
            0,
            new_point=candidates[-1].end_version + 1,
            reason=f"no compaction for {interval}s; cumulative point moves past "
            f"{len(candidates)} non-overlapping rowsets",
        )
    return CumulativePick((), 0, reason=_not_enough(inputs, cfg))


def update_cumulative_point(
    point: int,
    output: RowsetMeta,
    last_delete_version: tuple[int, int],
    promotion_size_value: int,
) -> int:
    """SizeBasedCumulativeCompactionPolicy::update_cumulative_point after a cumulative merge:
    past the output when the inputs stopped at a delete version or the output reached the
    promotion size; unchanged otherwise. (After a full compaction Doris calls this with the
    last input's version as the delete version, so the point moves past the output.)"""
    if last_delete_version[0] != -1:
        return output.end_version + 1
    if output.data_size >= promotion_size_value:
        return output.end_version + 1
    return point


def cumulative_score(rowsets: Sequence[RowsetMeta], point: int, cfg: CompactionConfig) -> int:
    """SizeBasedCumulativeCompactionPolicy::calc_cumulative_compaction_score.

    Rowsets ending at or above the point (all of them, the virtual [0-1] included, while the
    point is -1, as in Doris); their total score when their size reaches the promotion size,
    else the score left after the same level trimming as pick step 5.
    """
    all_rs = with_initial_rowset(rowsets)
    promotion = promotion_size(all_rs[0], cfg)
    part = [rs for rs in all_rs if rs.end_version >= point]
    score = _score(part)
    total = sum(rs.data_size for rs in part)
    if total >= promotion:
        return score
    part.sort(key=lambda rs: rs.end_version)
    for rs in part:
        if level_size(rs.data_size, cfg) <= level_size(total - rs.data_size, cfg):
            break
        total -= rs.data_size
        score -= rs.compaction_score
    return score


# ---------------------------------------------------------------------------------------------
# base and full compaction


@dataclass(frozen=True, slots=True)
class BasePick:
    """What one base compaction round decided; `inputs` empty with a `reason` when nothing.

    `inputs` may start with the virtual [0-1] (no files): the merger skips it, and the output
    starts at version 0 either way."""

    inputs: tuple[RowsetMeta, ...]
    score: int
    reason: str = ""


def base_candidates(rowsets: Sequence[RowsetMeta], point: int) -> list[RowsetMeta]:
    """Tablet::pick_candidate_rowsets_to_base_compaction: the rowsets below the cumulative
    point (the virtual [0-1] included), in version order.

    "Below" is start_version < point, as in Doris, so that every rowset is on exactly one side
    of the point (cumulative candidates start at or above it). ShaleDB never sets a point
    inside a rowset, so this equals end_version < point.
    """
    return [rs for rs in with_initial_rowset(rowsets) if rs.start_version < point]


def pick_base_inputs(
    rowsets: Sequence[RowsetMeta],
    point: int,
    cfg: CompactionConfig,
    now: float,
    tablet_create_time: float = 0.0,
) -> BasePick:
    """BaseCompaction::pick_rowsets_to_compact (Doris 2.1).

    Nothing with fewer than two candidates, with an overlapping one (cumulative compaction
    must merge it first), or with only [0-1] and one delta ([0-1] holds no data). Otherwise
    go when there are more than base_compaction_min_rowset_num candidates, when the rest
    outweighs the base by more than base_compaction_min_data_ratio (a base of 0 bytes counts
    as 1), or when the base is older than base_compaction_interval_seconds_since_last_operation.

    The age is the base rowset's own creation time, as in Doris (the first sorted input's
    creation_time(), not a "last base compaction" timestamp). Doris writes [0-1] when it
    creates the tablet, so before the first base compaction the age is the tablet's: pass
    `tablet_create_time` to give the virtual [0-1] that time; the default 0 makes it
    infinitely old. (Doris 3.x hardcodes the 86400 s threshold; the config knob is kept.)
    Doris 2.1 also refuses a base that does not start at 0 while a delete version is among
    the inputs, and skips big leading rowsets of DUPLICATE tables
    (enable_dup_key_base_compaction_skip_big_file); the first cannot happen with the virtual
    [0-1], the second is a resource tweak ShaleDB does not need.
    """
    inputs = base_candidates(with_initial_rowset(rowsets, tablet_create_time), point)
    if len(inputs) < 2:
        return BasePick((), 0, f"need at least 2 rowsets below the cumulative point {point}")
    for rs in inputs:
        if is_overlapping(rs):
            return BasePick(
                (),
                0,
                f"rowset overlapping: [{rs.start_version}-{rs.end_version}] is below the "
                f"cumulative point {point}",
            )
    if len(inputs) == 2 and inputs[0].end_version == 1:
        return BasePick((), 0, "only [0-1] and one delta: no need to do base compaction")
    go = BasePick(tuple(inputs), _score(inputs))
    if len(inputs) > cfg.base_compaction_min_rowset_num:
        return go
    base_size = max(inputs[0].data_size, 1)
    ratio = sum(rs.data_size for rs in inputs[1:]) / base_size
    if ratio > cfg.base_compaction_min_data_ratio:
        return go
    age = now - inputs[0].create_time
    if age > cfg.base_compaction_interval_seconds_since_last_operation:
        return go
    return BasePick(
        (),
        0,
        f"don't satisfy the base compaction policy. rowsets: {len(inputs)}, "
        f"cumulative_base_ratio: {ratio:.4g}, interval_since_last_base_compaction: {age:.0f}s",
    )


def base_score(rowsets: Sequence[RowsetMeta], point: int) -> int:
    """Tablet::_calc_base_compaction_score: the score of the rowsets starting below the point.

    No minimum count in Doris (a tablet with only [0-1] scores 1); its "0 without a base
    rowset" case cannot happen here because of the virtual [0-1].
    """
    return _score(rs for rs in with_initial_rowset(rowsets) if rs.start_version < point)


def pick_full_inputs(rowsets: Sequence[RowsetMeta]) -> tuple[RowsetMeta, ...]:
    """FullCompaction::pick_rowsets_to_compact: every rowset, the virtual [0-1] included.

    Nothing when there is nothing to merge: a single real rowset from version 0 that is
    non-overlapping and carries no delete, or no real rowset at all. Doris also
    skips [0-1] plus one delta; here that pair still merges into one [0-b] rowset, because
    ShaleDB's [0-1] is not physical and the merge brings VersionCount from 2 to 1.
    """
    all_rs = with_initial_rowset(rowsets)
    # A lone rowset from 0 is either a real one or the virtual [0-1] of an empty tablet.
    if len(all_rs) == 1 and not is_overlapping(all_rs[0]) and not is_delete(all_rs[0]):
        return ()
    return tuple(all_rs)


# ---------------------------------------------------------------------------------------------
# helpers


def _version_key(rs: RowsetMeta) -> tuple[int, int]:
    return (rs.start_version, rs.end_version)


def _floor_pow2(n: int) -> int:
    return 1 << (n.bit_length() - 1)


def _score(rowsets: Iterable[RowsetMeta]) -> int:
    return sum(rs.compaction_score for rs in rowsets)


def _collect_inputs(
    candidates: Sequence[RowsetMeta],
) -> tuple[list[RowsetMeta], tuple[int, int]]:
    """Pick step 1: the run of candidates up to the first delete version after some input."""
    inputs: list[RowsetMeta] = []
    last_delete = NO_DELETE_VERSION
    for rs in candidates:
        if is_delete(rs):
            last_delete = (rs.start_version, rs.end_version)
            if inputs:
                break
            continue
        inputs.append(rs)
    return inputs, last_delete


def _trim_to_max_deltas(inputs: list[RowsetMeta], max_deltas: int) -> list[RowsetMeta]:
    """Pick step 2."""
    out = list(inputs)
    score = _score(out)
    last_popped: RowsetMeta | None = None
    while len(out) > 1 and score > max_deltas:
        last_popped = out.pop()
        score -= last_popped.compaction_score
    if len(out) == 1 and last_popped is not None and not is_overlapping(out[0]):
        out.append(last_popped)
    return out


def _apply_size_policy(
    inputs: list[RowsetMeta],
    last_delete: tuple[int, int],
    promotion: int,
    cfg: CompactionConfig,
) -> list[RowsetMeta]:
    """Pick steps 3 to 6 on the trimmed inputs; returns what to merge (maybe nothing)."""
    total = sum(rs.data_size for rs in inputs)
    if total >= promotion:
        return inputs
    if last_delete != NO_DELETE_VERSION:
        if len(inputs) == 1 and not is_overlapping(inputs[0]):
            return []
        return inputs

    score = _score(inputs)
    first_kept = 0
    kept_total, kept_score = total, score
    while first_kept < len(inputs):
        size = inputs[first_kept].data_size
        if level_size(size, cfg) <= level_size(kept_total - size, cfg):
            break
        kept_total -= size
        kept_score -= inputs[first_kept].compaction_score
        first_kept += 1
    if first_kept == len(inputs) and inputs and score >= cfg.cumulative_compaction_max_deltas:
        # Every rowset is a level above the rest, yet the score is at the maximum: these inputs
        # would never change, so merge something now to bring the score down.
        best = max(inputs, key=lambda rs: rs.compaction_score)
        return [best] if best.compaction_score > 1 else inputs
    kept = inputs[first_kept:]
    if not kept:
        return []
    if kept_total < cfg.compaction_min_size:
        if kept_score < cfg.cumulative_compaction_min_deltas:
            return []
    elif len(kept) == 1 and not is_overlapping(kept[0]):
        return []
    return kept


def _not_enough(inputs: Sequence[RowsetMeta], cfg: CompactionConfig) -> str:
    if not inputs:
        return "no rowset to compact above the cumulative point"
    size = sum(rs.data_size for rs in inputs)
    return (
        f"not enough to compact: {len(inputs)} rowsets, score {_score(inputs)} "
        f"(cumulative_compaction_min_deltas {cfg.cumulative_compaction_min_deltas}), "
        f"{size} bytes (compaction_min_size {cfg.compaction_min_size})"
    )
