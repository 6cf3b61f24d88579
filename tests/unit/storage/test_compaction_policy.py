"""storage.compaction.policy: one test per rule of Doris' size_based cumulative policy and the
base / full compaction conditions, on real RowsetMeta values (seed 002 sections 3 and 4)."""

from __future__ import annotations

from dataclasses import replace

from storage.catalog.meta import DeleteCondition, RowsetMeta
from storage.compaction import policy as P
from storage.compaction.config import MB, CompactionConfig

CFG = CompactionConfig()  # promotion 1024 MB, min promotion 128 MB, min size 64 MB, deltas 5/1000
NOW = 1_000_000.0
RECENT = NOW - 10.0  # a success time well inside every interval
DAY = 86400
GB = 1024 * MB


def rs(
    start: int,
    end: int | None = None,
    *,
    size: int = 1 * MB,
    segments: int = 1,
    overlap: bool = False,
    delete: bool = False,
    create_time: float = RECENT,
) -> RowsetMeta:
    end = start if end is None else end
    files = () if delete else tuple(f"t/{start}_{end}_{i}.seg" for i in range(segments))
    preds = (DeleteCondition("k1", "=", (1,)),) if delete else ()
    return RowsetMeta(
        rowset_id=f"rs{start}_{end}",
        tablet_id=7,
        start_version=start,
        end_version=end,
        num_rows=0 if delete else 100,
        data_size=0 if delete else size,
        files=files,
        create_time=create_time,
        delete_predicates=preds,
        segments_overlap=overlap,
    )


def versions(rowsets: tuple[RowsetMeta, ...] | list[RowsetMeta]) -> list[tuple[int, int]]:
    return [(r.start_version, r.end_version) for r in rowsets]


def big_base(end: int = 10) -> RowsetMeta:
    """A 20 GB base: promotion size = min(20 GB * 0.05, 1 GB) = 1 GB."""
    return rs(0, end, size=20 * 1024 * MB)


def pick(rowsets: list[RowsetMeta], point: int, cfg: CompactionConfig = CFG) -> P.CumulativePick:
    return P.pick_cumulative_inputs(rowsets, point, cfg, NOW, RECENT, RECENT)


# ---- the virtual [0-1] -----------------------------------------------------------------------


def test_with_initial_rowset_prepends_a_virtual_base_once() -> None:
    out = P.with_initial_rowset([rs(3), rs(2)])
    assert versions(out) == [(0, 1), (2, 2), (3, 3)]
    virtual = out[0]
    assert P.is_virtual(virtual) and virtual.tablet_id == 7
    assert (virtual.data_size, virtual.files, virtual.create_time) == (0, (), 0.0)
    assert P.with_initial_rowset(out) == out
    assert versions(P.with_initial_rowset([rs(0, 5), rs(6)])) == [(0, 5), (6, 6)]


def test_version_count_counts_the_virtual_base() -> None:
    assert P.version_count([]) == 1
    assert P.version_count([rs(2), rs(3)]) == 3
    assert P.version_count([rs(0, 5), rs(6)]) == 2


# ---- sizes -----------------------------------------------------------------------------------


def test_level_size_boundaries() -> None:
    assert P.level_size(0, CFG) == 0
    assert P.level_size(1023, CFG) == 0
    assert P.level_size(1024, CFG) == 1024
    assert P.level_size(2047, CFG) == 1024
    assert P.level_size(2048, CFG) == 2048
    assert P.level_size(16 * MB + 5, CFG) == 16 * MB
    # The top level is the largest power of two <= promotion_size / 2 (512 MB here).
    assert P.level_size(512 * MB - 1, CFG) == 256 * MB
    assert P.level_size(512 * MB, CFG) == 512 * MB
    assert P.level_size(5 * 1024 * MB, CFG) == 512 * MB
    odd = replace(CFG, compaction_promotion_size_mbytes=1000)  # half = 500 MB -> 256 MB
    assert P.level_size(400 * MB, odd) == 256 * MB


