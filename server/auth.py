"""Users and authentication: mysql_native_password and caching_sha2_password.

The accounts (Doris' built-in `root` and `admin` with an empty password, and CREATE USER's)
belong to the privilege manager (server/privileges/), which keeps them in the catalog with
password hashes only: SHA1(SHA1(p)) for mysql_native_password and a salted PBKDF2-SHA256 hash
for caching_sha2_password. A user authenticates with the plugin it was
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
import secrets
import threading
from collections.abc import AsyncGenerator
from dataclasses import dataclass
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

from server.privileges.manager import CACHING_SHA2, PBKDF2_ROUNDS, PrivilegeManager
from storage.catalog.meta import UserMeta

REQUEST_PUBLIC_KEY = 0x02
FAST_AUTH_SUCCESS = b"\x03"
PERFORM_FULL_AUTHENTICATION = b"\x04"


def check_sha2_password(account: UserMeta, password: bytes) -> bool:
    """The full-authentication check of caching_sha2_password against the stored PBKDF2."""
    if not account.native_hash:
        return not password
    if not account.sha2_hash:  # set from a '*hash' (SET PASSWORD = '*...'): native only
        return False
    digest = hashlib.pbkdf2_hmac("sha256", password, bytes.fromhex(account.sha2_salt),
                                 PBKDF2_ROUNDS)
    return hmac.compare_digest(digest.hex(), account.sha2_hash)


class Sha2Cache:
    """caching_sha2 fast-auth cache: account -> SHA256(SHA256(password)), filled by the
    account's last full authentication (in memory, as MySQL's)."""

    def __init__(self) -> None:
        self._cache: dict[str, bytes] = {}

    def get(self, ident: str) -> bytes | None:
        return self._cache.get(ident)

    def remember(self, ident: str, password: bytes) -> None:
        self._cache[ident] = hashlib.sha256(hashlib.sha256(password).digest()).digest()


@dataclass
class ShaleUser(User):
    """mysql-mimic's User plus the account (host pattern, policy) the login matched."""

    account: UserMeta | None = None


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
                from cryptography.hazmat.primitives.asymmetric import rsa

                self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            return self._key

    def public_pem(self) -> bytes:
        from cryptography.hazmat.primitives import serialization

        return self._private().public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    def decrypt(self, data: bytes) -> bytes | None:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        try:
            return self._private().decrypt(data, padding.OAEP(
                mgf=padding.MGF1(algorithm=hashes.SHA1()), algorithm=hashes.SHA1(), label=None))
        except ValueError:
            return None


class CachingSha2PasswordAuthPlugin(AuthPlugin):
    name = CACHING_SHA2
    client_plugin_name = CACHING_SHA2

    def __init__(self, cache: Sha2Cache, keys: RsaKeys) -> None:
        self.cache = cache
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
        stored = getattr(auth_info.user, "account", None)
        if stored is None:
            yield Forbidden()
            return
        scramble = auth_info.data
        if not stored.native_hash or not scramble:
            yield Success(stored.name) if (not stored.native_hash and not scramble) else Forbidden()
            return
        cached = self.cache.get(stored.ident)
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
        if password is not None and check_sha2_password(stored, password):
            self.cache.remember(stored.ident, password)
            yield Success(stored.name)
        else:
            yield Forbidden()


class ShaleIdentityProvider(IdentityProvider):
    """Both password plugins; the handshake offers mysql_native_password, as Doris does. The
    accounts are the privilege manager's (server/privileges/): a login from a host is the
    most specific `'user'@'host-pattern'` matching it."""

    def __init__(self, accounts: PrivilegeManager) -> None:
        self.accounts = accounts
        self._plugins = [NativePasswordAuthPlugin(),
                         CachingSha2PasswordAuthPlugin(Sha2Cache(), RsaKeys())]

    def get_plugins(self) -> list[AuthPlugin]:
        return list(self._plugins)

    async def get_user(self, username: str, host: str = "127.0.0.1") -> User | None:
        account = self.accounts.login_account(username, host)
        if account is None:
            return None
        return ShaleUser(name=account.name, auth_string=account.native_hash or None,
                         auth_plugin=account.plugin, account=account)
