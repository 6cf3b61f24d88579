"""Users and authentication: mysql_native_password and caching_sha2_password.

Doris' built-in `root` and `admin` exist with an empty password. `CREATE USER 'u' [IDENTIFIED
[WITH plugin] BY 'p']` / `DROP USER` add and remove password users (the minimum clients need
until the security issue brings grants and roles); they are kept in `<data_dir>/users.json`,
which holds only password hashes: SHA1(SHA1(p)) for mysql_native_password and a salted
PBKDF2-SHA256 hash for caching_sha2_password. A user authenticates with the plugin it was
created with (Doris' default, mysql_native_password, when none is named); a client that opened
with the other plugin gets an AuthSwitchRequest, as from MySQL.

caching_sha2_password follows MySQL 8's server (sql/auth/sha2_password.cc):
- fast path: the client's scramble XOR(SHA256(p), SHA256(SHA256(SHA256(p)) + nonce)) is checked
  against SHA256(SHA256(p)) from an in-memory cache, filled by the user's last full
  authentication; on a hit the server sends AuthMoreData 0x03 (fast_auth_success), then OK.
- full path (cache miss): AuthMoreData 0x04 (perform_full_authentication). Over plain TCP the
  password must come RSA-encrypted: the client asks for the server's public key (0x02), gets
  it as PEM and sends RSA-OAEP(password + NUL XOR nonce). On a TLS connection the client may
  instead send the password in cleartext (NUL-terminated), which is accepted only there, as in
  MySQL (the connection tells the plugin through `ShaleAuthInfo.secure`).
The RSA key pair is made once per server process (MySQL keeps key files; clients fetch the key
on each full authentication, so nothing depends on it surviving a restart).
Wrong password or unknown user: 1045 `Access denied for user 'u'@'host' (using password: YES)`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import threading
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mysql_mimic.auth import (
    AuthInfo,
    AuthPlugin,
    Forbidden,
    IdentityProvider,
    NativePasswordAuthPlugin,
    Success,
    User,
)

from sql.errors import DorisError, ErrorCode

CANNOT_USER = 1396  # ER_CANNOT_USER

BUILTIN_USERS = ("root", "admin")
NATIVE = "mysql_native_password"
CACHING_SHA2 = "caching_sha2_password"
PLUGINS = (NATIVE, CACHING_SHA2)
PBKDF2_ROUNDS = 5000  # MySQL's caching_sha2 default is 5000 SHA256-crypt rounds

REQUEST_PUBLIC_KEY = 0x02
FAST_AUTH_SUCCESS = b"\x03"
PERFORM_FULL_AUTHENTICATION = b"\x04"


@dataclass
class StoredUser:
    name: str
    plugin: str = NATIVE
    native_hash: str = ""  # hex SHA1(SHA1(password)); "" = empty password
    sha2_salt: str = ""  # hex
    sha2_hash: str = ""  # hex PBKDF2-SHA256(password, salt); "" = empty password

    @property
    def has_password(self) -> bool:
        return bool(self.native_hash)

    def check_password(self, password: bytes) -> bool:
        if not self.has_password:
            return not password
        digest = hashlib.pbkdf2_hmac("sha256", password, bytes.fromhex(self.sha2_salt), PBKDF2_ROUNDS)
        return hmac.compare_digest(digest.hex(), self.sha2_hash)


def make_user(name: str, password: str, plugin: str = NATIVE) -> StoredUser:
    if not password:
        return StoredUser(name, plugin)
    raw = password.encode("utf-8")
    salt = secrets.token_bytes(16)
    return StoredUser(
        name, plugin, NativePasswordAuthPlugin.create_auth_string(password), salt.hex(),
        hashlib.pbkdf2_hmac("sha256", raw, salt, PBKDF2_ROUNDS).hex(),
    )


class UserStore:
    """The server's users (built-in ones plus CREATE USER), persisted to a JSON file."""

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._users: dict[str, StoredUser] = {n: StoredUser(n) for n in BUILTIN_USERS}
        # caching_sha2 fast-auth cache: user -> SHA256(SHA256(password)), from full auth
        self._sha2_cache: dict[str, bytes] = {}
        if path is not None and path.exists():
            for row in json.loads(path.read_text()):
                self._users[row["name"]] = StoredUser(**row)

    def get(self, name: str) -> StoredUser | None:
        return self._users.get(name)

    def create(self, name: str, password: str, plugin: str, if_not_exists: bool) -> None:
        if plugin not in PLUGINS:
            raise DorisError(f"Plugin '{plugin}' is not loaded", ErrorCode.UNKNOWN_ERROR)
        with self._lock:
            if name in self._users:
                if if_not_exists:
                    return
                raise DorisError(f"Operation CREATE USER failed for '{name}'@'%' : user already "
                                 "exists", CANNOT_USER)
            self._users[name] = make_user(name, password, plugin)
            self._save()

    def drop(self, name: str, if_exists: bool) -> None:
        with self._lock:
            if name in BUILTIN_USERS:
                raise DorisError(f"Can not drop user {name}", CANNOT_USER)
            if name not in self._users:
                if if_exists:
                    return
                raise DorisError(f"Operation DROP USER failed for '{name}'@'%' : user does not "
                                 "exist", CANNOT_USER)
            del self._users[name]
            self._sha2_cache.pop(name, None)
            self._save()

    def cached_sha2(self, name: str) -> bytes | None:
        return self._sha2_cache.get(name)

    def remember_sha2(self, name: str, password: bytes) -> None:
        self._sha2_cache[name] = hashlib.sha256(hashlib.sha256(password).digest()).digest()

    def _save(self) -> None:
        if self._path is None:
            return
        rows = [u.__dict__ for n, u in sorted(self._users.items()) if n not in BUILTIN_USERS]
        tmp = self._path.with_suffix(".tmp")
        tmp.write_text(json.dumps(rows))
        os.replace(tmp, self._path)  # atomic: a crash leaves the old or the new file