def test_promotion_size_is_clamped() -> None:
    assert P.promotion_size(rs(0, 1, size=0), CFG) == 128 * MB
    assert P.promotion_size(rs(0, 9, size=10 * 1024 * MB), CFG) == 512 * MB
    assert P.promotion_size(rs(0, 9, size=100 * 1024 * MB), CFG) == 1024 * MB
    assert P.promotion_size(rs(0, 9, size=128 * MB * 20), CFG) == 128 * MB
    assert P.promotion_size(rs(0, 9, size=128 * MB * 20 + 20), CFG) == 128 * MB + 1


# ---- cumulative point ------------------------------------------------------------------------


def test_cumulative_point_of_an_empty_tablet_is_2() -> None:
    assert P.calculate_cumulative_point([], -1, CFG) == 2


def test_cumulative_point_is_computed_once() -> None:
    assert P.calculate_cumulative_point([rs(2, size=500 * MB)], 7, CFG) == 7


def test_cumulative_point_stops_at_an_overlapping_rowset() -> None:
    rowsets = [rs(2, size=200 * MB), rs(3, size=200 * MB, segments=3, overlap=True)]
    assert P.calculate_cumulative_point(rowsets, -1, CFG) == 3
    # One segment is one sorted run whatever its flag: it does not stop the walk.
    rowsets = [rs(2, size=200 * MB), rs(3, size=200 * MB, overlap=True)]
    assert P.calculate_cumulative_point(rowsets, -1, CFG) == 4


def test_cumulative_point_stops_at_a_rowset_below_promotion_size() -> None:
    rowsets = [rs(2, size=200 * MB), rs(3, size=10 * MB), rs(4, size=200 * MB)]
    assert P.calculate_cumulative_point(rowsets, -1, CFG) == 3
    # The promotion size comes from the base: 10 GB * 0.05 = 512 MB.
    rowsets = [rs(0, 5, size=10 * 1024 * MB), rs(6, size=300 * MB)]
    assert P.calculate_cumulative_point(rowsets, -1, CFG) == 6


def test_cumulative_point_passes_delete_versions_and_skipped_versions() -> None:
    rowsets = [rs(2, size=200 * MB), rs(3, delete=True), rs(6, size=200 * MB), rs(9)]
    assert P.calculate_cumulative_point(rowsets, -1, CFG) == 9
    rowsets = [rs(2, delete=True), rs(5, size=200 * MB)]
    assert P.calculate_cumulative_point(rowsets, -1, CFG) == 6


# ---- cumulative candidates and inputs --------------------------------------------------------


def test_cumulative_candidates_never_hold_the_virtual_base() -> None:
    rowsets = [rs(4), rs(2), rs(3)]
    assert versions(P.cumulative_candidates(rowsets, 3)) == [(3, 3), (4, 4)]
    assert versions(P.cumulative_candidates(rowsets, 0)) == [(2, 2), (3, 3), (4, 4)]
    assert P.cumulative_candidates(rowsets, -1) == []
    chosen = pick([rs(v) for v in range(2, 7)], 0)
    assert versions(chosen.inputs) == [(v, v) for v in range(2, 7)]


def test_level_trimming_picks_the_three_small_rowsets() -> None:
    cfg = replace(CFG, compaction_min_size_mbytes=32)
    rowsets = [big_base(), rs(11, size=128 * MB)] + [rs(v, size=16 * MB) for v in (12, 13, 14)]
    chosen = pick(rowsets, 11, cfg)
    assert versions(chosen.inputs) == [(12, 12), (13, 13), (14, 14)]
    assert chosen.score == 3


def test_min_deltas_threshold() -> None:
    four = [rs(v) for v in range(2, 6)]
    chosen = pick(four, 2)
    assert chosen.inputs == () and chosen.new_point is None
    assert "score 4" in chosen.reason
    five = [rs(v) for v in range(2, 7)]
    chosen = pick(five, 2)
    assert versions(chosen.inputs) == [(v, v) for v in range(2, 7)]
    assert chosen.score == 5


