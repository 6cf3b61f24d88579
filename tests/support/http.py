"""HTTP requests to a test server with HTTP basic auth (every route but /metrics needs it,
server/privileges/http_auth.py): root with its empty password unless told otherwise."""

from __future__ import annotations

import base64
import urllib.error
import urllib.request


def basic_auth(user: str = "root", password: str = "") -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def authorized(url: str, method: str = "GET", user: str = "root", password: str = "",
               data: bytes | None = None) -> urllib.request.Request:
    """A Request carrying `user:password` as HTTP basic auth."""
    return urllib.request.Request(url, method=method, data=data,
                                  headers={"Authorization": basic_auth(user, password)})


def fetch(url: str, method: str = "GET", auth: tuple[str, str] | None = ("root", ""),
          timeout: float = 60) -> tuple[int, dict[str, str], str]:
    """(status, headers, body) of a request, with or without credentials; errors included."""
    req = urllib.request.Request(url, method=method)
    if auth is not None:
        req = authorized(url, method, *auth)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, dict(resp.headers), resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def scrape_metrics(http_port: int) -> dict[str, float]:
    """GET /metrics (open, no credentials) parsed by prometheus-client's own parser: each
    sample as `name` or `name{label="v",..}` with the labels sorted by name."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=60) as resp:
        text = resp.read().decode()
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            out[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return out
