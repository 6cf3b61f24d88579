"""Doris' privilege model: who may do what, checked in one place.

- `model.py`: privileges, predicates (what an operation needs), resource and host patterns.
- `manager.py`: users, roles and grants in the catalog (Doris' `Auth`).
- `statements.py`: the account statements (CREATE USER, GRANT, SHOW GRANTS, ...).
- `enforce.py`: which check each SQL statement family needs, over every table it touches.
- `http_auth.py`: HTTP basic auth for the HTTP port, with the same accounts.

`check(access, predicate, db, tbl)` is the single entry every statement family (and HTTP
handler) calls; it raises Doris' error for the level that was checked: 1142 for a table,
1044 for a database, 1227 for a global privilege.
"""

from __future__ import annotations

from dataclasses import dataclass

from server.privileges.manager import PrivilegeManager
from server.privileges.model import INTERNAL_CATALOG, Identity, Predicate
from storage.errors import DorisError, ErrorCode


@dataclass(frozen=True)
class Access:
    """Who is asking: the manager, the logged-in identity and the client's address."""

    manager: PrivilegeManager
    identity: Identity
    client_ip: str = "127.0.0.1"

    def has(self, predicate: Predicate, db: str | None = None, tbl: str | None = None,
            ctl: str = INTERNAL_CATALOG) -> bool:
        return self.manager.has(self.identity, predicate, db, tbl, ctl)


def specific_denied(predicate: Predicate) -> DorisError:
    return DorisError(f"Access denied; you need (at least one of) the {predicate.name} "
                      "privilege(s) for this operation", ErrorCode.SPECIFIC_ACCESS_DENIED)


def database_denied(access: Access, db: str) -> DorisError:
    return DorisError(f"Access denied for user {access.identity} to database '{db}'",
                      ErrorCode.DBACCESS_DENIED)


def table_denied(access: Access, command: str, db: str, tbl: str,
                 ctl: str = INTERNAL_CATALOG) -> DorisError:
    return DorisError(f"{command} command denied to user '{access.identity.name}'@"
                      f"'{access.client_ip}' for table '{ctl}: {db}: {tbl}'",
                      ErrorCode.TABLEACCESS_DENIED)


def check(access: Access, predicate: Predicate, db: str | None = None, tbl: str | None = None,
          *, ctl: str = INTERNAL_CATALOG, command: str | None = None,
          specific: bool = False) -> None:
    """Raise unless `access` holds `predicate` on (ctl, db, tbl) or a level above it.
    `command` names the operation in a table-level error (default: the predicate's name);
    `specific` forces the 1227 wording (Doris uses it for CREATE TABLE and global checks)."""
    if access.has(predicate, db, tbl, ctl):
        return
    if specific or db is None:
        raise specific_denied(predicate)
    if tbl is None:
        raise database_denied(access, db)
    raise table_denied(access, command or predicate.name, db, tbl, ctl)


__all__ = ["Access", "PrivilegeManager", "check", "database_denied", "specific_denied",
           "table_denied"]
