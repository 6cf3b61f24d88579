"""Doris' format properties -> a validated `FormatOptions`: how the bytes of a load are parsed.

The same names configure Stream Load's headers, LOAD DATA's PROPERTIES and the file table
functions' arguments: `format`, `column_separator`, `line_delimiter`, `enclose`, `escape`,
`trim_double_quotes`, `skip_lines`, `compress_type`, `read_json_by_line`, `strip_outer_array`,
`jsonpaths`, `json_root`, `fuzzy_parse`, `num_as_string`, and `timezone` (the wall clock a
zoned parquet/ORC/Arrow timestamp is loaded in). Everything is checked here, before
any data arrives, with Doris' messages.

Upstream: Doris `StreamLoadAction::_process_put`, `LoadUtil::parse_format`, the FE's
`CsvFileFormatProperties` / `JsonFileFormatProperties`.
"""

from __future__ import annotations

import json
import re
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass

FORMATS = ("csv", "csv_with_names", "csv_with_names_and_types", "json", "parquet", "orc",
           "arrow")
CSV_FORMATS = ("csv", "csv_with_names", "csv_with_names_and_types")

# Doris' compress_type names -> pyarrow's codec names (pyarrow.CompressedInputStream).
COMPRESS_TYPES = {"gz": "gzip", "gzip": "gzip", "bz2": "bz2", "bzip2": "bz2", "lz4": "lz4",
                  "lz4frame": "lz4", "zstd": "zstd", "plain": None, "": None}


class FormatError(Exception):
    """A format property Doris refuses: `message` is Doris' text with its status tag."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class FormatOptions:
    """How the bytes of the file are parsed (csv_source.py, json_source.py, columnar_source.py).

    Separators are bytes: Doris allows any byte string, `\\x01` hex forms included."""

    format: str = "csv"
    column_separator: bytes = b"\t"
    line_delimiter: bytes = b"\n"
    enclose: bytes | None = None
    escape: bytes | None = None
    trim_double_quotes: bool = False
    skip_rows: int = 0  # lines skipped before the data (skip_lines, or the csv_with_names header)
    compress_type: str | None = None  # pyarrow codec name, None for plain
    read_json_by_line: bool = False
    strip_outer_array: bool = False
    jsonpaths: tuple[str, ...] | None = None
    json_root: str | None = None
    fuzzy_parse: bool = False
    num_as_string: bool = False
    timezone: str = "UTC"  # ShaleDB's default session time_zone

    @property
    def separator(self) -> str:
        """The column separator as text (error messages, the src line of a filtered row)."""
        return self.column_separator.decode("utf-8", "replace")

    @property
    def is_csv(self) -> bool:
        return self.format in CSV_FORMATS

    @property
    def pyarrow_csv(self) -> bool:
        """Whether pyarrow.csv can read these CSV options as Doris means them: one-byte
        ASCII separator, enclose and escape, and `\\n` or `\\r\\n` lines."""
        def one_ascii(b: bytes | None) -> bool:
            return b is None or (len(b) == 1 and b[0] < 0x80 and b not in (b"\r", b"\n"))
        return (one_ascii(self.column_separator) and self.line_delimiter in (b"\n", b"\r\n")
                and one_ascii(self.enclose) and one_ascii(self.escape))


_ESCAPES = {"\\t": "\t", "\\n": "\n", "\\r": "\r", "\\\\": "\\"}


def parse_delimiter(raw: str, what: str) -> bytes:
    """Doris' separator text -> bytes: `\\x01` / `\\x0102` hex forms (Doris' `\\x` prefix
    marks invisible characters), the escapes `\\t`, `\\n`, `\\r`, or the text itself."""
    if raw.lower().startswith("\\x") and len(raw) > 2:
        digits = raw[2:]
        try:
            if len(digits) % 2:
                raise ValueError(digits)
            return bytes.fromhex(digits)
        except ValueError:
            raise FormatError(f"[INVALID_ARGUMENT]invalid {what}: {raw}") from None
    text = raw
    for esc, char in _ESCAPES.items():
        text = text.replace(esc, char)
    if not text:
        raise FormatError(f"[INVALID_ARGUMENT]{what} can not be empty")
    return text.encode()


def _single_byte(raw: str | None, what: str) -> bytes | None:
    if raw is None or raw == "":
        return None
    value = parse_delimiter(raw, what)
    if len(value) != 1:
        raise FormatError(f"[INVALID_ARGUMENT]{what} must be a single-char, but got: {raw}")
    return value


def _bool(props: Mapping[str, str], key: str) -> bool:
    # Doris compares the header with iequal(value, "true"): anything else is false
    return props.get(key, "false").strip().lower() == "true"


_PATH_STEP = re.compile(r"\.([^.\[\]]+)|\[\s*'([^']*)'\s*\]|\[\s*\"([^\"]*)\"\s*\]|\[(\d+|\*)\]")


def json_path_steps(path: str) -> list[str | int]:
    """A Doris JSON path (`$`, `$.a.b`, `$.a[0]`, `$['a b']`, `$.a[*]`) -> its steps: field
    names and array indexes (`[*]` is no step). Raises FormatError."""
    if not path.startswith("$"):
        raise FormatError(f"[INVALID_ARGUMENT]Invalid json path: {path}")
    steps: list[str | int] = []
    pos = 1
    while pos < len(path):
        m = _PATH_STEP.match(path, pos)
        if m is None:
            raise FormatError(f"[INVALID_ARGUMENT]Invalid json path: {path}")
        name = next((g for g in m.groups()[:3] if g is not None), None)
        if name is not None:
            steps.append(name)
        elif m.group(4) != "*":
            steps.append(int(m.group(4)))
        pos = m.end()
    return steps


def _jsonpaths(raw: str | None) -> tuple[str, ...] | None:
    if raw is None or not raw.strip():
        return None
    try:
        paths = json.loads(raw)
    except ValueError:
        paths = None
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise FormatError(f"[INVALID_ARGUMENT]Invalid json path: {raw}")
    for p in paths:
        json_path_steps(p)
    return tuple(paths)


_OFFSET = re.compile(r"^[+-](0\d|1[0-4]):[0-5]\d$")


def _timezone(raw: str | None) -> str:
    """Doris' `timezone` header: a tz database name or a `+08:00` offset."""
    name = (raw or "").strip() or "UTC"
    if _OFFSET.match(name):
        return name
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise FormatError(f"[INVALID_ARGUMENT]Unknown or incorrect time zone: '{name}'") \
            from None
    return name