def test_inputs_reaching_the_promotion_size_are_taken_whole() -> None:
    # Level trimming would drop the 100 MB rowset; together they reach 128 MB.
    chosen = pick([rs(2, size=100 * MB), rs(3, size=30 * MB)], 2)
    assert versions(chosen.inputs) == [(2, 2), (3, 3)]


def test_max_deltas_trims_from_the_back() -> None:
    cfg = replace(CFG, cumulative_compaction_max_deltas=3, cumulative_compaction_min_deltas=2)
    chosen = pick([rs(v) for v in range(2, 7)], 2, cfg)
    assert versions(chosen.inputs) == [(2, 2), (3, 3), (4, 4)]
    assert chosen.score == 3


def test_max_deltas_overshoot_keeps_a_lone_non_overlapping_rowset_mergeable() -> None:
    cfg = replace(CFG, cumulative_compaction_max_deltas=3)
    a, b = rs(2), rs(3, segments=5, overlap=True)
    chosen = pick([a, b], 2, cfg)
    assert chosen.inputs == (a, b)
    assert chosen.score == 6


def test_an_overlapping_rowset_left_alone_by_max_deltas_is_merged() -> None:
    cfg = replace(CFG, cumulative_compaction_max_deltas=3)
    b = rs(2, segments=5, overlap=True)
    chosen = pick([b, rs(3)], 2, cfg)
    # Trimmed to [b]; level trimming empties it, but the score is at the maximum, so the
    # rowset with the highest score is merged on its own.
    assert chosen.inputs == (b,)
    assert chosen.score == 5


def test_the_rowset_with_the_highest_score_is_merged_when_levels_leave_nothing() -> None:
    cfg = replace(CFG, cumulative_compaction_max_deltas=7)
    worst = rs(3, size=8 * MB, segments=5, overlap=True)
    # 64 MB > level(9 MB), 8 MB > level(1 MB), 1 MB > level(0): level trimming drops all three,
    # yet the score (7) is at the maximum and would never fall: merge the worst rowset.
    chosen = pick([rs(2, size=64 * MB), worst, rs(4, size=MB)], 2, cfg)
    assert chosen.inputs == (worst,) and chosen.score == 5


def test_when_no_rowset_has_a_score_above_one_all_are_kept() -> None:
    cfg = replace(CFG, cumulative_compaction_max_deltas=2)
    a, b = rs(2, size=64 * MB), rs(3, size=2 * MB)
    # 64 MB is two levels above 2 MB, and 2 MB above nothing: level trimming drops both.
    chosen = pick([a, b], 2, cfg)
    assert chosen.inputs == (a, b)


def test_a_lone_overlapping_rowset_of_promotion_size_is_picked() -> None:
    lone = rs(2, size=200 * MB, segments=4, overlap=True)
    chosen = pick([lone], 2)
    assert chosen.inputs == (lone,) and chosen.score == 4


def test_one_small_overlapping_rowset_is_picked_but_not_a_non_overlapping_one() -> None:
    cfg = replace(CFG, compaction_min_size_mbytes=0)
    small = 500  # bytes: level 0, so level trimming keeps it
    overlapping = rs(2, size=small, segments=2, overlap=True)
    assert pick([overlapping], 2, cfg).inputs == (overlapping,)
    single = pick([rs(2, size=small)], 2, cfg)
    assert single.inputs == () and single.new_point is None


def test_delete_version_in_the_middle_stops_the_inputs_and_moves_the_point() -> None:
    rowsets = [rs(3), rs(4), rs(5, delete=True), rs(6), rs(7)]
    chosen = pick(rowsets, 3)
    assert versions(chosen.inputs) == [(3, 3), (4, 4)]
    assert chosen.last_delete_version == (5, 5) and chosen.new_point is None
    output = rs(3, 4, size=2 * MB)
    point = P.update_cumulative_point(3, output, chosen.last_delete_version, 128 * MB)
    assert point == 5
    # Next round the delete version leads: it is skipped (and recorded), and the rowsets
    # above it merge; the point will then move past them.
    after = [output, rs(5, delete=True), rs(6), rs(7)]
    chosen = pick(after, point)
    assert versions(chosen.inputs) == [(6, 6), (7, 7)]
    assert chosen.last_delete_version == (5, 5)


