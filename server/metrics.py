"""The server's Prometheus metrics (`GET /metrics` on the HTTP port), on prometheus-client.

prometheus-client owns the exposition format (escaping, HELP/TYPE lines, the content type);
this module owns which families exist and where their values come from. Values are read when
Prometheus scrapes (a collector, not counters updated on the hot path): the statement counters
live in `ServerStats` (server/services.py), the compaction and version figures in the compaction
manager (server/compaction_api.py `metric_families`).

Names: Doris' where Doris has the metric (`doris_fe_*` from its FE, `doris_be_*` from its BE),
`shaledb_*` for ShaleDB's own. Doris' `doris_fe_query_err` is a counter without the `_total`
suffix; prometheus-client's CounterMetricFamily would add one, so that family is built as a
plain Metric with the exact sample name Doris exposes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from server import compaction_api, dynamic_partitions, load_status

if TYPE_CHECKING:
    from server.services import HttpServices

CONTENT_TYPE = CONTENT_TYPE_LATEST


def counter(name: str, documentation: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, documentation, value=value)


def gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def exact_counter(name: str, documentation: str, value: float) -> Metric:
    """A counter whose sample keeps `name` as it is (no `_total` added)."""
    family = Metric(name, documentation, "counter")
    family.add_sample(name, {}, value)
    return family


class ServerCollector(Collector):
    """Every family of one server, read at scrape time."""

    def __init__(self, server: HttpServices) -> None:
        self.server = server

    def collect(self) -> Iterator[Metric]:
        server = self.server
        s = server.stats
        yield counter("doris_fe_connection_total", "Connections accepted since start.",
                      s.connections_total)
        yield counter("doris_fe_query_total", "Queries received since start.", s.queries_total)
        yield exact_counter("doris_fe_query_err",
                            "Statements that ended in an error since start.", s.query_err_total)
        yield counter("shaledb_login_failed_total",
                      "Login attempts refused (wrong password, unknown user or database).",
                      s.login_failed_total)
        yield counter("shaledb_audit_log_dropped_total",
                      "Audit events dropped because the audit queue was full "
                      "(audit_event_log_queue_size).", server.audit.dropped)
        yield counter("shaledb_insert_fast_path_total",
                      "INSERT VALUES statements loaded by the literal scanner.",
                      s.insert_fast_path_total)
        yield counter("shaledb_point_query_fast_path_total",
                      "Point lookups answered without planning (enable_short_circuit_query).",
                      s.point_query_fast_path_total)
        yield counter("shaledb_group_commit_loads_total", "Shared loads written by group commit.",
                      server.engine.group_commit.loads)
        yield gauge("shaledb_backends", "Embedded backends.",
                    len(server.engine.catalog.backends()))
        yield from compaction_api.metric_families(server.engine)
        yield from load_status.metric_families(server.engine)
        yield from dynamic_partitions.metric_families(server.engine)
        yield from server.flight_metrics()


def registry_for(server: HttpServices) -> CollectorRegistry:
    """A registry of its own per server (not prometheus-client's global one: tests and embedded
    uses run several servers in one process, and the process metrics are not ours to add)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ServerCollector(server))
    return registry


def exposition(registry: CollectorRegistry) -> bytes:
    """The text format Prometheus scrapes. Reads the catalog: call it off the event loop."""
    return generate_latest(registry)
