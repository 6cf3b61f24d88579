"""sql/ddl/dynamic_partition.py against an independent reference written from DORIS_REFERENCE.md b.7
(a property test over random "todays": year ends, leap days, WEEK boundaries, every time unit,
start_day_of_week 1-7, start_day_of_month 1-28, DATE / DATETIME / integer columns), plus the
seed 001 examples and Doris' own naming comments as fixed cases."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sql.ddl import dynamic_partition as D

# ---- the reference: b.7 read literally, written without the module's helpers ----------------


def ref_lower(unit: str, today: dt.datetime, k: int, dow: int, dom: int) -> dt.datetime:
    if unit == "HOUR":  # current hour + k
        return today.replace(minute=0, second=0, microsecond=0) + dt.timedelta(hours=k)
    date = today.date()
    if unit == "DAY":  # today + k days
        out = date + dt.timedelta(days=k)
    elif unit == "WEEK":  # add k weeks, then the configured weekday of that (ISO) week
        moved = date + dt.timedelta(days=7 * k)
        monday = moved - dt.timedelta(days=moved.weekday())
        out = monday + dt.timedelta(days=dow - 1)
    elif unit == "MONTH":  # day `dom` of month current+k; before dom the period began last month
        year, month = date.year, date.month
        if date.day < dom:
            year, month = (year - 1, 12) if month == 1 else (year, month - 1)
        month += k
        while month > 12:
            year, month = year + 1, month - 12
        while month < 1:
            year, month = year - 1, month + 12
        out = dt.date(year, month, dom)
    else:  # YEAR: Jan 1 of year + k
        out = dt.date(date.year + k, 1, 1)
    return dt.datetime(out.year, out.month, out.day)


def ref_us_week(day: dt.date) -> int:
    """Calendar.WEEK_OF_YEAR (US): 1 + the Sundays after Jan 1 up to the day, unless the day's
    Sunday-to-Saturday week holds the next Jan 1 (then 1)."""
    saturday = day
    while saturday.isoweekday() != 6:
        saturday += dt.timedelta(days=1)
    if saturday.year != day.year:
        return 1
    sundays = 0
    d = dt.date(day.year, 1, 2)
    while d <= day:
        sundays += d.isoweekday() == 7
        d += dt.timedelta(days=1)
    return 1 + sundays


def ref_name(unit: str, prefix: str, lower: dt.datetime) -> str:
    if unit == "HOUR":
        return f"{prefix}{lower:%Y%m%d%H}"
    if unit == "DAY":
        return f"{prefix}{lower:%Y%m%d}"
    if unit == "MONTH":
        return f"{prefix}{lower:%Y%m}"
    if unit == "YEAR":
        return f"{prefix}{lower:%Y}"
    week = ref_us_week(lower.date())
    if week == 1 and lower.month == 12:
        week = 53
    return f"{prefix}{lower.year}_{week:02d}"


def ref_text(moment: dt.datetime, column: str) -> str:
    if column == "DATE":
        return moment.strftime("%Y-%m-%d")
    if column == "DATETIME":
        return moment.strftime("%Y-%m-%d %H:%M:%S")
    return moment.strftime("%Y%m%d")


FORMATS = {"DATE": D.DATE_FORMAT, "DATETIME": D.DATETIME_FORMAT, "INT": D.INTEGER_FORMAT}


def rule(unit: str, **kw: object) -> D.DynamicRule:
    base: dict[str, object] = {"enable": True, "time_unit": unit, "prefix": "p", "end": 3}
    base.update(kw)
    return D.DynamicRule(**base)  # type: ignore[arg-type]


# Days that stress boundaries: year ends, leap days, month ends, plus anything in 1990..2060.
_EDGES = [dt.date(y, m, d) for y in (1999, 2000, 2019, 2020, 2023, 2024, 2100)
          for m, d in ((12, 28), (12, 29), (12, 30), (12, 31), (1, 1), (1, 2), (2, 28), (2, 29),
                       (3, 1), (1, 7)) if not (m == 2 and d == 29 and y % 4 != 0 or y == 2100
                                              and (m, d) == (2, 29))]
days = st.one_of(st.sampled_from(_EDGES), st.dates(dt.date(1990, 1, 1), dt.date(2060, 12, 31)))


@settings(max_examples=400, deadline=None)
@given(
    today=days, hour=st.integers(0, 23), unit=st.sampled_from(["HOUR", "DAY", "WEEK", "MONTH",
                                                               "YEAR"]),
    column=st.sampled_from(["DATE", "DATETIME", "INT"]), dow=st.integers(1, 7),
    dom=st.integers(1, 28), start=st.integers(-30, -1), end=st.integers(1, 30),
    history=st.booleans(), history_num=st.one_of(st.just(-1), st.integers(0, 40)),
)
def test_wanted_partitions_match_reference(today, hour, unit, column, dow, dom, start, end,
                                           history, history_num) -> None:
    if unit == "HOUR" and column != "DATETIME":
        column = "DATETIME"  # HOUR is refused on DATE and integer columns
    r = rule(unit, start=start, end=end, start_day_of_week=dow, start_day_of_month=dom,
             create_history_partition=history, history_partition_num=history_num)
    now = dt.datetime(today.year, today.month, today.day, hour, 17, 42)
    got = D.wanted_partitions(r, now, FORMATS[column])
    lo = 0 if not history else (start if history_num == -1 else max(start, -history_num))
    assert [p.offset for p in got] == list(range(lo, end + 1))
    for p in got:
        lower = ref_lower(unit, now, p.offset, dow, dom)
        upper = ref_lower(unit, now, p.offset + 1, dow, dom)
        assert (p.name, p.lower, p.upper) == (
            ref_name(unit, "p", lower), ref_text(lower, column), ref_text(upper, column)), p
    # consecutive, non-overlapping periods
    assert all(a.upper == b.lower for a, b in itertools.pairwise(got))
    boundary = D.drop_boundary(r, now, FORMATS[column])
    assert boundary == ref_text(ref_lower(unit, now, start, dow, dom), column)


@settings(max_examples=200, deadline=None)
@given(day=days)
def test_calendar_week_matches_counting_sundays(day) -> None:
    assert D.calendar_week_of_year(day) == ref_us_week(day)


# ---- fixed cases: seed 001's examples and Doris' comments --------------------------------------
def _names(r: D.DynamicRule, now: str, column: str = "DATE") -> list[tuple[str, str, str]]:
    moment = dt.datetime.strptime(now, "%Y-%m-%d %H:%M:%S")
    return [(p.name, p.lower, p.upper) for p in D.wanted_partitions(r, moment, FORMATS[column])]


def test_seed_day_example() -> None:
    r = rule("DAY", start=-7, end=3)
    assert _names(r, "2020-05-29 08:00:00") == [
        ("p20200529", "2020-05-29", "2020-05-30"), ("p20200530", "2020-05-30", "2020-05-31"),
        ("p20200531", "2020-05-31", "2020-06-01"), ("p20200601", "2020-06-01", "2020-06-02")]
    # on 2020-06-06 everything before 2020-05-30 is dropped (p20200529)
    assert D.drop_boundary(r, dt.datetime(2020, 6, 6), D.DATE_FORMAT) == "2020-05-30"


@pytest.mark.parametrize("dow, expected", [
    (1, [("p2020_22", "2020-05-25 00:00:00", "2020-06-01 00:00:00"),
         ("p2020_23", "2020-06-01 00:00:00", "2020-06-08 00:00:00"),
         ("p2020_24", "2020-06-08 00:00:00", "2020-06-15 00:00:00")]),
    (3, [("p2020_22", "2020-05-27 00:00:00", "2020-06-03 00:00:00"),
         ("p2020_23", "2020-06-03 00:00:00", "2020-06-10 00:00:00"),
         ("p2020_24", "2020-06-10 00:00:00", "2020-06-17 00:00:00")]),
])
def test_seed_week_example(dow, expected) -> None:
    r = rule("WEEK", start=-2, end=2, start_day_of_week=dow)
    assert _names(r, "2020-05-29 00:00:00", "DATETIME") == expected


def test_seed_month_examples() -> None:
    r = rule("MONTH", end=2, start_day_of_month=3)
    assert _names(r, "2020-05-29 00:00:00") == [
        ("p202005", "2020-05-03", "2020-06-03"), ("p202006", "2020-06-03", "2020-07-03"),
        ("p202007", "2020-07-03", "2020-08-03")]
    r28 = rule("MONTH", end=2, start_day_of_month=28)
    assert _names(r28, "2020-05-20 00:00:00") == [
        ("p202004", "2020-04-28", "2020-05-28"), ("p202005", "2020-05-28", "2020-06-28"),
        ("p202006", "2020-06-28", "2020-07-28")]
    assert D.drop_boundary(r, dt.datetime(2020, 5, 29), D.DATE_FORMAT) is None  # start unset


@pytest.mark.parametrize("num, first", [(1, "p20210519"), (5, "p20210517"), (-1, "p20210517")])
def test_seed_history_partition_num(num, first) -> None:
    r = rule("DAY", start=-3, end=3, create_history_partition=True, history_partition_num=num)
    got = _names(r, "2021-05-20 00:00:00")
    assert got[0][0] == first and got[-1][0] == "p20210523"


def test_week_names_at_year_end() -> None:
    """Doris' comment: 2019-12-30 is week 53 of 2019; seed 001: a partition starting
    2019-12-31 is p2019_53 and one starting 2020-01-01 is p2020_01."""
    r = rule("WEEK", start_day_of_week=1)
    assert D.partition_name(r, dt.datetime(2019, 12, 30)) == "p2019_53"
    assert D.partition_name(r, dt.datetime(2019, 12, 31)) == "p2019_53"
    assert D.partition_name(r, dt.datetime(2020, 1, 1)) == "p2020_01"
    assert D.partition_name(r, dt.datetime(2020, 3, 25)) == "p2020_13"  # seed: 2020_13


def test_integer_column_and_hour_bounds() -> None:
    assert _names(rule("MONTH", end=1), "2024-02-29 00:00:00", "INT") == [
        ("p202402", "20240201", "20240301"), ("p202403", "20240301", "20240401")]
    assert _names(rule("HOUR", end=1), "2024-12-31 23:59:59", "DATETIME") == [
        ("p2024123123", "2024-12-31 23:00:00", "2025-01-01 00:00:00"),
        ("p2025010100", "2025-01-01 00:00:00", "2025-01-01 01:00:00")]


def test_start_too_small_is_a_plan_error() -> None:
    r = rule("YEAR", start=-99999999, end=1)
    with pytest.raises(D.PlanError):
        D.drop_boundary(r, dt.datetime(2024, 1, 1), D.DATE_FORMAT)


def test_rule_from_properties_and_show_values() -> None:
    props = {"dynamic_partition.time_unit": "month", "dynamic_partition.prefix": "p",
             "dynamic_partition.end": "2", "dynamic_partition.start_day_of_month": "24",
             "dynamic_partition.reserved_history_periods":
                 "[2021-12-01,2021-12-31],[2020-06-01,2020-06-20]"}
    r = D.DynamicRule.of(props)
    assert r is not None and r.enable and r.start == D.MIN_START and r.time_unit == "MONTH"
    assert r.start_of_info() == "24th"
    assert D.sorted_reserved_text(r) == "[2020-06-01,2020-06-20],[2021-12-01,2021-12-31]"
    assert D.reserved_ranges(r, D.INTEGER_FORMAT)[0] == ("20211201", "20211231")
    assert [D.ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd"]
    assert rule("WEEK", start_day_of_week=3).start_of_info() == "WEDNESDAY"
    assert rule("DAY").start_of_info() == "N/A"
    assert D.DynamicRule.of({"dynamic_partition.enable": "true"}) is None