@dataclass
class ShaleAuthInfo(AuthInfo):
    """mysql-mimic's AuthInfo plus whether the connection runs over TLS."""

    secure: bool = False


class FastAuthSuccess(Success):
    """Success that MySQL announces with AuthMoreData 0x03 before the OK packet."""


def _xor(data: bytes, key: bytes) -> bytes:
    return bytes(b ^ key[i % len(key)] for i, b in enumerate(data))


def scramble_matches(scramble: bytes, nonce: bytes, sha2_sha2: bytes) -> bool:
    """Fast-path check: scramble = XOR(SHA256(p), SHA256(SHA256(SHA256(p)) + nonce))."""
    if len(scramble) != 32:
        return False
    sha2_p = _xor(scramble, hashlib.sha256(sha2_sha2 + nonce).digest())
    return hmac.compare_digest(hashlib.sha256(sha2_p).digest(), sha2_sha2)


class RsaKeys:
    """The server's RSA key pair for caching_sha2 full authentication, made on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: Any = None

    def _private(self) -> Any:
        with self._lock:
            if self._key is None:
                from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: PLC0415

                self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            return self._key

    def public_pem(self) -> bytes:
        from cryptography.hazmat.primitives import serialization  # noqa: PLC0415

        return self._private().public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    def decrypt(self, data: bytes) -> bytes | None:
        from cryptography.hazmat.primitives import hashes  # noqa: PLC0415
        from cryptography.hazmat.primitives.asymmetric import padding  # noqa: PLC0415

        try:
            return self._private().decrypt(data, padding.OAEP(
                mgf=padding.MGF1(algorithm=hashes.SHA1()), algorithm=hashes.SHA1(), label=None))
        except ValueError:
            return None


class CachingSha2PasswordAuthPlugin(AuthPlugin):
    name = CACHING_SHA2
    client_plugin_name = CACHING_SHA2

    def __init__(self, users: UserStore, keys: RsaKeys) -> None:
        self.users = users
        self.keys = keys

    async def auth(self, auth_info: AuthInfo | None = None) -> AsyncGenerator[Any, AuthInfo]:
        if auth_info is not None and auth_info.handshake_auth_data and (
            auth_info.client_plugin_name == CACHING_SHA2
        ):
            # the client answered the handshake with this plugin: its scramble used that nonce
            nonce = auth_info.handshake_auth_data.rstrip(b"\x00")
        else:
            nonce = secrets.token_bytes(20)
            auth_info = yield nonce + b"\x00"
        stored = self.users.get(auth_info.user.name)
        if stored is None:
            yield Forbidden()
            return
        scramble = auth_info.data
        if not stored.has_password or not scramble:
            yield Success(stored.name) if (not stored.has_password and not scramble) else Forbidden()
            return
        cached = self.users.cached_sha2(stored.name)
        if cached is not None and scramble_matches(scramble, nonce, cached):
            yield FastAuthSuccess(stored.name)
            return
        auth_info = yield PERFORM_FULL_AUTHENTICATION
        data = auth_info.data
        if data == bytes((REQUEST_PUBLIC_KEY,)):
            auth_info = yield self.keys.public_pem()
            plain = self.keys.decrypt(auth_info.data)
            password = _xor(plain, nonce).rstrip(b"\x00") if plain is not None else None
        elif getattr(auth_info, "secure", False):
            password = data.rstrip(b"\x00")  # cleartext password: accepted over TLS only
        else:
            password = None  # cleartext over a plain connection is refused, as by MySQL
        if password is not None and stored.check_password(password):
            self.users.remember_sha2(stored.name, password)
            yield Success(stored.name)
        else:
            yield Forbidden()


class ShaleIdentityProvider(IdentityProvider):
    """Both password plugins; the handshake offers mysql_native_password, as Doris does."""

    def __init__(self, users: UserStore) -> None:
        self.users = users
        self._plugins = [NativePasswordAuthPlugin(), CachingSha2PasswordAuthPlugin(users, RsaKeys())]

    def get_plugins(self) -> list[AuthPlugin]:
        return list(self._plugins)

    async def get_user(self, username: str) -> User | None:
        stored = self.users.get(username)
        if stored is None:
            return None
        return User(name=stored.name, auth_string=stored.native_hash or None, auth_plugin=stored.plugin)


_USER = r"""(?:'(?P<{0}q>[^']*)'|"(?P<{0}d>[^"]*)"|`(?P<{0}b>[^`]*)`|(?P<{0}w>[A-Za-z0-9_]+))"""
_CREATE_USER = re.compile(
    r"^\s*CREATE\s+USER\s+(?P<ine>IF\s+NOT\s+EXISTS\s+)?" + _USER.format("u")
    + r"(?:@" + _USER.format("h") + r")?"
    + r"(?:\s+IDENTIFIED(?:\s+WITH\s+'?(?P<plugin>\w+)'?)?\s+BY\s+(?:PASSWORD\s+)?'(?P<pw>(?:[^'\\]|\\.|'')*)')?"
    + r"\s*;?\s*$", re.IGNORECASE | re.DOTALL)
_DROP_USER = re.compile(
    r"^\s*DROP\s+USER\s+(?P<ie>IF\s+EXISTS\s+)?" + _USER.format("u")
    + r"(?:@" + _USER.format("h") + r")?\s*;?\s*$", re.IGNORECASE | re.DOTALL)


def _group(m: re.Match[str], prefix: str) -> str:
    for suffix in "qdbw":
        value = m.group(prefix + suffix)
        if value is not None:
            return value
    return ""


def run_user_statement(users: UserStore, sql: str) -> bool:
    """Run `CREATE USER ...` / `DROP USER ...` (the host part is accepted and ignored: every
    user is 'name'@'%'). False when `sql` is neither; the SQL parser has no grammar for them."""
    m = _CREATE_USER.match(sql)
    if m is not None:
        password = (m.group("pw") or "").replace("''", "'")
        password = re.sub(r"\\(.)", r"\1", password)
        users.create(_group(m, "u"), password, (m.group("plugin") or NATIVE).lower(),
                     bool(m.group("ine")))
        return True
    m = _DROP_USER.match(sql)
    if m is not None:
        users.drop(_group(m, "u"), bool(m.group("ie")))
        return True
    return False
