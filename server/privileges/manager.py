"""PrivilegeManager: users, roles and grants, kept in the catalog; Doris' `Auth`.

Owns every account change (CREATE/ALTER/DROP USER, SET PASSWORD, CREATE/DROP ROLE, GRANT,
REVOKE, SET PROPERTY) and the questions asked of them (which account a login from a host is,
does an identity hold a privilege on a resource). Accounts are `UserMeta` / `RoleMeta` rows of
the catalog (storage/catalog/meta.py), written through one catalog mutation each, so they are
crash-safe and survive restarts. Reads look at the in-memory catalog each time: a GRANT or
REVOKE is seen by every session at its next statement, as in Doris.

Built-ins as in Doris: role `operator` (NODE_PRIV, ADMIN_PRIV) held by `root`, role `admin`
(ADMIN_PRIV) held by `admin`; both users start with an empty password and neither user nor role
can be dropped. The minimal `<data_dir>/users.json` of earlier versions is imported once.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TypedDict

from mysql_mimic.auth import NativePasswordAuthPlugin

from server.privileges.model import (
    GLOBAL_ONLY,
    INTERNAL_CATALOG,
    SHOW,
    Identity,
    Predicate,
    Privilege,
    Resource,
    host_matches,
    host_specificity,
)
from storage.catalog.catalog import Catalog
from storage.catalog.meta import GrantMeta, RoleMeta, UserMeta
from storage.catalog.repository import Mutation
from storage.errors import DorisError, ErrorCode

NATIVE = "mysql_native_password"
CACHING_SHA2 = "caching_sha2_password"
PLUGINS = (NATIVE, CACHING_SHA2)
PBKDF2_ROUNDS = 5000  # MySQL's caching_sha2 default is 5000 SHA256-crypt rounds

ROOT, ADMIN = "root", "admin"
OPERATOR_ROLE, ADMIN_ROLE = "operator", "admin"
BUILTIN_USERS = (ROOT, ADMIN)
BUILTIN_ROLES = {
    OPERATOR_ROLE: RoleMeta(
        OPERATOR_ROLE, (GrantMeta("*", "*", "*", ("NODE_PRIV", "ADMIN_PRIV")),)
    ),
    ADMIN_ROLE: RoleMeta(ADMIN_ROLE, (GrantMeta("*", "*", "*", ("ADMIN_PRIV",)),)),
}
BUILTIN_ACCOUNTS = {
    ROOT: UserMeta(f"{ROOT}@%", ROOT, "%", roles=(OPERATOR_ROLE,), comment="ROOT"),
    ADMIN: UserMeta(f"{ADMIN}@%", ADMIN, "%", roles=(ADMIN_ROLE,), comment="ADMIN"),
}


def cannot_user(operation: str, ident: Identity, why: str) -> DorisError:
    return DorisError(f"Operation {operation} failed for {ident}{why}", ErrorCode.CANNOT_USER)


class PasswordHashes(TypedDict):
    """The UserMeta fields a password sets (passed to `replace` as keywords)."""

    native_hash: str
    sha2_salt: str
    sha2_hash: str


def password_hashes(password: str) -> PasswordHashes:
    """The stored forms of a password: SHA1(SHA1(p)) (mysql_native_password) and a salted
    PBKDF2-SHA256 (our caching_sha2_password check). Empty password: empty hashes."""
    if not password:
        return {"native_hash": "", "sha2_salt": "", "sha2_hash": ""}
    salt = secrets.token_bytes(16)
    return {
        "native_hash": NativePasswordAuthPlugin.create_auth_string(password),
        "sha2_salt": salt.hex(),
        "sha2_hash": hashlib.pbkdf2_hmac("sha256", password.encode(), salt, PBKDF2_ROUNDS).hex(),
    }


class PrivilegeManager:
    def __init__(self, catalog: Catalog, legacy_users_file: Path | None = None) -> None:
        self.catalog = catalog
        self._lock = threading.RLock()
        # failed logins since the last success, per account (Doris keeps them in memory too)
        self._failures: dict[str, int] = {}
        if legacy_users_file is not None and legacy_users_file.exists():
            self._import_users_json(legacy_users_file)

    # ---- reads --------------------------------------------------------------------------
    def users(self) -> list[UserMeta]:
        accounts = {u.ident: u for u in BUILTIN_ACCOUNTS.values()}
        accounts.update({u.ident: u for u in self.catalog.users()})
        return sorted(accounts.values(), key=lambda u: (u.name, u.host))

    def roles(self) -> dict[str, RoleMeta]:
        roles = dict(BUILTIN_ROLES)
        roles.update({r.name: r for r in self.catalog.roles()})
        return roles

    def account(self, ident: Identity) -> UserMeta | None:
        """The account `ident` names (a stored one overrides a built-in of the same identity).
        Asked by every privilege check: a scan of the stored accounts, not `users()`' sort."""
        for u in self.catalog.users():
            if u.name == ident.name and u.host == ident.host:
                return u
        builtin = BUILTIN_ACCOUNTS.get(ident.name)
        return builtin if builtin is not None and builtin.host == ident.host else None

    def login_account(self, name: str, host: str) -> UserMeta | None:
        """The account a login of `name` from `host` is: the most specific matching host."""
        matches = [u for u in self.users() if u.name == name and host_matches(u.host, host)]
        matches.sort(key=lambda u: host_specificity(u.host))
        return matches[0] if matches else None

    def grants_of(self, ident: Identity) -> list[tuple[Resource, frozenset[Privilege]]]:
        """The identity's own grants and those of its roles."""
        account = self.account(ident)
        if account is None:
            return []
        out = [_resource_privs(g) for g in account.grants]
        roles = self.roles()
        for name in account.roles:
            role = roles.get(name)
            if role is not None:
                out.extend(_resource_privs(g) for g in role.grants)
        return out

    def has(self, ident: Identity, predicate: Predicate, db: str | None = None,
            tbl: str | None = None, ctl: str = INTERNAL_CATALOG) -> bool:
        """Does `ident` hold one of `predicate`'s privileges on (ctl, db, tbl) or above it?"""
        return any(privs & predicate.privileges and resource.covers(ctl, db, tbl)
                   for resource, privs in self.grants_of(ident))

    def can_see_database(self, ident: Identity, db: str, ctl: str = INTERNAL_CATALOG) -> bool:
        """Doris' checkDbPriv(SHOW): a privilege on the database or on any table in it."""
        if db.lower() == "information_schema":
            return True
        for resource, privs in self.grants_of(ident):
            if not privs & SHOW.privileges:
                continue
            if resource.covers(ctl, db, None) or (
                resource.tbl != "*" and resource.covers(ctl, db, resource.tbl)
            ):
                return True
        return False

    def can_see_table(self, ident: Identity, db: str, tbl: str) -> bool:
        return db.lower() == "information_schema" or self.has(ident, SHOW, db, tbl)

    # ---- account statements ---------------------------------------------------------------
    def create_user(self, account: UserMeta, if_not_exists: bool) -> None:
        ident = Identity(account.name, account.host)
        with self._lock:
            if self.account(ident) is not None:
                if if_not_exists:
                    return
                raise cannot_user("CREATE USER", ident, "")
            self._require_roles(account.roles)
            self._put(replace(account, ident=ident.key, password_changed_at=time.time()))

    def drop_user(self, ident: Identity, if_exists: bool) -> None:
        with self._lock:
            if ident.name in BUILTIN_USERS:
                raise DorisError(f"Can not drop user {ident.name}", ErrorCode.CANNOT_USER)
            account = self.account(ident)
            if account is None:
                if if_exists:
                    return
                raise cannot_user("DROP USER", ident, "")
            m = Mutation()
            m.deletes.append(("user", account.ident))
            self.catalog.commit(m)

    def require_account(self, ident: Identity, operation: str = "ALTER USER") -> UserMeta:
        account = self.account(ident)
        if account is None:
            raise cannot_user(operation, ident, "")
        return account

    def update_user(self, account: UserMeta) -> None:
        with self._lock:
            self._require_roles(account.roles)
            self._put(account)

    def _require_roles(self, names: tuple[str, ...] | list[str]) -> None:
        known = self.roles()
        for r in names:
            if r not in known:
                raise DorisError(f"Role: {r} does not exist")

    def set_password(self, ident: Identity, hashes: PasswordHashes, history_key: str,
                     default_history: int = 0) -> None:
        """Change the password, refusing one in the last `password_history` passwords
        (Doris' PasswordPolicy history check; DEFAULT = the global `password_history`)."""
        with self._lock:
            account = self.require_account(ident, "SET PASSWORD")
            keep = default_history if account.password_history < 0 else account.password_history
            if keep > 0 and history_key and history_key in account.password_hash_history[-keep:]:
                raise DorisError(
                    f"Cannot use these credentials for '{ident.name}'@'{ident.host}' because they "
                    "contradict the password history policy", ErrorCode.PASSWORD_HISTORY)
            added = (history_key,) if history_key else ()
            history = (account.password_hash_history + added)[-10:]
            # a new password ends an expiry forced by PASSWORD_EXPIRE (-2) and a lock
            expire = -1 if account.password_expire_days == -2 else account.password_expire_days
            self._put(replace(account, **hashes, password_changed_at=time.time(),
                              password_hash_history=history, locked_until=0.0,
                              password_expire_days=expire))

    def create_role(self, name: str, if_not_exists: bool, comment: str = "") -> None:
        with self._lock:
            if name in self.roles():
                if if_not_exists:
                    return
                raise DorisError(f"Role {name} already exists", ErrorCode.CANNOT_USER)
            self._put(RoleMeta(name, (), comment))

    def drop_role(self, name: str, if_exists: bool) -> None:
        with self._lock:
            if name in BUILTIN_ROLES:
                raise DorisError(f"Can not drop role {name}", ErrorCode.CANNOT_USER)
            if name not in self.roles():
                if if_exists:
                    return
                raise DorisError(f"Role {name} does not exist", ErrorCode.CANNOT_USER)
            m = Mutation()
            m.deletes.append(("role", name))
            for u in self.users():  # users lose the role with it
                if name in u.roles:
                    m.put(replace(u, roles=tuple(r for r in u.roles if r != name)))
            self.catalog.commit(m)

    def grant(self, resource: Resource, privs: frozenset[Privilege], user: Identity | None,
              role: str | None) -> None:
        if privs & GLOBAL_ONLY and resource.level != "GLOBAL":
            raise DorisError("ADMIN_PRIV and NODE_PRIV can only be granted/revoke on/from global "
                             "level, use *.*.* as the resource")
        with self._lock:
            target = self._grantee(user, role, "GRANT")
            self._put(replace(target, grants=_merge(target.grants, resource, privs, add=True)))

    def revoke(self, resource: Resource, privs: frozenset[Privilege], user: Identity | None,
               role: str | None) -> None:
        with self._lock:
            target = self._grantee(user, role, "REVOKE")
            self._put(replace(target, grants=_merge(target.grants, resource, privs, add=False)))

    def grant_roles(self, roles: list[str], user: Identity, add: bool) -> None:
        with self._lock:
            account = self.require_account(user, "GRANT" if add else "REVOKE")
            self._require_roles(roles)
            names = list(account.roles)
            for r in roles:
                if add and r not in names:
                    names.append(r)
                elif not add and r in names:
                    names.remove(r)
            self._put(replace(account, roles=tuple(names)))

    def _grantee(self, user: Identity | None, role: str | None, op: str) -> UserMeta | RoleMeta:
        if role is not None:
            found = self.roles().get(role)
            if found is None:
                if op == "GRANT":  # Doris creates a role that a GRANT names
                    return RoleMeta(role)
                raise DorisError(f"Role {role} does not exist", ErrorCode.CANNOT_USER)
            return found
        assert user is not None
        account = self.account(user)
        if account is None:
            raise DorisError(f"user {user} does not exist", ErrorCode.CANNOT_USER)
        return account

    # ---- login bookkeeping (password policy) ----------------------------------------------
    def login_failed(self, account: UserMeta) -> None:
        if account.failed_login_attempts <= 0:
            return
        with self._lock:
            count = self._failures.get(account.ident, 0) + 1
            self._failures[account.ident] = count
            if count >= account.failed_login_attempts:
                self._failures.pop(account.ident, None)
                until = -1.0 if account.password_lock_seconds < 0 else (
                    time.time() + account.password_lock_seconds)
                current = self.account(Identity(account.name, account.host))
                if current is not None:
                    self._put(replace(current, locked_until=until))

    def login_succeeded(self, account: UserMeta) -> None:
        self._failures.pop(account.ident, None)

    # ---- persistence ----------------------------------------------------------------------
    def _put(self, obj: UserMeta | RoleMeta) -> None:
        m = Mutation()
        m.put(obj)
        self.catalog.commit(m)

    def _import_users_json(self, path: Path) -> None:
        """Move the users of `<data_dir>/users.json` (before grants existed) into the catalog,
        as 'name'@'%' with their password hashes; the file is kept as users.json.migrated."""
        rows = json.loads(path.read_text() or "[]")
        m = Mutation()
        for row in rows:
            name = row["name"]
            if self.account(Identity(name, "%")) is None:
                m.put(UserMeta(f"{name}@%", name, "%", row.get("plugin", NATIVE),
                               row.get("native_hash", ""), row.get("sha2_salt", ""),
                               row.get("sha2_hash", ""), password_changed_at=time.time()))
        self.catalog.commit(m)
        os.replace(path, path.with_name(path.name + ".migrated"))


