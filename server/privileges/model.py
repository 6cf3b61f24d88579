"""Doris' privilege vocabulary: privileges, predicates, resource patterns and host patterns.

Upstream: Doris FE `mysql/privilege/Privilege.java` (the privileges and their display names),
`PrivPredicate.java` (what an operation needs: any one of a set of privileges), `TablePattern`
(`ctl.db.tbl` with `*`) and `UserIdentity` (`'name'@'host'`, host a MySQL LIKE pattern).
Inheritance is Doris': a grant at a level covers everything under it (global `*.*.*` > catalog
`ctl.*.*` > database `ctl.db.*` > table `ctl.db.tbl`); ADMIN_PRIV and NODE_PRIV exist only at the
global level.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

INTERNAL_CATALOG = "internal"


class Privilege(enum.Enum):
    """In Doris' order (Privilege.java); `display` is how SHOW GRANTS spells them."""

    NODE_PRIV = "Node_priv"
    ADMIN_PRIV = "Admin_priv"
    GRANT_PRIV = "Grant_priv"
    SELECT_PRIV = "Select_priv"
    LOAD_PRIV = "Load_priv"
    ALTER_PRIV = "Alter_priv"
    CREATE_PRIV = "Create_priv"
    DROP_PRIV = "Drop_priv"
    USAGE_PRIV = "Usage_priv"

    @property
    def display(self) -> str:
        return self.value


GLOBAL_ONLY = frozenset({Privilege.NODE_PRIV, Privilege.ADMIN_PRIV})
# `ALL` (and the old READ_WRITE) expand to the data privileges, as in Doris' AccessPrivilege.
ALL_DATA = (Privilege.SELECT_PRIV, Privilege.LOAD_PRIV, Privilege.ALTER_PRIV,
            Privilege.CREATE_PRIV, Privilege.DROP_PRIV)
_ALIASES = {
    "ALL": ALL_DATA, "ALL PRIVILEGES": ALL_DATA, "READ_WRITE": ALL_DATA,
    "READ_ONLY": (Privilege.SELECT_PRIV,), "SELECT": (Privilege.SELECT_PRIV,),
    "LOAD": (Privilege.LOAD_PRIV,), "ALTER": (Privilege.ALTER_PRIV,),
    "CREATE": (Privilege.CREATE_PRIV,), "DROP": (Privilege.DROP_PRIV,),
    "USAGE": (Privilege.USAGE_PRIV,), "GRANT": (Privilege.GRANT_PRIV,),
    "ADMIN": (Privilege.ADMIN_PRIV,), "NODE": (Privilege.NODE_PRIV,),
}


def parse_privilege(word: str) -> tuple[Privilege, ...] | None:
    """`SELECT_PRIV` / `select_priv` / `ALL` -> privileges; None for an unknown word."""
    upper = word.upper()
    if upper in Privilege.__members__:
        return (Privilege[upper],)
    return _ALIASES.get(upper)


def privilege_names(privs: frozenset[Privilege] | set[Privilege]) -> str:
    """Doris' PrivBitSet.toString: display names in Privilege order, comma separated."""
    return ",".join(p.display for p in Privilege if p in privs)


@dataclass(frozen=True, slots=True)
class Predicate:
    """What an operation needs: any one of `privileges` (Doris' PrivPredicate, OR operator).
    `name` is how the error message names it (`SELECT`, `LOAD`, `ADMIN`, ...)."""

    name: str
    privileges: frozenset[Privilege]


def _p(name: str, *privs: Privilege) -> Predicate:
    return Predicate(name, frozenset(privs))


SELECT = _p("SELECT", Privilege.SELECT_PRIV, Privilege.ADMIN_PRIV)
LOAD = _p("LOAD", Privilege.LOAD_PRIV, Privilege.ADMIN_PRIV)
ALTER = _p("ALTER", Privilege.ALTER_PRIV, Privilege.ADMIN_PRIV)
CREATE = _p("CREATE", Privilege.CREATE_PRIV, Privilege.ADMIN_PRIV)
DROP = _p("DROP", Privilege.DROP_PRIV, Privilege.ADMIN_PRIV)
ADMIN = _p("ADMIN", Privilege.ADMIN_PRIV)
NODE = _p("NODE", Privilege.NODE_PRIV)
ADMIN_OR_NODE = _p("ADMIN/NODE", Privilege.ADMIN_PRIV, Privilege.NODE_PRIV)
GRANT = _p("GRANT", Privilege.GRANT_PRIV, Privilege.ADMIN_PRIV)
# Seeing a database or table (SHOW, USE, information_schema): any data privilege on it.
SHOW = _p("SHOW", Privilege.SELECT_PRIV, Privilege.LOAD_PRIV, Privilege.ALTER_PRIV,
          Privilege.CREATE_PRIV, Privilege.DROP_PRIV, Privilege.ADMIN_PRIV)


# Grants on a Doris resource (`ON RESOURCE 'spark0'`) or workload group (`ON WORKLOAD GROUP
# 'g1'`) are stored as patterns under these pseudo catalogs, which no table check ever names.
RESOURCE_CTL = "@resource"
WORKLOAD_GROUP_CTL = "@workload_group"


@dataclass(frozen=True, slots=True)
class Resource:
    """A grant's target, Doris' TablePattern: `*` means every catalog/database/table."""

    ctl: str = "*"
    db: str = "*"
    tbl: str = "*"

    @property
    def level(self) -> str:
        if self.ctl == RESOURCE_CTL:
            return "RESOURCE"
        if self.ctl == WORKLOAD_GROUP_CTL:
            return "WORKLOAD_GROUP"
        if self.ctl == "*":
            return "GLOBAL"
        if self.db == "*":
            return "CATALOG"
        if self.tbl == "*":
            return "DATABASE"
        return "TABLE"

    def covers(self, ctl: str, db: str | None, tbl: str | None) -> bool:
        """True when a grant on this pattern applies to (ctl, db, tbl); db/tbl None = the
        check is at catalog/database level, so only patterns at that level or above apply."""
        if self.ctl != "*" and self.ctl.lower() != ctl.lower():
            return False
        if self.db != "*" and (db is None or self.db.lower() != db.lower()):
            return False
        return self.tbl == "*" or (tbl is not None and self.tbl.lower() == tbl.lower())

    def text(self) -> str:
        return f"{self.ctl}.{self.db}.{self.tbl}"


def host_matches(pattern: str, host: str) -> bool:
    """MySQL host matching: `%` any run of characters, `_` one character."""
    if pattern in ("%", ""):
        return True
    regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, host, re.IGNORECASE) is not None


def host_specificity(pattern: str) -> tuple[int, int]:
    """Sort key, most specific first (as MySQL/Doris pick the matching account): literal hosts,
    then patterns with a longer literal prefix, `%` last."""
    wild = pattern.find("%") if "%" in pattern else pattern.find("_") if "_" in pattern else -1
    if wild < 0:
        return (0, -len(pattern))
    return (1, -wild)


@dataclass(frozen=True, slots=True)
class Identity:
    """`'name'@'host'`: the account a session logged in as (host is the account's pattern)."""

    name: str
    host: str = "%"

    def __str__(self) -> str:
        return f"'{self.name}'@'{self.host}'"

    @property
    def key(self) -> str:
        return f"{self.name}@{self.host}"
