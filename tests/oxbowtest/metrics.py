"""oxbowd's /metrics page (docs/metrics.md) as a test reads it: the text, its samples, and the
type of each sample's family, all through prometheus_client's own parser."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def page(server) -> str:
    """The text of one GET /metrics (asserts 200 and the text format)."""
    with urllib.request.urlopen(server.metrics_url + "/metrics", timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        return response.read().decode()


def scrape(server) -> dict:
    """{(sample name, frozenset(labels)): value} of one /metrics page."""
    samples = {}
    for family in text_string_to_metric_families(page(server)):
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return samples


def sample_types(server) -> dict[str, str]:
    """{sample name: its family's type} of one /metrics page, e.g. "oxbow_rows_in_total":
    "counter", "oxbow_fsync_latency_seconds_bucket": "histogram" (the names PromQL selects)."""
    return {s.name: family.type
            for family in text_string_to_metric_families(page(server)) for s in family.samples}
