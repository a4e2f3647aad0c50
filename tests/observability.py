"""Shared by the observability tests: the metric catalogue, the dashboards' and alert rules' PromQL, vLLM's list.

A query is checked by parsing it with a real PromQL parser (`promql-parser`, MIT, the Rust parser of GreptimeDB
that follows Prometheus 2.45) and looking up every metric selector it contains.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import promql_parser
import yaml
from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.metrics import MetricWrapperBase

from services.core import metrics

REPO = Path(__file__).resolve().parents[1]
CHART = REPO / "charts" / "pagemill"
DASHBOARDS = CHART / "dashboards"
RULES = CHART / "rules"
VLLM_METRICS = Path(__file__).resolve().parent / "data" / "vllm_metrics.tsv"

# Series Prometheus itself attaches to every scrape target (https://prometheus.io/docs/concepts/jobs_instances/).
PROMETHEUS_SYNTHETIC = frozenset({"up", "scrape_duration_seconds", "scrape_samples_scraped"})

# Declared in `services/core/metrics.py` but not produced by the observability run (no webhook is delivered
# there; labelled series are exported at 0 from each process's start). The integration test fails as soon as
# one of them shows up in a scrape, so this list only shrinks.
AWAITING_PRODUCER = frozenset({
    "pagemill_webhook_delivery_seconds",
})


@dataclass(frozen=True, slots=True)
class CatalogueEntry:
    name: str  # as exposed: counters with `_total`
    type: str  # counter, gauge, histogram
    labels: tuple[str, ...]
    documentation: str


@cache
def catalogue() -> dict[str, CatalogueEntry]:
    """Every metric pagemill declares: the module-level collectors plus the scrape-time gauges."""
    entries: dict[str, CatalogueEntry] = {}
    for value in vars(metrics).values():
        if not isinstance(value, MetricWrapperBase):
            continue
        kind = {Counter: "counter", Gauge: "gauge", Histogram: "histogram"}[type(value)]
        name = value._name + ("_total" if kind == "counter" else "")
        entries[name] = CatalogueEntry(name, kind, tuple(value._labelnames), value._documentation)
    for gauge in metrics.SCRAPE_GAUGES:
        entries[gauge.name] = CatalogueEntry(gauge.name, "gauge", gauge.labels, gauge.documentation)
    return entries


def series_names(name: str, kind: str) -> set[str]:
    """The sample names a metric of this type shows in an exposition."""
    if kind == "histogram":
        return {name, f"{name}_bucket", f"{name}_sum", f"{name}_count"}
    return {name}


def metric_names(name: str) -> set[str]:
    entry = catalogue().get(name)
    return series_names(name, entry.type if entry else "gauge")


@cache
def vllm_documented_metrics() -> frozenset[str]:
    """Sample names of vLLM's documented metrics (see the sources at the top of the file)."""
    names: set[str] = set()
    for line in VLLM_METRICS.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, kind = line.split("\t")[:2]
        names |= series_names(name, kind)
    return frozenset(names)


def awaiting_series() -> set[str]:
    return {series for name in AWAITING_PRODUCER for series in metric_names(name)}


# PromQL ------------------------------------------------------------------------------------------------------

_GRAFANA_RANGE = re.compile(r"\$__(rate_interval|interval|range)\b|\$\{__(rate_interval|interval|range)\}")
_GRAFANA_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)")


def grafana_to_promql(expr: str) -> str:
    """Replaces Grafana's variables with values Prometheus accepts, as Grafana does before sending the query."""
    expr = _GRAFANA_RANGE.sub("5m", expr)
    return _GRAFANA_VARIABLE.sub(".*", expr)


def selectors(expr: str) -> list[str]:
    """Metric names of every selector in a PromQL expression; raises ValueError when it does not parse."""
    names: list[str] = []

    def visit(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            if not node.name:
                raise ValueError(f"a selector without a metric name in {expr!r}")
            names.append(node.name)

    promql_parser.walk(promql_parser.parse(grafana_to_promql(expr)), visit)
    return names


def unknown_metrics(expr: str, exported: set[str]) -> set[str]:
    """Selectors that are neither exported by the scraped pagemill, nor documented by vLLM, nor synthetic, nor
    declared and awaiting their producer."""
    known = exported | vllm_documented_metrics() | PROMETHEUS_SYNTHETIC | awaiting_series()
    return {name for name in selectors(expr) if name not in known}


# Dashboards and rules ----------------------------------------------------------------------------------------


def dashboard_files() -> list[Path]:
    return sorted(DASHBOARDS.glob("*.json"))


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])  # collapsed rows keep their panels inside


def dashboard_queries() -> list[tuple[str, str]]:
    """(where, expr) for every panel target and every query variable of every dashboard."""
    queries = []
    for path in dashboard_files():
        dashboard = json.loads(path.read_text())
        for panel in panels(dashboard):
            for target in panel.get("targets", []):
                queries.append((f"{path.name} / {panel['title']}", target["expr"]))
        for variable in dashboard.get("templating", {}).get("list", []):
            if variable.get("type") == "query":
                queries.append((f"{path.name} / ${variable['name']}", label_values_metric(variable)))
    return queries


_LABEL_VALUES = re.compile(r"^label_values\((?P<expr>.+),\s*(?P<label>\w+)\)$")


def label_values_metric(variable: dict[str, Any]) -> str:
    """`label_values(metric{...}, label)` → `metric{...}`, the PromQL part of a query variable."""
    query = variable["query"]
    text = query["query"] if isinstance(query, dict) else query
    match = _LABEL_VALUES.match(text.strip())
    if not match:
        raise ValueError(f"variable {variable['name']}: only label_values(selector, label) is used, got {text!r}")
    return match.group("expr")


def rule_files() -> list[Path]:
    return sorted(RULES.glob("*.yaml"))


def alert_rules() -> list[dict[str, Any]]:
    rules = []
    for path in rule_files():
        for group in yaml.safe_load(path.read_text())["groups"]:
            rules.extend(group["rules"])
    return rules
