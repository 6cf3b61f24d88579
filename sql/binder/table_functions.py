"""File table functions in FROM: `local("file_path" = "..", "format" = "csv", ..)`.

Owns the SQL side of Doris' table-valued functions (TVFs): recognising a `FROM fn(..)` item,
reading its `"key" = "value"` arguments with Doris' checks and wording, and the bound relation
(`FileSource`): the files to read, the format options, and the columns the file gives (CSV:
c1, c2, .. all STRING; parquet / orc: the file schema in Doris types). Finding the files and
their schema needs the file system, so the binder asks a `FileFunctionResolver` the session
carries (executor/file_scan.py implements it; this layer never opens a file).
Upstream: Doris `LocalTableValuedFunction`, `ExternalFileTableValuedFunction`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sqlglot import exp

from sql.errors import DorisError
from storage.types import DataType

FILE_FORMATS = ("csv", "csv_with_names", "csv_with_names_and_types", "json", "parquet", "orc")
TABLE_FUNCTIONS = ("local",)
LOCATION_PROPERTIES = frozenset({"file_path", "backend_id", "shared_storage"})
# Doris' FILE_FORMAT_PROPERTIES (ExternalFileTableValuedFunction) plus `skip_lines`
FORMAT_PROPERTIES = frozenset({
    "format", "column_separator", "line_delimiter", "compress_type", "read_json_by_line",
    "strip_outer_array", "json_root", "jsonpaths", "num_as_string", "fuzzy_parse",
    "trim_double_quotes", "skip_lines", "enclose", "escape", "csv_schema",
    "path_partition_keys",
})


@dataclass(frozen=True, slots=True)
class FileSource:
    """A bound `local(..)`: the files (absolute, sorted) and how to parse them."""

    function: str
    alias: str
    paths: tuple[str, ...]
    format: str
    options: tuple[tuple[str, str], ...]  # format properties, keys lower-case
    names: tuple[str, ...]
    types: tuple[DataType, ...]
    row_estimate: int = 0  # rows the files hold (parquet / orc footers) or likely hold (text)

    def option(self, key: str, default: str = "") -> str:
        return next((v for k, v in self.options if k == key), default)


class FileFunctionResolver(Protocol):
    """Finds the files of a table function call and their schema (executor/file_scan.py)."""

    def resolve(self, function: str, properties: dict[str, str], alias: str) -> FileSource: ...


def table_function_call(table: exp.Table) -> tuple[str, dict[str, str]] | None:
    """`FROM fn("k" = "v", ..)` -> (fn lower-case, properties); None for a plain table."""
    call = table.this
    if not isinstance(call, (exp.Anonymous, exp.Func)) or isinstance(call, exp.Identifier):
        return None
    name = (call.name if isinstance(call, exp.Anonymous) else call.sql_name()).lower()
    return name, function_properties(call, name)


def function_properties(call: exp.Expr, name: str) -> dict[str, str]:
    """The `"key" = "value"` arguments; keys are case-insensitive as in Doris."""
    props: dict[str, str] = {}
    args = call.expressions if isinstance(call, exp.Anonymous) else \
        [a for a in call.args.values() if isinstance(a, exp.Expression)]
    for arg in args:
        if not (isinstance(arg, exp.EQ) and isinstance(arg.this, exp.Literal)
                and isinstance(arg.expression, exp.Literal)):
            raise DorisError(f"table function {name} takes only \"key\" = \"value\" "
                             f"arguments, got {arg.sql()}")
        props[arg.this.name.lower()] = arg.expression.name
    return props


def check_local_properties(props: dict[str, str]) -> None:
    """Doris' analysis of local(..): known keys, file_path, backend_id unless shared_storage,
    a known format."""
    for key in props:
        if key not in LOCATION_PROPERTIES and key not in FORMAT_PROPERTIES:
            raise DorisError(f"{key} is invalid property")
    if "file_path" not in props:
        raise DorisError("Property 'file_path' is required.")
    shared = props.get("shared_storage", "false").strip().lower() == "true"
    if "backend_id" not in props and not shared:
        raise DorisError("'backend_id' is required when 'shared_storage' is false.")
    if "format" not in props:
        raise DorisError("Property 'format' is required.")
    fmt = props["format"].strip().lower()
    if fmt not in FILE_FORMATS:
        raise DorisError(f"format:{fmt} is not supported.")