def format_options(props: Mapping[str, str]) -> FormatOptions:
    """The format part of a load's properties. Raises FormatError."""
    raw_format = props.get("format", "csv").strip()
    fmt = raw_format.lower() or "csv"
    if fmt not in FORMATS:
        raise FormatError(f"[DATA_FILE_TYPE_ERROR]unknown data format, format={raw_format}")
    raw_compress = props.get("compress_type", "").strip()
    if raw_compress.lower() not in COMPRESS_TYPES:
        raise FormatError(f"[INVALID_ARGUMENT]unknown compress type: {raw_compress}, "
                          "supported: gz, bz2, lz4, zstd")
    skip_raw = props.get("skip_lines", "0").strip() or "0"
    try:
        skip_lines = int(skip_raw)
    except ValueError:
        skip_lines = -1
    if skip_lines < 0:
        raise FormatError(f"[INVALID_ARGUMENT]Invalid skip_lines: {skip_raw}, it should be a "
                          "non-negative integer")
    # Doris: skip_lines does not apply to csv_with_names*, whose header lines are skipped
    header_lines = {"csv_with_names": 1, "csv_with_names_and_types": 2}.get(fmt)
    json_root = props.get("json_root", "").strip() or None
    if json_root is not None:
        json_path_steps(json_root)
    opts = FormatOptions(
        format=fmt,
        column_separator=parse_delimiter(props.get("column_separator", "\t"),
                                         "column_separator"),
        line_delimiter=parse_delimiter(props.get("line_delimiter", "\n"), "line_delimiter"),
        enclose=_single_byte(props.get("enclose"), "enclose"),
        escape=_single_byte(props.get("escape"), "escape"),
        trim_double_quotes=_bool(props, "trim_double_quotes"),
        skip_rows=header_lines if header_lines is not None else skip_lines,
        compress_type=COMPRESS_TYPES[raw_compress.lower()],
        read_json_by_line=_bool(props, "read_json_by_line"),
        strip_outer_array=_bool(props, "strip_outer_array"),
        jsonpaths=_jsonpaths(props.get("jsonpaths")),
        json_root=json_root,
        fuzzy_parse=_bool(props, "fuzzy_parse"),
        num_as_string=_bool(props, "num_as_string"),
        timezone=_timezone(props.get("timezone")),
    )
    if opts.is_csv and opts.enclose is not None and not opts.pyarrow_csv:
        raise FormatError("[INVALID_ARGUMENT]enclose is not supported yet with a multi-byte "
                          "column_separator or a line_delimiter other than \\n and \\r\\n")
    return opts
