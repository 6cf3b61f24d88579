"""Dynamic partitions, the pure part: which partitions a table's `dynamic_partition.*` rules want
at a given "now", and which existing ones fall before the kept window.

No catalog and no clock here: the scheduler (server/dynamic_partitions.py) reads "now" from
storage/clock.py in the rule's time zone and applies the plan through sql/ddl/ddl_ops.py, one
catalog transaction per partition. Everything follows Doris' `DynamicPartitionUtil` and
`DynamicPartitionScheduler` (DORIS_REFERENCE.md b.7):

* offsets `lo..end` inclusive; `lo = 0` unless create_history_partition, then
  `max(start, -history_partition_num)` (or `start` when history_partition_num is unset);
* period starts: HOUR/DAY add k units; WEEK adds k weeks then moves to the configured weekday of
  that ISO week (which can lie after "now"); MONTH is day `start_day_of_month` of month + k, one
  month earlier while today is before that day; YEAR is Jan 1 of year + k; a partition's upper
  bound is the next offset's start;
* names are the prefix plus the lower bound formatted as yyyyMMddHH / yyyyMMdd / yyyyMM / yyyy,
  and for WEEK `yyyy_ww` with java.util.Calendar's US WEEK_OF_YEAR (weeks start on Sunday, week
  1 holds Jan 1) where a December date in week 1 becomes week 53 of its own year;
* partitions whose whole range lies before the `start` offset's lower bound are dropped unless
  they intersect a `reserved_history_periods` range (closed, in the column's format). Unlike
  Doris 1.x, partitions after `end` are never dropped (Doris 2.x `Range.atLeast`).
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass

MIN_START = -2147483648  # Integer.MIN_VALUE: "start" not given, nothing is ever dropped
NOT_SET_HISTORY_NUM = -1
NOT_SET_RESERVED = "NULL"

# The partition column's bound format (DynamicPartitionUtil.getPartitionFormat).
DATE_FORMAT = "%Y-%m-%d"
DATETIME_FORMAT = "%Y-%m-%d %H:%M:%S"
INTEGER_FORMAT = "%Y%m%d"

_WEEKDAYS = ("MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY")


class PlanError(Exception):
    """A rule that cannot be evaluated at this "now" (e.g. a start offset before year 1)."""


@dataclass(frozen=True, slots=True)
class DynamicRule:
    """A table's dynamic_partition.* properties, parsed (validation is sql/ddl/properties.py's)."""

    enable: bool
    time_unit: str  # HOUR / DAY / WEEK / MONTH / YEAR
    prefix: str
    end: int
    start: int = MIN_START
    buckets: int | None = None  # None: the table's bucket count
    time_zone: str | None = None  # None: the server's zone
    create_history_partition: bool = False
    history_partition_num: int = NOT_SET_HISTORY_NUM
    start_day_of_week: int = 1
    start_day_of_month: int = 1
    reserved_history_periods: str = NOT_SET_RESERVED
    replication_num: int | None = None
    hot_partition_num: int = 0
    storage_medium: str = ""  # "" unset, else SSD / HDD

    @classmethod
    def of(cls, props: Mapping[str, str]) -> DynamicRule | None:
        """The rule in a table's PROPERTIES, None when it has no dynamic_partition.time_unit."""
        dyn = {k[len("dynamic_partition."):]: v for k, v in props.items()
               if k.startswith("dynamic_partition.")}
        if "time_unit" not in dyn or "prefix" not in dyn or "end" not in dyn:
            return None
        replication = None
        if "replication_allocation" in dyn:
            m = re.search(r":\s*(\d+)", dyn["replication_allocation"])
            replication = int(m.group(1)) if m else None
        elif "replication_num" in dyn:
            replication = int(dyn["replication_num"])
        return cls(
            enable=dyn.get("enable", "true").strip().lower() == "true",
            time_unit=dyn["time_unit"].strip().upper(),
            prefix=dyn["prefix"].strip(),
            end=int(dyn["end"]),
            start=int(dyn.get("start", MIN_START)),
            buckets=int(dyn["buckets"]) if "buckets" in dyn else None,
            time_zone=dyn.get("time_zone") or None,
            create_history_partition=dyn.get("create_history_partition", "false").strip().lower()
            == "true",
            history_partition_num=int(dyn.get("history_partition_num", NOT_SET_HISTORY_NUM)),
            start_day_of_week=int(dyn.get("start_day_of_week", 1)),
            start_day_of_month=int(dyn.get("start_day_of_month", 1)),
            reserved_history_periods=(dyn.get("reserved_history_periods") or NOT_SET_RESERVED),
            replication_num=replication,
            hot_partition_num=int(dyn.get("hot_partition_num", 0)),
            storage_medium=(dyn.get("storage_medium") or "").strip().upper(),
        )

    @property
    def first_offset(self) -> int:
        """`lo`: the first offset created (DynamicPartitionUtil.getRealStart)."""
        if not self.create_history_partition:
            return 0
        if self.history_partition_num == NOT_SET_HISTORY_NUM:
            return self.start
        return max(self.start, -self.history_partition_num)

    def start_of_info(self) -> str:
        """SHOW DYNAMIC PARTITION TABLES' StartOf: MONDAY.. for WEEK, 1st.. for MONTH."""
        if self.time_unit == "WEEK":
            return _WEEKDAYS[self.start_day_of_week - 1]
        if self.time_unit == "MONTH":
            return ordinal(self.start_day_of_month)
        return "N/A"

    def zone(self) -> dt.tzinfo | None:
        return parse_time_zone(self.time_zone) if self.time_zone else None


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, .. 11th, 12th, 13th, 21st (Doris Util.ordinal)."""
    suffix = "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def parse_time_zone(text: str) -> dt.tzinfo:
    """An IANA name (Asia/Shanghai), UTC, or an offset (+08:00); ValueError when unknown."""
    value = text.strip()
    m = re.fullmatch(r"([+-])(\d{1,2}):(\d{2})", value)
    if m:
        sign = 1 if m.group(1) == "+" else -1
        delta = dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3)))
        if delta > dt.timedelta(hours=14):
            raise ValueError(value)
        return dt.timezone(sign * delta)
    try:
        return zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(value) from None


def period_start(rule: DynamicRule, now: dt.datetime, offset: int) -> dt.datetime:
    """Start of the period `offset` units from the one holding `now` (naive, the rule's zone).
    Raises PlanError when it falls outside years 1..9999."""
    try:
        day = dt.datetime(now.year, now.month, now.day)
        unit = rule.time_unit
        if unit == "HOUR":
            return day + dt.timedelta(hours=now.hour + offset)
        if unit == "DAY":
            return day + dt.timedelta(days=offset)
        if unit == "WEEK":
            shifted = day + dt.timedelta(weeks=offset)
            return shifted + dt.timedelta(days=rule.start_day_of_week - shifted.isoweekday())
        if unit == "MONTH":
            months = now.year * 12 + now.month - 1 + offset
            if now.day < rule.start_day_of_month:
                months -= 1
            return dt.datetime(months // 12, months % 12 + 1, rule.start_day_of_month)
        return dt.datetime(now.year + offset, 1, 1)  # YEAR
    except (OverflowError, ValueError) as e:
        raise PlanError(f"date/datetime literal out of range for offset {offset}: {e}") from None


def bound_text(moment: dt.datetime, fmt: str) -> str:
    """A bound in the partition column's format (DATE, DATETIME or integer yyyyMMdd)."""
    if fmt == INTEGER_FORMAT:
        return f"{moment.year:04d}{moment.month:02d}{moment.day:02d}"
    if fmt == DATE_FORMAT:
        return f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
    return f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d} {moment.hour:02d}:00:00"