def test_a_lone_delete_version_is_skipped_and_the_point_moves_past_it() -> None:
    chosen = pick([rs(3, delete=True)], 3)
    assert chosen.inputs == ()
    assert chosen.last_delete_version == (3, 3) and chosen.new_point == 4
    assert "delete" in chosen.reason


def test_one_non_overlapping_rowset_before_a_delete_is_not_merged() -> None:
    chosen = pick([rs(3), rs(4, delete=True), rs(5)], 3)
    assert chosen.inputs == () and chosen.new_point == 5
    overlapping = rs(3, segments=3, overlap=True)
    chosen = pick([overlapping, rs(4, delete=True)], 3)
    assert chosen.inputs == (overlapping,) and chosen.last_delete_version == (4, 4)


def test_no_candidates() -> None:
    chosen = pick([rs(2)], 3)
    assert chosen.inputs == () and chosen.reason == "candidate_rowsets is empty"


def test_first_empty_pick_asks_to_initialise_the_success_times() -> None:
    chosen = P.pick_cumulative_inputs([rs(2)], 2, CFG, NOW, 0.0, 0.0)
    assert chosen.inputs == () and chosen.init_success_times and chosen.new_point is None
    assert not pick([rs(2)], 2).init_success_times


def test_stalled_tablet_after_the_pick_interval() -> None:
    old = NOW - DAY - 1
    stalled = [rs(2), rs(3), rs(5)]
    chosen = P.pick_cumulative_inputs(stalled, 2, CFG, NOW, old, old)
    assert chosen.inputs == () and chosen.new_point == 6
    # One success inside the interval is enough to wait.
    chosen = P.pick_cumulative_inputs(stalled, 2, CFG, NOW, old, RECENT)
    assert chosen.new_point is None
    # An overlapping candidate is merged (with all the others) before the point may move.
    with_overlap = [rs(2), rs(3, segments=2, overlap=True)]
    chosen = P.pick_cumulative_inputs(with_overlap, 2, CFG, NOW, old, old)
    assert chosen.inputs == tuple(with_overlap) and chosen.new_point is None


def test_update_cumulative_point() -> None:
    promo = 128 * MB
    assert P.update_cumulative_point(3, rs(3, 6, size=MB), (7, 7), promo) == 7
    assert P.update_cumulative_point(3, rs(3, 6, size=promo), P.NO_DELETE_VERSION, promo) == 7
    assert P.update_cumulative_point(3, rs(3, 6, size=promo - 1), (-1, -1), promo) == 3


# ---- scores ----------------------------------------------------------------------------------


def test_cumulative_score_uses_level_trimming_below_the_promotion_size() -> None:
    rowsets = [big_base(), rs(11, size=128 * MB)] + [rs(v, size=16 * MB) for v in (12, 13, 14)]
    assert P.cumulative_score(rowsets, 11, CFG) == 3
    # At the promotion size every rowset counts, overlapping ones by segment.
    rowsets = [rs(2, size=100 * MB, segments=4, overlap=True), rs(3, size=30 * MB)]
    assert P.cumulative_score(rowsets, 2, CFG) == 5
    # Rowsets ending below the point are the base side.
    big = [rs(v, size=200 * MB) for v in (2, 3, 4)]
    assert P.cumulative_score(big, 4, CFG) == 1
    assert P.cumulative_score(big, 2, CFG) == 3
    # Before the point is calculated every rowset counts, the virtual [0-1] too (as in Doris).
    assert P.cumulative_score([rs(2), rs(3)], -1, CFG) == 3


def test_base_score_sums_the_rowsets_below_the_point() -> None:
    assert P.base_score([], 2) == 1  # the [0-1] alone, as in Doris
    rowsets = [rs(2, segments=3, overlap=True), rs(3), rs(4)]
    assert P.base_score(rowsets, 4) == 1 + 3 + 1
    assert P.base_score([rs(0, 5), rs(6)], 6) == 1


# ---- base compaction -------------------------------------------------------------------------


