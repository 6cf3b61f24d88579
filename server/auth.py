"""Users and authentication: Doris' built-in `root` and `admin` with an empty password.

mysql_native_password only (mysql-mimic has no caching_sha2_password; clients that default to
it are switched to native). A wrong password or an unknown user gets error 1045.
Upstream: Doris `Auth` / `UserIdentity` (root and admin exist from the first start).
"""

from __future__ import annotations

from mysql_mimic.auth import IdentityProvider, NativePasswordAuthPlugin, User

BUILTIN_USERS = ("root", "admin")


class BuiltinIdentityProvider(IdentityProvider):
    async def get_user(self, username: str) -> User | None:
        if username in BUILTIN_USERS:
            return User(name=username, auth_string=None, auth_plugin=NativePasswordAuthPlugin.name)
        return None
