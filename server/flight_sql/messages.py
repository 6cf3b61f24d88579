"""The Flight SQL protocol messages we read and write, as protobuf classes built at import from
a descriptor written here (the field numbers and types of apache/arrow's format/FlightSql.proto,
package `arrow.flight.protocol.sql`), so no generated code is vendored.

Flight SQL sends every command as a `google.protobuf.Any` (in a FlightDescriptor's `cmd`, a
Ticket, or an Action body): `unpack_command` turns one into a message (None for a command this
server does not know) and `pack` wraps a reply. The file is declared proto2 so the `optional`
fields of FlightSql.proto keep their presence (`HasField`), which the metadata filters need
(an absent `catalog` means any catalog, an empty one means none); the wire format is the same.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

PACKAGE = "arrow.flight.protocol.sql"
TYPE_URL_PREFIX = "type.googleapis.com/"

_F = descriptor_pb2.FieldDescriptorProto
_ONE, _MANY = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
_STRING, _BYTES, _BOOL, _UINT32, _INT64 = (_F.TYPE_STRING, _F.TYPE_BYTES, _F.TYPE_BOOL,
                                           _F.TYPE_UINT32, _F.TYPE_INT64)

# message name -> (field name, number, type, label), as in FlightSql.proto
_FIELDS: dict[str, tuple[tuple[str, int, int, int], ...]] = {
    "CommandGetSqlInfo": (("info", 1, _UINT32, _MANY),),
    "CommandGetCatalogs": (),
    "CommandGetDbSchemas": (("catalog", 1, _STRING, _ONE),
                            ("db_schema_filter_pattern", 2, _STRING, _ONE)),
    "CommandGetTables": (("catalog", 1, _STRING, _ONE),
                         ("db_schema_filter_pattern", 2, _STRING, _ONE),
                         ("table_name_filter_pattern", 3, _STRING, _ONE),
                         ("table_types", 4, _STRING, _MANY),
                         ("include_schema", 5, _BOOL, _ONE)),
    "CommandGetTableTypes": (),
    "CommandStatementQuery": (("query", 1, _STRING, _ONE), ("transaction_id", 2, _BYTES, _ONE)),
    "CommandStatementUpdate": (("query", 1, _STRING, _ONE), ("transaction_id", 2, _BYTES, _ONE)),
    "TicketStatementQuery": (("statement_handle", 1, _BYTES, _ONE),),
    "CommandPreparedStatementQuery": (("prepared_statement_handle", 1, _BYTES, _ONE),),
    "CommandPreparedStatementUpdate": (("prepared_statement_handle", 1, _BYTES, _ONE),),
    "ActionCreatePreparedStatementRequest": (("query", 1, _STRING, _ONE),
                                             ("transaction_id", 2, _BYTES, _ONE)),
    "ActionCreatePreparedStatementResult": (("prepared_statement_handle", 1, _BYTES, _ONE),
                                            ("dataset_schema", 2, _BYTES, _ONE),
                                            ("parameter_schema", 3, _BYTES, _ONE),
                                            ("is_update", 4, _BOOL, _ONE)),
    "ActionClosePreparedStatementRequest": (("prepared_statement_handle", 1, _BYTES, _ONE),),
    "DoPutUpdateResult": (("record_count", 1, _INT64, _ONE),),
    "DoPutPreparedStatementResult": (("prepared_statement_handle", 1, _BYTES, _ONE),),
}


def _build_classes() -> dict[str, Any]:
    proto = descriptor_pb2.FileDescriptorProto(
        name="shaledb/flight_sql_subset.proto", package=PACKAGE, syntax="proto2")
    for name, fields in _FIELDS.items():
        message = proto.message_type.add(name=name)
        for field_name, number, field_type, label in fields:
            message.field.add(name=field_name, number=number, type=field_type, label=label)
    pool = descriptor_pool.DescriptorPool()  # our own pool: no clash with other registrations
    pool.Add(proto)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{name}"))
            for name in _FIELDS}


_CLASSES = _build_classes()

CommandGetSqlInfo = _CLASSES["CommandGetSqlInfo"]
CommandGetCatalogs = _CLASSES["CommandGetCatalogs"]
CommandGetDbSchemas = _CLASSES["CommandGetDbSchemas"]
CommandGetTables = _CLASSES["CommandGetTables"]
CommandGetTableTypes = _CLASSES["CommandGetTableTypes"]
CommandStatementQuery = _CLASSES["CommandStatementQuery"]
CommandStatementUpdate = _CLASSES["CommandStatementUpdate"]
TicketStatementQuery = _CLASSES["TicketStatementQuery"]
CommandPreparedStatementQuery = _CLASSES["CommandPreparedStatementQuery"]
CommandPreparedStatementUpdate = _CLASSES["CommandPreparedStatementUpdate"]
ActionCreatePreparedStatementRequest = _CLASSES["ActionCreatePreparedStatementRequest"]
ActionCreatePreparedStatementResult = _CLASSES["ActionCreatePreparedStatementResult"]
ActionClosePreparedStatementRequest = _CLASSES["ActionClosePreparedStatementRequest"]
DoPutUpdateResult = _CLASSES["DoPutUpdateResult"]
DoPutPreparedStatementResult = _CLASSES["DoPutPreparedStatementResult"]


def message_name(message: Any) -> str:
    """The short name of a message (`CommandStatementQuery`)."""
    return str(message.DESCRIPTOR.name)


def unpack_command(data: bytes) -> Any | None:
    """The Flight SQL message an `Any` carries; None when it is not one this server knows
    (or the bytes are no `Any`)."""
    wrapper = any_pb2.Any()
    try:
        wrapper.ParseFromString(data)
    except DecodeError:
        return None
    url = wrapper.type_url
    if not url.startswith(TYPE_URL_PREFIX + PACKAGE + "."):
        return None
    cls = _CLASSES.get(url.rsplit(".", 1)[-1])
    if cls is None:
        return None
    try:
        return cls.FromString(wrapper.value)
    except DecodeError:
        return None


def pack(message: Any) -> bytes:
    """`message` wrapped in an `Any`, serialized."""
    wrapper = any_pb2.Any()
    wrapper.Pack(message)
    return bytes(wrapper.SerializeToString())
