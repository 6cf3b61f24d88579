"""HTTP basic auth for the HTTP port, against the same accounts as the MySQL port.

One aiohttp middleware (`auth_middleware`) authenticates every request except the open paths
(`/metrics`: Doris' MetricsAction checks nothing, so Prometheus scrapes without credentials;
`/api/_load_error_log`, a load's ErrorURL, as Doris BE serves it), and
then enforces the privilege a handler declares with `@requires(ADMIN)`. Handlers that decide on
a resource at run time (a Stream Load needs LOAD_PRIV on its table) call
`require(request, LOAD, db, tbl)`.

Failures answer with Doris' REST body (ResponseEntityBuilder.unauthorized: `{"msg":
"Unauthorized", "code": 401, "data": <reason>, "count": 0}`): HTTP 401 with a
`WWW-Authenticate: Basic` challenge when the credentials are missing or wrong, HTTP 403 when
the user lacks the privilege (Doris sends both with HTTP 200; a real status lets curl and
scripts notice).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from server.privileges import Access, PrivilegeManager, check
from server.privileges.model import Identity, Predicate
from storage.errors import ShaleError

# /api/_load_error_log: a load's ErrorURL opens without credentials, as Doris BE's
# LoadErrorLogAction does; its file names carry 128 random bits (executor/load/error_log.py).
OPEN_PATHS = frozenset({"/metrics", "/api/_load_error_log"})
# a typed request key (aiohttp >= 3.14): a plain string key warns on every request
ACCESS_KEY: web.RequestKey[Access] = web.RequestKey("shaledb.access", Access)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _body(reason: str) -> str:
    return json.dumps({"msg": "Unauthorized", "code": 401, "data": reason, "count": 0})


def unauthorized(reason: str) -> web.HTTPUnauthorized:
    return web.HTTPUnauthorized(text=_body(reason), content_type="application/json",
                                headers={"WWW-Authenticate": 'Basic realm="shaledb"'})


def forbidden(reason: str) -> web.HTTPForbidden:
    return web.HTTPForbidden(text=_body(reason), content_type="application/json")


def requires(predicate: Predicate) -> Callable[[Handler], Handler]:
    """Declare the global privilege a handler needs (checked by the middleware)."""

    def mark(handler: Handler) -> Handler:
        handler.required_predicate = predicate  # type: ignore[attr-defined]
        return handler

    return mark


def password_matches(native_hash: str, password: str) -> bool:
    if not native_hash:
        return password == ""
    digest = hashlib.sha1(hashlib.sha1(password.encode()).digest()).hexdigest()
    return hmac.compare_digest(digest, native_hash.lstrip("*").lower())


def authenticate(manager: PrivilegeManager, request: web.Request) -> Access:
    header = request.headers.get("Authorization", "")
    if not header.lower().startswith("basic "):
        raise unauthorized("Need auth information: send HTTP basic auth (curl -u user:password)")
    try:
        user, _, password = base64.b64decode(header[6:].strip()).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        raise unauthorized("Malformed basic auth header") from None
    host = request.remote or "127.0.0.1"
    account = manager.login_account(user, host)
    denied = f"Access denied for user '{user}'@'{host}' (using password: " \
             f"{'YES' if password else 'NO'})"
    if account is None or not password_matches(account.native_hash, password):
        if account is not None:
            manager.login_failed(account)
        raise unauthorized(denied)
    if account.locked_until == -1 or account.locked_until > time.time():
        raise unauthorized(f"{denied}: the account is locked")
    return Access(manager, Identity(account.name, account.host), host)


def require(request: web.Request, predicate: Predicate, db: str | None = None,
            tbl: str | None = None) -> Access:
    """For handlers: raise 403 unless the request's user holds `predicate` on (db, tbl)
    (e.g. a Stream Load: `require(request, LOAD, db, table)`)."""
    access: Access = request[ACCESS_KEY]
    try:
        check(access, predicate, db, tbl)
    except ShaleError as e:
        raise forbidden(getattr(e, "detail", e.message)) from None
    return access


def auth_middleware(manager: PrivilegeManager) -> Any:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in OPEN_PATHS:
            return await handler(request)
        request[ACCESS_KEY] = authenticate(manager, request)
        predicate = getattr(handler, "required_predicate", None)
        if predicate is not None:
            require(request, predicate)
        return await handler(request)

    return middleware
