"""The account statements, parsed and run here (the SQL parser has no grammar for them).

CREATE / ALTER / DROP USER, SET PASSWORD, CREATE / DROP ROLE, GRANT / REVOKE (privileges on a
resource, or roles to a user), SHOW [ALL] GRANTS [FOR ..], SHOW ROLES, SET PROPERTY: Doris 2.1's
syntax (fe `sql_parser.cup`: CreateUserStmt, GrantStmt, ...). Each statement first passes the
privilege check Doris makes (GRANT_PRIV or ADMIN_PRIV; GRANT_PRIV on the resource for a GRANT of
data privileges; anyone may change their own password and see their own grants).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace
from typing import Any

from server.privileges import Access, check, specific_denied
from server.privileges.manager import (
    NATIVE,
    PLUGINS,
    PasswordHashes,
    PrivilegeManager,
    password_hashes,
)
from server.privileges.model import (
    ADMIN,
    GRANT,
    INTERNAL_CATALOG,
    NODE,
    RESOURCE_CTL,
    WORKLOAD_GROUP_CTL,
    Identity,
    Privilege,
    Resource,
    parse_privilege,
    privilege_names,
)
from storage.catalog.meta import GrantMeta, RoleMeta, UserMeta
from storage.errors import DorisError, ErrorCode

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<str>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
    | (?P<bq>`(?:[^`]|``)*`)
    | (?P<word>[A-Za-z0-9_$%.*-]+)
    | (?P<sym>[@,=();\[\]])
    )""", re.VERBOSE | re.DOTALL)
_LEADS = (
    ("CREATE", "USER"), ("ALTER", "USER"), ("DROP", "USER"), ("SET", "PASSWORD"),
    ("CREATE", "ROLE"), ("DROP", "ROLE"), ("GRANT",), ("REVOKE",), ("SHOW", "GRANTS"),
    ("SHOW", "ALL", "GRANTS"), ("SHOW", "ROLES"), ("SET", "PROPERTY"),
)
SECONDS = {"SECOND": 1, "HOUR": 3600, "DAY": 86400}
GRANTS_COLUMNS = ["UserIdentity", "Comment", "Password", "Roles", "GlobalPrivs", "CatalogPrivs",
                  "DatabasePrivs", "TablePrivs", "ColPrivs", "ResourcePrivs",
                  "WorkloadGroupPrivs"]
ROLES_COLUMNS = ["Name", "Comment", "Users", "GlobalPrivs", "CatalogPrivs", "DatabasePrivs",
                 "TablePrivs", "ResourcePrivs", "WorkloadGroupPrivs"]


@dataclass
class Tok:
    kind: str  # str | word | sym
    text: str  # unquoted value for str/bq

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind == "word" else ""


def tokenize(sql: str) -> list[Tok] | None:
    toks: list[Tok] = []
    pos = 0
    text = sql.strip().rstrip(";").rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            return None
        pos = m.end()
        if m.group("str") is not None:
            raw = m.group("str")
            q = raw[0]
            body = raw[1:-1].replace(q + q, q)
            toks.append(Tok("str", re.sub(r"\\(.)", r"\1", body)))
        elif m.group("bq") is not None:
            toks.append(Tok("str", m.group("bq")[1:-1].replace("``", "`")))
        elif m.group("word") is not None:
            toks.append(Tok("word", m.group("word")))
        elif m.group("sym") is not None:
            toks.append(Tok("sym", m.group("sym")))
        else:
            break
    return toks


_FIRST_WORDS = frozenset(lead[0] for lead in _LEADS)


def is_account_statement(sql: str) -> bool:
    head = sql.lstrip()[:40].upper().split()
    if not head or head[0] not in _FIRST_WORDS:  # SELECT, INSERT, ...: checked per statement
        return False
    return any(tuple(head[:len(lead)]) == lead for lead in _LEADS)


def parse_error(detail: str) -> DorisError:
    return DorisError(detail, ErrorCode.PARSE_ERROR)