def calendar_week_of_year(day: dt.date) -> int:
    """java.util.Calendar.WEEK_OF_YEAR with US defaults: weeks start on Sunday, week 1 is the
    week holding Jan 1 (so Dec 28..31 can be week 1 of the next year)."""
    days_since_sunday = day.isoweekday() % 7
    week_end = day + dt.timedelta(days=6 - days_since_sunday)
    if week_end.year > day.year:
        return 1
    jan1 = dt.date(day.year, 1, 1)
    return ((day - jan1).days + jan1.isoweekday() % 7) // 7 + 1


def partition_name(rule: DynamicRule, lower: dt.datetime) -> str:
    """The prefix plus the lower bound as Doris' getFormattedPartitionName formats it."""
    unit = rule.time_unit
    if unit == "HOUR":
        suffix = lower.strftime("%Y%m%d%H")
    elif unit == "DAY":
        suffix = lower.strftime("%Y%m%d")
    elif unit == "MONTH":
        suffix = lower.strftime("%Y%m")
    elif unit == "YEAR":
        suffix = f"{lower.year:04d}"
    else:
        week = calendar_week_of_year(lower.date())
        if week <= 1 and lower.month == 12:
            week += 52  # Doris: 2019-12-30 is week 53 of 2019, not week 1 of 2020
        suffix = f"{lower.year:04d}_{week:02d}"
    return rule.prefix + suffix


