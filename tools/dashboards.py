"""Writes the Grafana dashboards under `charts/pagemill/dashboards/` (`make dashboards`).

The JSON is generated so that layout, datasource and units stay consistent; the committed files are what Helm
and docker compose ship, and a test fails when they are stale. Grafana's classic dashboard JSON model.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "charts" / "pagemill" / "dashboards"
SCHEMA_VERSION = 39  # Grafana 10.4 / 11
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
RATE = "$__rate_interval"


@dataclass
class Panel:
    title: str
    targets: list[tuple[str, str]]  # (expr, legend)
    unit: str = "short"
    kind: str = "timeseries"
    width: int = 8
    height: int = 8
    description: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    max: float | None = None


@dataclass
class Row:
    title: str
    panels: list[Panel]


def _panel_json(panel: Panel, panel_id: int, x: int, y: int) -> dict[str, Any]:
    defaults: dict[str, Any] = {"unit": panel.unit}
    if panel.max is not None:
        defaults["min"], defaults["max"] = 0, panel.max
    if panel.kind == "timeseries":
        defaults["custom"] = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10, "spanNulls": True}
    return {
        "id": panel_id,
        "type": panel.kind,
        "title": panel.title,
        "description": panel.description,
        "datasource": DATASOURCE,
        "gridPos": {"h": panel.height, "w": panel.width, "x": x, "y": y},
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": panel.options or _default_options(panel.kind),
        "targets": [
            {"refId": chr(ord("A") + i), "datasource": DATASOURCE, "expr": expr, "legendFormat": legend,
             "range": panel.kind == "timeseries", "instant": panel.kind != "timeseries"}
            for i, (expr, legend) in enumerate(panel.targets)
        ],
    }


def _default_options(kind: str) -> dict[str, Any]:
    if kind == "timeseries":
        return {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                "tooltip": {"mode": "multi", "sort": "desc"}}
    if kind == "stat":
        return {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                "colorMode": "value", "graphMode": "area", "textMode": "auto"}
    if kind == "bargauge":
        return {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                "orientation": "horizontal", "displayMode": "gradient"}
    return {}


def layout(rows: list[Row]) -> list[dict[str, Any]]:
    """Rows top to bottom; panels fill 24 columns left to right, wrapping."""
    out: list[dict[str, Any]] = []
    panel_id, y = 1, 0
    for row in rows:
        out.append({"id": panel_id, "type": "row", "title": row.title, "collapsed": False,
                    "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "panels": []})
        panel_id, y = panel_id + 1, y + 1
        x, line_height = 0, 0
        for panel in row.panels:
            if x + panel.width > 24:
                x, y, line_height = 0, y + line_height, 0
            out.append(_panel_json(panel, panel_id, x, y))
            panel_id += 1
            x += panel.width
            line_height = max(line_height, panel.height)
        y += line_height
    return out


def datasource_variable() -> dict[str, Any]:
    return {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus",
            "current": {}, "hide": 0, "refresh": 1, "regex": "", "options": []}


def query_variable(name: str, label: str, metric: str, label_name: str) -> dict[str, Any]:
    query = f"label_values({metric}, {label_name})"
    return {"name": name, "label": label, "type": "query", "datasource": DATASOURCE,
            "query": {"query": query, "refId": f"{name}-variable"}, "definition": query,
            "includeAll": True, "multi": True, "allValue": ".*", "current": {}, "hide": 0, "refresh": 2,
            "regex": "", "sort": 1, "options": []}


def dashboard(uid: str, title: str, description: str, rows: list[Row], variables: list[dict[str, Any]],
              tags: list[str]) -> dict[str, Any]:
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": tags,
        "editable": True,
        "graphTooltip": 1,
        "timezone": "browser",
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "timepicker": {},
        "links": [],
        "annotations": {"list": [{
            "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"}, "enable": True, "hide": True,
            "iconColor": "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts", "type": "dashboard"}]},
        "templating": {"list": variables},
        "panels": layout(rows),
    }


def quantiles(metric: str, by: str = "", selector: str = "", qs: tuple[float, ...] = (0.5, 0.95, 0.99)
              ) -> list[tuple[str, str]]:
    group = f"le, {by}" if by else "le"
    legend = f" {{{{{by}}}}}" if by else ""
    return [(f"histogram_quantile({q}, sum by ({group}) (rate({metric}_bucket{selector}[{RATE}])))",
             f"p{int(q * 100)}{legend}") for q in qs]


# Platform ----------------------------------------------------------------------------------------------------

ENGINE = '{engine=~"$engine"}'
QUEUE = '{queue=~"$queue"}'


def platform() -> dict[str, Any]:
    rows = [
        Row("Throughput", [
            Panel("Pages per second, by status", [
                (f"sum by (status) (rate(pagemill_pages_total{ENGINE}[{RATE}]))", "{{status}}")],
                unit="ops", description="Pages that ended, per second. The platform's throughput."),
            Panel("Pages per second, by engine and mode", [
                (f'sum by (engine, mode) (rate(pagemill_pages_total{{status="succeeded",engine=~"$engine"}}'
                 f"[{RATE}]))", "{{engine}} / {{mode}}")], unit="ops"),
            Panel("Documents accepted and finished per second", [
                (f'sum by (mode) (rate(pagemill_documents_total{{status="queued"}}[{RATE}]))', "accepted {{mode}}"),
                (f'sum by (status) (rate(pagemill_documents_total{{status!="queued"}}[{RATE}]))', "{{status}}")],
                unit="ops"),
            Panel("Pages done (24 h)", [
                ('sum(increase(pagemill_pages_total{status="succeeded"}[24h]))', "pages")],
                kind="stat", width=6, height=5),
            Panel("Open documents", [
                ('sum(max by (status) (pagemill_documents{status=~"queued|running"}))', "open")],
                kind="stat", width=6, height=5),
            Panel("Documents by status", [("max by (status) (pagemill_documents)", "{{status}}")],
                kind="bargauge", width=12, height=5),
        ]),
        Row("Latency", [
            Panel("Page latency (engine time, retries included)",
                  quantiles("pagemill_page_latency_seconds", "engine", ENGINE), unit="s", width=12),
            Panel("Page time by stage (p95)",
                  quantiles("pagemill_page_stage_seconds", "stage", ENGINE, qs=(0.95,)), unit="s", width=12,
                  description="queue_wait: enqueue → start; fetch: object store read; render: text layer and "
                              "pixels; engine: the model; store: the result write."),
            Panel("API latency p95, by route",
                  quantiles("pagemill_http_request_duration_seconds", "route",
                            '{route!~"/metrics|/healthz|/readyz"}', qs=(0.95,)), unit="s", width=12),
            Panel("API requests per second, by status", [
                (f"sum by (status) (rate(pagemill_http_requests_total[{RATE}]))", "{{status}}")],
                unit="reqps", width=12),
        ]),
        Row("Queues", [
            Panel("Queue depth", [(f"max by (queue) (pagemill_queue_depth{QUEUE})", "{{queue}}")],
                  description="Messages waiting in each Redis queue (KEDA scales GPU workers on pages.gpu)."),
            Panel("Oldest waiting message", [
                (f"max by (queue) (pagemill_queue_oldest_age_seconds{QUEUE})", "{{queue}}")], unit="s",
                description="How long the oldest message in each queue has waited: the backlog a customer feels."),
            Panel("Tasks consumed per second, by queue", [
                (f"sum by (queue) (rate(pagemill_tasks_total{QUEUE}[{RATE}]))", "{{queue}}")], unit="ops",
                description="Zero while a queue has depth means nobody consumes it."),
            Panel("Worker slots by page queue", [
                (f"max by (queue) (pagemill_queue_consumer_slots{QUEUE})", "{{queue}}")], width=12,
                description="Processes or threads the live workers announce for each page queue: a document's "
                            "chunks are sized by the idle ones. Zero: nobody consumes the queue."),
            Panel("Task outcomes per second", [
                (f'sum by (task, state) (rate(pagemill_tasks_total{{state!="SUCCESS"}}[{RATE}]))',
                 "{{task}} {{state}}")], unit="ops", width=12),
            Panel("Resident memory, largest process by role", [
                ("max by (role) (pagemill_process_resident_memory_bytes)", "{{role}}")], unit="bytes", width=12),
        ]),
        Row("Errors and quality", [
            Panel("Page error rate", [
                (f'sum(rate(pagemill_pages_total{{status="failed"}}[{RATE}])) / '
                 f"sum(rate(pagemill_pages_total[{RATE}]))", "failed / all")], unit="percentunit", max=1),
            Panel("Fallback rate", [
                (f"sum(rate(pagemill_fallback_pages_total[{RATE}])) / "
                 f'sum(rate(pagemill_pages_total{{status="succeeded"}}[{RATE}]))', "fallback / succeeded")],
                unit="percentunit", max=1,
                description="Pages the primary engine gave up on and the cpu engine answered, flagged."),
            Panel("Retries per second, by reason", [
                (f"sum by (reason) (rate(pagemill_page_retries_total[{RATE}]))", "{{reason}}")], unit="ops"),
            Panel("Rejected uploads per second, by code", [
                (f"sum by (code) (rate(pagemill_uploads_rejected_total[{RATE}]))", "{{code}}")], unit="ops"),
            Panel("API 5xx ratio", [
                (f'sum(rate(pagemill_http_requests_total{{status=~"5.."}}[{RATE}])) / '
                 f"sum(rate(pagemill_http_requests_total[{RATE}]))", "5xx / all")], unit="percentunit", max=1),
            Panel("Rate-limited requests per second", [
                (f"sum by (limit) (rate(pagemill_rate_limited_total[{RATE}]))", "{{limit}}")], unit="reqps"),
        ]),
        Row("Engines and cost", [
            Panel("Tokens per second", [
                (f"sum by (engine, kind) (rate(pagemill_engine_tokens_total[{RATE}]))", "{{engine}} {{kind}}")],
                unit="short"),
            Panel("Completion tokens per page", [
                (f'sum by (engine) (rate(pagemill_engine_tokens_total{{kind="completion"}}[{RATE}])) / '
                 f'sum by (engine) (rate(pagemill_pages_total{{status="succeeded"}}[{RATE}]))', "{{engine}}")],
                description="What a page costs in generated tokens, per engine."),
            Panel("Engine requests in flight", [
                ("sum by (engine) (pagemill_engine_in_flight_requests)", "{{engine}}")]),
            Panel("Engine calls per second, by outcome", [
                (f"sum by (engine, outcome) (rate(pagemill_engine_requests_total[{RATE}]))",
                 "{{engine}} {{outcome}}")], unit="ops", width=12),
            Panel("Result cache hit ratio", [
                (f'sum by (level) (rate(pagemill_cache_lookups_total{{outcome="hit"}}[{RATE}])) / '
                 f"sum by (level) (rate(pagemill_cache_lookups_total[{RATE}]))", "{{level}}")],
                unit="percentunit", max=1, width=12),
            Panel("Busiest tenants (open pages)", [("max by (tenant) (pagemill_tenant_open_pages)", "{{tenant}}")],
                  kind="bargauge", width=24, height=6,
                  description="Only when PAGEMILL_METRICS__TENANT_TOP_N > 0: the N busiest tenants, the rest "
                              "as `other`."),
        ]),
        Row("Webhooks", [
            Panel("Deliveries per second, by outcome", [
                (f"sum by (outcome) (rate(pagemill_webhook_deliveries_total[{RATE}]))", "{{outcome}}")],
                unit="ops"),
            Panel("Webhook failure rate", [
                (f'sum(rate(pagemill_webhook_deliveries_total{{outcome="failed"}}[{RATE}])) / '
                 f"sum(rate(pagemill_webhook_deliveries_total[{RATE}]))", "failed / attempts")],
                unit="percentunit", max=1),
            Panel("Receiver latency", quantiles("pagemill_webhook_delivery_seconds", qs=(0.5, 0.95)),
                  unit="s"),
        ]),
    ]
    variables = [
        datasource_variable(),
        query_variable("engine", "Engine", "pagemill_pages_total", "engine"),
        query_variable("queue", "Queue", "pagemill_queue_depth", "queue"),
    ]
    return dashboard("pagemill-platform", "pagemill / Platform",
                     "Throughput, latency, queues, errors, cost and webhooks of the pagemill platform.",
                     rows, variables, ["pagemill"])


# GPU / vLLM --------------------------------------------------------------------------------------------------

MODEL = '{model_name=~"$model_name"}'


def vllm() -> dict[str, Any]:
    accepted = f"sum(rate(vllm:spec_decode_num_accepted_tokens_total{MODEL}[{RATE}]))"
    rows = [
        Row("Load", [
            Panel("Requests running and waiting", [
                (f"sum(vllm:num_requests_running{MODEL})", "running"),
                (f"sum(vllm:num_requests_waiting{MODEL})", "waiting")],
                description="Waiting > 0 for long means the GPU is saturated (or max_num_seqs is too low)."),
            Panel("KV-cache usage", [
                (f"avg by (model_name) (vllm:kv_cache_usage_perc{MODEL}) or "
                 f"avg by (model_name) (vllm:gpu_cache_usage_perc{MODEL})", "{{model_name}}")],
                unit="percentunit", max=1, description="vllm:gpu_cache_usage_perc on vLLM before 0.10."),
            Panel("Fed by pagemill: requests in flight vs GPU queue", [
                ('sum(pagemill_engine_in_flight_requests{engine="vllm"})', "in flight (workers)"),
                ('max(pagemill_queue_depth{queue="pages.gpu"})', "pages.gpu waiting")],
                description="Workers keep up to max_in_flight requests open per replica; a growing pages.gpu "
                            "queue with a full batch means scale out."),
        ]),
        Row("Throughput", [
            Panel("Generation and prompt tokens per second", [
                (f"sum(rate(vllm:generation_tokens_total{MODEL}[{RATE}]))", "generation"),
                (f"sum(rate(vllm:prompt_tokens_total{MODEL}[{RATE}]))", "prompt")], unit="short", width=12),
            Panel("Finished requests per second, by reason", [
                (f"sum by (finished_reason) (rate(vllm:request_success_total{MODEL}[{RATE}]))",
                 "{{finished_reason}}")], unit="reqps", width=12,
                description="`length` finishes are pages that ran out of tokens: the retry ladder handles them."),
        ]),
        Row("Speculative decoding", [
            Panel("Draft acceptance rate", [
                (f"{accepted} / sum(rate(vllm:spec_decode_num_draft_tokens_total{MODEL}[{RATE}]))",
                 "accepted / drafted")],
                unit="percentunit", max=1),
            Panel("Mean accepted length (tokens per step)", [
                (f"1 + {accepted} / sum(rate(vllm:spec_decode_num_drafts_total{MODEL}[{RATE}]))", "tokens / step")],
                description="Tokens committed per verification step, bonus token included: what "
                            "`pagemill specsim` predicts offline."),
            Panel("Acceptance by draft position", [
                (f"sum by (position) (rate(vllm:spec_decode_num_accepted_tokens_per_pos_total{MODEL}[{RATE}])) / "
                 f"on() group_left() sum(rate(vllm:spec_decode_num_drafts_total{MODEL}[{RATE}]))",
                 "position {{position}}")], unit="percentunit", max=1),
        ]),
        Row("Latency", [
            Panel("Time to first token", quantiles("vllm:time_to_first_token_seconds", "model_name", MODEL,
                                                   qs=(0.5, 0.95)), unit="s"),
            Panel("Inter-token latency", quantiles("vllm:inter_token_latency_seconds", "model_name", MODEL,
                                                   qs=(0.5, 0.95)), unit="s"),
            Panel("End-to-end request latency", quantiles("vllm:e2e_request_latency_seconds", "model_name", MODEL,
                                                          qs=(0.5, 0.95)), unit="s"),
            Panel("Preemptions per second", [
                (f"sum(rate(vllm:num_preemptions_total{MODEL}[{RATE}]))", "preemptions")], unit="ops", width=12,
                description="Requests evicted for lack of KV-cache: lower max_num_seqs or add memory."),
            Panel("vLLM targets up", [('sum(up{component="vllm"})', "up"),
                                      ('count(up{component="vllm"})', "targets")], width=12),
        ]),
    ]
    variables = [datasource_variable(),
                 query_variable("model_name", "Model", "vllm:num_requests_running", "model_name")]
    return dashboard("pagemill-vllm", "pagemill / GPU and vLLM",
                     "The vLLM sidecars of the GPU workers: load, KV-cache, tokens, speculative decoding, latency.",
                     rows, variables, ["pagemill", "vllm"])


DASHBOARDS = {"platform.json": platform, "gpu-vllm.json": vllm}


def render() -> dict[str, str]:
    return {name: json.dumps(build(), indent=2, ensure_ascii=False) + "\n" for name, build in DASHBOARDS.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in render().items():
        (args.out / name).write_text(text)
        print(f"wrote {args.out / name}")


if __name__ == "__main__":
    main()