class _Parser:
    def __init__(self, toks: list[Tok]) -> None:
        self.toks = toks
        self.i = 0

    def peek(self, ahead: int = 0) -> Tok | None:
        j = self.i + ahead
        return self.toks[j] if j < len(self.toks) else None

    def accept(self, *words: str) -> bool:
        for k, w in enumerate(words):
            t = self.peek(k)
            if t is None or (t.upper != w and not (t.kind == "sym" and t.text == w)):
                return False
        self.i += len(words)
        return True

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            got = self.peek()
            raise parse_error(f"Syntax error: expected {' '.join(words)} near "
                              f"'{got.text if got else 'end of statement'}'")

    def name(self) -> str:
        t = self.peek()
        if t is None or t.kind == "sym":
            raise parse_error(f"Syntax error: expected a name near '{t.text if t else 'end'}'")
        self.i += 1
        return t.text

    def number(self) -> int:
        t = self.name()
        if not t.isdigit():
            raise parse_error(f"Syntax error: expected a number, got '{t}'")
        return int(t)

    def string(self) -> str:
        t = self.peek()
        if t is None or t.kind != "str":
            raise parse_error("Syntax error: expected a quoted string")
        self.i += 1
        return t.text

    def identity(self) -> Identity:
        name = self.name()
        host = "%"
        if self.accept("@"):
            if self.accept("["):  # 'u'@['domain']: taken as a host name
                host = self.name()
                self.expect("]")
            else:
                host = self.name()
        return Identity(name, host)

    def done(self) -> bool:
        return self.i >= len(self.toks)

    def end(self) -> None:
        if not self.done():
            raise parse_error(f"Syntax error near '{self.toks[self.i].text}'")


@dataclass
class Result:
    """What an account statement answers: OK, or rows."""

    names: list[str] | None = None
    rows: list[tuple[object, ...]] | None = None