def _resource_privs(g: GrantMeta) -> tuple[Resource, frozenset[Privilege]]:
    return Resource(g.ctl, g.db, g.tbl), frozenset(Privilege[p] for p in g.privileges)


def _merge(grants: tuple[GrantMeta, ...], resource: Resource, privs: frozenset[Privilege],
           add: bool) -> tuple[GrantMeta, ...]:
    out: list[GrantMeta] = []
    found = False
    for g in grants:
        if (g.ctl, g.db.lower(), g.tbl.lower()) == (resource.ctl, resource.db.lower(),
                                                    resource.tbl.lower()):
            found = True
            have = {Privilege[p] for p in g.privileges}
            if not add and not have & privs:
                raise DorisError("There is no such grant defined on "
                                 f"{resource.text()}", ErrorCode.NONEXISTING_GRANT)
            have = have | privs if add else have - privs
            if have:
                out.append(GrantMeta(g.ctl, g.db, g.tbl,
                                     tuple(p.name for p in Privilege if p in have)))
        else:
            out.append(g)
    if not found:
        if not add:
            raise DorisError(f"There is no such grant defined on {resource.text()}",
                             ErrorCode.NONEXISTING_GRANT)
        out.append(GrantMeta(resource.ctl, resource.db, resource.tbl,
                             tuple(p.name for p in Privilege if p in privs)))
    return tuple(out)
