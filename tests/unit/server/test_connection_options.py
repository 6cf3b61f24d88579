"""The connection-level variables come typed from the registry (server/variables.py
`connection_options`), and the connection-facing modules get narrow services, not the server.

The wire behaviour of these values (packet limit, connect / wait / net_read timeouts) is
tested against a real server in tests/clients/test_protocol_hardening.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

from server.variables import ConnectionOptions, GlobalVariables, SessionVariables

SERVER = Path(__file__).resolve().parents[3] / "server"
CONNECTION_VARIABLES = {
    "max_allowed_packet", "connect_timeout", "wait_timeout", "net_read_timeout",
    "require_secure_transport", "default_password_lifetime", "audit_plugin_max_sql_length",
    "enable_short_circuit_query", "return_object_data_as_binary",
}


def test_defaults_are_typed_and_a_zero_timeout_is_none() -> None:
    session = SessionVariables(GlobalVariables())
    options = session.connection_options()
    assert options == ConnectionOptions(
        max_allowed_packet=16777216, connect_timeout=10.0, wait_timeout=28800.0,
        net_read_timeout=600.0, require_secure_transport=False, version="5.7.99",
        default_password_lifetime=0, audit_plugin_max_sql_length=4096,
        enable_short_circuit_query=True, return_object_data_as_binary=False)
    session.set("wait_timeout", "0")  # SET wait_timeout = '0': text converted at SET
    assert session.connection_options().wait_timeout is None
    assert isinstance(session.connection_options().max_allowed_packet, int)


def test_session_and_global_sets_are_seen_at_once() -> None:
    global_vars = GlobalVariables()
    session = SessionVariables(global_vars)
    assert session.connection_options().net_read_timeout == 600.0
    global_vars.set("max_allowed_packet", 4096)  # SET GLOBAL after the session read it
    session.set("net_read_timeout", 5)
    options = session.connection_options()
    assert (options.max_allowed_packet, options.net_read_timeout) == (4096, 5.0)
    global_vars.set("require_secure_transport", "ON")
    assert session.connection_options().require_secure_transport is True
    assert global_vars.connection_options().net_read_timeout == 600.0  # session-only SET


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add(node.module or "")
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def test_sessions_and_http_routes_never_import_the_server() -> None:
    """They get SessionServices / HttpServices (server/services.py), even for type hints."""
    modules = ["session", "connection", "prepared", "local_infile", "statement_audit", "http",
               "stream_load", "load_status", "metrics", "services"]
    found = [f"{m}: {n}" for m in modules for n in sorted(_imports(SERVER / f"{m}.py"))
             if n in ("server.app", "server.app.ShaleServer")]
    assert found == []


def test_no_module_but_the_registry_reads_connection_variables_by_name() -> None:
    """`variables.get("wait_timeout")` and the like are read once, typed, in
    server/variables.py; other modules use connection_options()."""
    found = []
    for path in sorted(SERVER.rglob("*.py")):
        if path.name == "variables.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr in ("get", "get_variable")
            ):
                found += [f"{path.relative_to(SERVER)}: {a.value}" for a in node.args
                          if isinstance(a, ast.Constant) and a.value in CONNECTION_VARIABLES]
    assert found == []