class AccountStatements:
    def __init__(self, manager: PrivilegeManager, global_variable: Any = None) -> None:
        self.manager = manager
        # reads a global variable (password_history); None in tests = defaults
        self._global = global_variable

    def _default_history(self) -> int:
        return int(self._global("password_history")) if self._global is not None else 0

    def run(self, access: Access, sql: str) -> Result:
        toks = tokenize(sql)
        if toks is None:
            raise parse_error("Syntax error in account statement")
        p = _Parser(toks)
        if p.accept("CREATE", "USER"):
            return self._create_user(access, p)
        if p.accept("ALTER", "USER"):
            return self._alter_user(access, p)
        if p.accept("DROP", "USER"):
            check(access, GRANT)
            if_exists = p.accept("IF", "EXISTS")
            ident = p.identity()
            p.end()
            self.manager.drop_user(ident, if_exists)
            return Result()
        if p.accept("SET", "PASSWORD"):
            return self._set_password(access, p)
        if p.accept("CREATE", "ROLE"):
            check(access, GRANT)
            ine = p.accept("IF", "NOT", "EXISTS")
            name = p.name()
            comment = p.string() if p.accept("COMMENT") else ""
            p.end()
            self.manager.create_role(name, ine, comment)
            return Result()
        if p.accept("DROP", "ROLE"):
            check(access, GRANT)
            ie = p.accept("IF", "EXISTS")
            name = p.name()
            p.end()
            self.manager.drop_role(name, ie)
            return Result()
        if p.accept("GRANT"):
            return self._grant(access, p, grant=True)
        if p.accept("REVOKE"):
            return self._grant(access, p, grant=False)
        if p.accept("SHOW", "ALL", "GRANTS"):
            check(access, GRANT)
            p.end()
            return self._grants_rows(self.manager.users())
        if p.accept("SHOW", "GRANTS"):
            ident = access.identity
            if p.accept("FOR"):
                ident = p.identity()
                if ident != access.identity:
                    check(access, GRANT)
            p.end()
            account = self.manager.account(ident)
            if account is None:
                raise DorisError(f"User: {ident} does not exist", ErrorCode.CANNOT_USER)
            return self._grants_rows([account])
        if p.accept("SHOW", "ROLES"):
            check(access, GRANT)
            p.end()
            return self._roles_rows()
        if p.accept("SET", "PROPERTY"):
            return self._set_property(access, p)
        raise parse_error("Syntax error in account statement")

    # ---- users --------------------------------------------------------------------------
    def _create_user(self, access: Access, p: _Parser) -> Result:
        check(access, GRANT)
        ine = p.accept("IF", "NOT", "EXISTS")
        ident = p.identity()
        account = UserMeta(ident.key, ident.name, ident.host)
        if p.accept("IDENTIFIED"):
            account = self._identified(p, account)
        account = self._options(p, account)
        p.end()
        self.manager.create_user(account, ine)
        return Result()

    def _alter_user(self, access: Access, p: _Parser) -> Result:
        # Doris' AlterUserStmt needs GRANT_PRIV even on oneself: the lock, REQUIRE SSL and
        # expiry are an administrator's; a user changes their own password with SET PASSWORD
        check(access, GRANT)
        p.accept("IF", "EXISTS")
        ident = p.identity()
        account = self.manager.require_account(ident)
        if p.accept("IDENTIFIED"):
            changed = self._identified(p, account)
            hashes = PasswordHashes(native_hash=changed.native_hash,
                                    sha2_salt=changed.sha2_salt, sha2_hash=changed.sha2_hash)
            self.manager.set_password(ident, hashes, changed.native_hash, self._default_history())
            account = self.manager.require_account(ident)
            account = replace(account, plugin=changed.plugin)
        account = self._options(p, account)
        p.end()
        self.manager.update_user(account)
        return Result()

    def _identified(self, p: _Parser, account: UserMeta) -> UserMeta:
        plugin = NATIVE
        if p.accept("WITH"):
            plugin = p.name().lower()
            if plugin not in PLUGINS:
                raise DorisError(f"Plugin '{plugin}' is not loaded")
        p.expect("BY")
        if p.accept("PASSWORD"):  # IDENTIFIED BY PASSWORD '*<SHA1(SHA1(p)) hex>'
            hashes = _hashed(p.string())
        else:
            hashes = password_hashes(p.string())
        return replace(account, plugin=plugin if hashes["sha2_hash"] or not hashes[
            "native_hash"] else NATIVE, **hashes)

    def _options(self, p: _Parser, account: UserMeta) -> UserMeta:
        """DEFAULT ROLE, REQUIRE SSL|NONE, the password policy clauses, ACCOUNT_LOCK/UNLOCK,
        COMMENT."""
        while not p.done():
            if p.accept("REQUIRE"):
                if p.accept("NONE"):
                    account = replace(account, require_ssl=False)
                else:
                    p.expect("SSL")
                    account = replace(account, require_ssl=True)
            elif p.accept("FAILED_LOGIN_ATTEMPTS"):
                account = replace(account, failed_login_attempts=p.number())
            elif p.accept("PASSWORD_LOCK_TIME"):
                if p.accept("UNBOUNDED"):
                    account = replace(account, password_lock_seconds=-1)
                else:
                    n = p.number()
                    account = replace(account, password_lock_seconds=n * _unit(p))
            elif p.accept("PASSWORD_EXPIRE"):
                if p.accept("DEFAULT"):
                    days = -1
                elif p.accept("NEVER"):
                    days = 0
                elif p.accept("INTERVAL"):
                    n = p.number()
                    days = max(1, n * _unit(p) // 86400) if n else 0
                else:
                    days = -2  # PASSWORD_EXPIRE alone: expired now
                account = replace(account, password_expire_days=days)
            elif p.accept("PASSWORD_HISTORY"):
                account = replace(account, password_history=-1 if p.accept("DEFAULT")
                                  else p.number())
            elif p.accept("ACCOUNT_UNLOCK"):
                account = replace(account, locked_until=0.0)
            elif p.accept("ACCOUNT_LOCK"):
                account = replace(account, locked_until=-1.0)
            elif p.accept("DEFAULT", "ROLE"):
                account = replace(account, roles=(p.name(),))
            elif p.accept("COMMENT"):
                account = replace(account, comment=p.string())
            else:
                raise parse_error(f"Syntax error near '{p.name()}'")
        return account

    def _set_password(self, access: Access, p: _Parser) -> Result:
        ident = access.identity
        if p.accept("FOR"):
            ident = p.identity()
            if ident != access.identity:
                check(access, GRANT)
        p.expect("=")
        if p.accept("PASSWORD"):
            p.expect("(")
            password = p.string()
            p.expect(")")
            hashes = password_hashes(password)
        else:
            hashes = _hashed(p.string())
        p.end()
        self.manager.set_password(ident, hashes, hashes["native_hash"], self._default_history())
        return Result()

    def _set_property(self, access: Access, p: _Parser) -> Result:
        ident_name = access.identity.name
        if p.accept("FOR"):
            ident_name = p.name()
            if ident_name != access.identity.name:
                check(access, GRANT)
        else:
            check(access, ADMIN)  # Doris: a user's own properties are an admin's to set too
        updates: dict[str, str] = {}
        while True:
            key = p.string().lower()
            p.expect("=")
            updates[key] = p.string()
            if not p.accept(","):
                break
        p.end()
        accounts = [u for u in self.manager.users() if u.name == ident_name]
        if not accounts:
            raise DorisError(f"Unknown user: {ident_name}")
        for key, value in updates.items():
            if key != "max_user_connections":
                raise DorisError(f"Unknown user property({key})")
            if not value.isdigit() or int(value) <= 0:
                raise DorisError(f"{key} is not valid, must be greater than 0")
        for account in accounts:
            if "max_user_connections" in updates:
                limit = int(updates["max_user_connections"])
                account = replace(account, max_user_connections=limit)
            self.manager.update_user(account)
        return Result()

    # ---- grants -------------------------------------------------------------------------
    def _grant(self, access: Access, p: _Parser, grant: bool) -> Result:
        to_word = "TO" if grant else "FROM"
        privs: set[Privilege] = set()
        roles: list[str] = []
        first = p.peek()
        if first is not None and first.kind == "str":  # GRANT 'role'[, ..] TO user
            roles.append(p.string())
            while p.accept(","):
                roles.append(p.string())
            p.expect(to_word)
            grantee = p.identity()
            p.end()
            check(access, GRANT)
            self.manager.grant_roles(roles, grantee, add=grant)
            return Result()
        while True:
            word = p.name()
            if word.upper() == "ALL" and p.accept("PRIVILEGES"):
                word = "ALL"
            found = parse_privilege(word)
            if found is None:
                raise DorisError(f"Unknown privilege type {word}")
            privs.update(found)
            if not p.accept(","):
                break
        p.expect("ON")
        if p.accept("RESOURCE"):
            resource = Resource(RESOURCE_CTL, p.name())
        elif p.accept("WORKLOAD", "GROUP"):
            resource = Resource(WORKLOAD_GROUP_CTL, p.name())
        else:
            p.accept("TABLE")
            # the pattern may be quoted piecewise: `db`.`tbl`, `db`.*
            pieces = []
            while (t := p.peek()) is not None and t.upper != to_word:
                pieces.append(p.name())  # a symbol here is a syntax error (name() raises)
            resource = _resource("".join(pieces))
        _check_privileges_fit(privs, resource, grant)
        p.expect(to_word)
        role: str | None = None
        user: Identity | None = None
        if p.accept("ROLE"):
            role = p.name()
        else:
            user = p.identity()
        p.end()
        # Doris GrantStmt: GRANT_PRIV on the resource's level; NODE_PRIV only from a holder
        if Privilege.NODE_PRIV in privs and not access.has(NODE):
            raise specific_denied(NODE)
        if resource.level in ("GLOBAL", "CATALOG", "RESOURCE", "WORKLOAD_GROUP") or (
            privs & {Privilege.ADMIN_PRIV}
        ):
            check(access, GRANT, ctl=resource.ctl if resource.level == "CATALOG" else
                  INTERNAL_CATALOG, specific=True)
        else:
            if not access.has(GRANT, resource.db, None if resource.tbl == "*" else resource.tbl,
                              resource.ctl):
                raise specific_denied(GRANT)
        if grant:
            self.manager.grant(resource, frozenset(privs), user, role)
        else:
            self.manager.revoke(resource, frozenset(privs), user, role)
        return Result()

    # ---- SHOW ---------------------------------------------------------------------------
    def _grants_rows(self, accounts: list[UserMeta]) -> Result:
        rows: list[tuple[object, ...]] = []
        roles = self.manager.roles()
        for a in accounts:
            grants = list(a.grants)
            for r in a.roles:
                if r in roles:
                    grants.extend(roles[r].grants)
            g, c, d, t, res, wg = _levels(grants, default_workload_group=True)
            rows.append((f"'{a.name}'@'{a.host}'", a.comment, "Yes" if a.native_hash else "No",
                         ",".join(a.roles), g, c, d, t, None, res, wg))
        return Result(GRANTS_COLUMNS, rows)

    def _roles_rows(self) -> Result:
        users = self.manager.users()
        rows: list[tuple[object, ...]] = []
        for name, role in sorted(self.manager.roles().items()):
            members = ", ".join(f"'{u.name}'@'{u.host}'" for u in users if name in u.roles)
            g, c, d, t, res, wg = _levels(list(role.grants))
            rows.append((name, role.comment, members, g, c, d, t, res, wg))
        return Result(ROLES_COLUMNS, rows)


def _unit(p: _Parser) -> int:
    word = p.name().upper()
    if word not in SECONDS:
        raise parse_error(f"Syntax error: expected DAY, HOUR or SECOND, got '{word}'")
    return SECONDS[word]


def _hashed(text: str) -> PasswordHashes:
    """`'*<40 hex>'`: a mysql_native_password hash as MySQL's PASSWORD() prints it."""
    if not re.fullmatch(r"\*[0-9A-Fa-f]{40}", text):
        raise DorisError("Password hash should be a 41-digit hexadecimal number")
    return {"native_hash": text[1:].lower(), "sha2_salt": "", "sha2_hash": ""}


def _resource(text: str) -> Resource:
    """`*.*`, `db.*`, `db.tbl`, `ctl.db.tbl`, `*.*.*`, `ctl.*.*` (Doris' TablePattern)."""
    parts = [s.strip("`") for s in text.split(".")]
    if len(parts) == 1:
        parts = [parts[0], "*"]
    if len(parts) == 2:
        if parts[0] == "*" and parts[1] != "*":
            raise DorisError("Database * does not support table pattern ...")
        return Resource("*" if parts[0] == "*" else INTERNAL_CATALOG, parts[0], parts[1])
    if len(parts) == 3:
        if parts[0] == "*" and (parts[1] != "*" or parts[2] != "*"):
            raise DorisError("Catalog * requires database and table to be *")
        if parts[1] == "*" and parts[2] != "*":
            raise DorisError("Database * requires table to be *")
        return Resource(*parts)
    raise parse_error(f"Invalid resource pattern '{text}'")


def _levels(grants: list[GrantMeta], default_workload_group: bool = False
            ) -> tuple[str | None, ...]:
    """SHOW GRANTS' GlobalPrivs / CatalogPrivs / DatabasePrivs / TablePrivs / ResourcePrivs /
    WorkloadGroupPrivs cells. Doris lets every user use the `normal` workload group."""
    buckets: dict[str, dict[str, set[Privilege]]] = {
        "GLOBAL": {}, "CATALOG": {}, "DATABASE": {}, "TABLE": {}, "RESOURCE": {},
        "WORKLOAD_GROUP": {}}
    if default_workload_group:
        buckets["WORKLOAD_GROUP"]["normal"] = {Privilege.USAGE_PRIV}
    for g in grants:
        r = Resource(g.ctl, g.db, g.tbl)
        key = {"GLOBAL": "", "CATALOG": r.ctl, "DATABASE": f"{r.ctl}.{r.db}",
               "TABLE": f"{r.ctl}.{r.db}.{r.tbl}", "RESOURCE": r.db,
               "WORKLOAD_GROUP": r.db}[r.level]
        buckets[r.level].setdefault(key, set()).update(Privilege[p] for p in g.privileges)
    glob = buckets["GLOBAL"].get("")
    cells: list[str | None] = [privilege_names(glob) if glob else None]
    for level in ("CATALOG", "DATABASE", "TABLE", "RESOURCE", "WORKLOAD_GROUP"):
        items = sorted(buckets[level].items())
        cells.append("; ".join(f"{k}: {privilege_names(v)}" for k, v in items) if items else None)
    return tuple(cells)


def _check_privileges_fit(privs: set[Privilege], resource: Resource, grant: bool) -> None:
    """Doris: USAGE_PRIV goes to resources and workload groups, data privileges to tables."""
    verb = "grant/revoke"
    if resource.level in ("RESOURCE", "WORKLOAD_GROUP"):
        extra = privs - {Privilege.USAGE_PRIV, Privilege.GRANT_PRIV}
        if extra:
            raise DorisError(f"Can not {verb} {privilege_names(extra)} to/from a "
                             f"{resource.level.lower().replace('_', ' ')}; only Usage_priv")
    elif Privilege.USAGE_PRIV in privs:
        raise DorisError(f"Can not {verb} Usage_priv to/from database or table; grant it ON "
                         "RESOURCE 'name' or ON WORKLOAD GROUP 'name'")


def seconds_until_expiry(account: UserMeta, default_lifetime_days: int = 0) -> float | None:
    """Seconds left before the password expires; None = never (PASSWORD_EXPIRE)."""
    days = account.password_expire_days
    if days == -1:
        days = default_lifetime_days
    if days == -2:
        return 0.0
    if days <= 0:
        return None
    return account.password_changed_at + days * 86400 - time.time()


__all__ = ["AccountStatements", "Result", "RoleMeta", "is_account_statement"]