def base(rowsets: list[RowsetMeta], point: int, cfg: CompactionConfig = CFG) -> P.BasePick:
    return P.pick_base_inputs(rowsets, point, cfg, NOW)


def test_base_candidates_are_below_the_point_in_version_order() -> None:
    assert versions(P.base_candidates([rs(3), rs(2), rs(4)], 4)) == [(0, 1), (2, 2), (3, 3)]
    assert P.base_candidates([rs(2)], -1) == []


def test_base_needs_two_rowsets() -> None:
    chosen = base([rs(2)], 2)
    assert chosen.inputs == () and "at least 2" in chosen.reason


def test_base_refuses_an_overlapping_rowset() -> None:
    chosen = base([rs(2), rs(3, segments=2, overlap=True), rs(4)], 5)
    assert chosen.inputs == () and "overlapping" in chosen.reason


def test_base_skips_the_empty_base_plus_one_delta() -> None:
    chosen = base([rs(2, size=500 * MB)], 3)
    assert chosen.inputs == () and "[0-1]" in chosen.reason
    # A real base plus one delta does merge (the ratio holds).
    assert versions(base([rs(0, 5), rs(6)], 7).inputs) == [(0, 5), (6, 6)]


def test_base_goes_on_rowset_count() -> None:
    cfg = replace(CFG, base_compaction_min_data_ratio=1000.0)
    tiny = [rs(v, size=1) for v in range(6, 10)]
    chosen = base([rs(0, 5, size=GB)] + tiny + [rs(10, size=1)], 11, cfg)
    assert len(chosen.inputs) == 6 and chosen.score == 6
    chosen = base([rs(0, 5, size=GB)] + tiny, 10, cfg)
    assert chosen.inputs == () and "rowsets: 5" in chosen.reason


def test_base_goes_on_size_ratio() -> None:
    chosen = base([rs(0, 5, size=1000 * MB), rs(6, size=200 * MB), rs(7, size=101 * MB)], 8)
    assert len(chosen.inputs) == 3
    chosen = base([rs(0, 5, size=1000 * MB), rs(6, size=200 * MB), rs(7, size=99 * MB)], 8)
    assert chosen.inputs == () and "don't satisfy the base compaction policy" in chosen.reason


def test_base_goes_on_the_age_of_the_base_rowset() -> None:
    rowsets = [rs(0, 5, size=GB, create_time=NOW - DAY - 1), rs(6, size=MB), rs(7, size=MB)]
    assert len(base(rowsets, 8).inputs) == 3
    rowsets[0] = replace(rowsets[0], create_time=NOW - DAY + 60)
    assert base(rowsets, 8).inputs == ()


def test_the_virtual_base_is_as_old_as_the_tablet() -> None:
    empty_loads = [rs(2, size=0), rs(3, size=0)]  # ratio 0: only the age can decide
    chosen = base(empty_loads, 4)
    assert versions(chosen.inputs) == [(0, 1), (2, 2), (3, 3)]
    assert P.is_virtual(chosen.inputs[0])
    young = P.pick_base_inputs(empty_loads, 4, CFG, NOW, tablet_create_time=NOW - 60)
    assert young.inputs == ()


def test_base_ignores_skipped_versions() -> None:
    chosen = base([rs(2), rs(5), rs(9)], 10)
    assert versions(chosen.inputs) == [(0, 1), (2, 2), (5, 5), (9, 9)]


# ---- full compaction -------------------------------------------------------------------------


def test_full_compaction_takes_every_rowset() -> None:
    assert P.pick_full_inputs([]) == ()
    assert P.pick_full_inputs([rs(0, 5)]) == ()
    overlapping = rs(0, 5, segments=3, overlap=True)
    assert P.pick_full_inputs([overlapping]) == (overlapping,)
    chosen = P.pick_full_inputs([rs(3, delete=True), rs(2)])
    assert versions(chosen) == [(0, 1), (2, 2), (3, 3)] and P.is_virtual(chosen[0])
    assert versions(P.pick_full_inputs([rs(2)])) == [(0, 1), (2, 2)]