@dataclass(frozen=True, slots=True)
class PlannedPartition:
    offset: int
    name: str
    lower: str  # bound texts in the partition column's format
    upper: str


def wanted_partitions(rule: DynamicRule, now: dt.datetime, fmt: str) -> list[PlannedPartition]:
    """The partitions offsets `lo..end` ask for, oldest first. An offset whose bounds cannot
    be computed raises PlanError (Doris: 'maybe dynamic_partition.start is too small')."""
    out = []
    for offset in range(rule.first_offset, rule.end + 1):
        lower = period_start(rule, now, offset)
        upper = period_start(rule, now, offset + 1)
        out.append(PlannedPartition(offset, partition_name(rule, lower),
                                    bound_text(lower, fmt), bound_text(upper, fmt)))
    return out


def storage_placement(rule: DynamicRule, now: dt.datetime, offset: int) -> tuple[str, str]:
    """(storage medium, cooldown time) of the partition at `offset`, as Doris'
    DynamicPartitionScheduler.setStorageMediumProperty: without hot partitions (or with
    storage_medium SSD) the rule's storage_medium; otherwise HDD for offsets at or before
    -hot_partition_num, else SSD cooling down when the period `offset + hot_partition_num`
    begins (`yyyy-MM-dd HH:mm:ss`)."""
    hot = rule.hot_partition_num
    if hot <= 0 or rule.storage_medium == "SSD":
        return (rule.storage_medium or "HDD"), ""
    if offset + hot <= 0:
        return "HDD", ""
    return "SSD", period_start(rule, now, offset + hot).strftime("%Y-%m-%d %H:%M:%S")


def drop_boundary(rule: DynamicRule, now: dt.datetime, fmt: str) -> str | None:
    """Lower bound of the `start` offset: partitions wholly before it are dropped. None when
    `start` is unset (nothing is dropped). PlanError when it cannot be computed."""
    if rule.start == MIN_START:
        return None
    return bound_text(period_start(rule, now, rule.start), fmt)


def reserved_ranges(rule: DynamicRule, fmt: str) -> list[tuple[str, str]]:
    """`reserved_history_periods` as closed [lo, hi] bound texts in the column's format."""
    if rule.reserved_history_periods.strip().upper() == NOT_SET_RESERVED:
        return []
    if rule.time_unit == "HOUR":
        pattern = r"\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}),(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\]"
        parse = "%Y-%m-%d %H:%M:%S"
    else:
        pattern = r"\[(\d{4}-\d{2}-\d{2}),(\d{4}-\d{2}-\d{2})\]"
        parse = "%Y-%m-%d"
    out = []
    for lo, hi in re.findall(pattern, rule.reserved_history_periods):
        lo_t, hi_t = dt.datetime.strptime(lo, parse), dt.datetime.strptime(hi, parse)
        out.append((bound_text(lo_t, fmt), bound_text(hi_t, fmt)))
    return out


def sorted_reserved_text(rule: DynamicRule) -> str:
    """ReservedHistoryPeriods as SHOW prints it: NULL, or the periods sorted by lower bound."""
    text = rule.reserved_history_periods
    if text.strip().upper() == NOT_SET_RESERVED:
        return NOT_SET_RESERVED
    pattern = (r"\[(\d{4}-\d{2}-\d{2}(?: \d{2}:\d{2}:\d{2})?),"
               r"(\d{4}-\d{2}-\d{2}(?: \d{2}:\d{2}:\d{2})?)\]")
    pairs = sorted(re.findall(pattern, text))
    return ",".join(f"[{lo},{hi}]" for lo, hi in pairs)
