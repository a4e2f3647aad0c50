"""The Grafana dashboards: fresh from their generator, valid against the dashboard JSON model, laid out without
overlaps, every query valid PromQL with only defined variables. Which metrics they query is checked against a live
scrape in `tests/integration/test_observability.py`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.observability import DASHBOARDS, dashboard_files, dashboard_queries, panels, selectors
from tools.dashboards import render

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "data" / "grafana-dashboard.schema.json").read_text())
BUILTIN_VARIABLES = {"__rate_interval", "__interval", "__range"}


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_the_platform_and_gpu_dashboards_exist_and_are_fresh() -> None:
    assert {p.name for p in dashboard_files()} == {"platform.json", "gpu-vllm.json"}
    for name, text in render().items():
        assert (DASHBOARDS / name).read_text() == text, f"{name} is stale: run `make dashboards`"


@pytest.mark.parametrize("path", dashboard_files(), ids=lambda p: p.name)
def test_dashboard_matches_the_json_model(path: Path) -> None:
    jsonschema.validate(load(path), SCHEMA, cls=jsonschema.Draft202012Validator)


def test_the_schema_rejects_what_grafana_would_not_load() -> None:
    good = load(DASHBOARDS / "platform.json")
    broken = [
        lambda d: d.pop("schemaVersion"),
        lambda d: d["panels"][1].pop("gridPos"),
        lambda d: d["panels"][1]["gridPos"].update(w=30),
        lambda d: d["panels"][1]["targets"][0].pop("expr"),
        lambda d: d["panels"][1].update(type="graph-that-does-not-exist"),
        lambda d: d["templating"]["list"][1].pop("query"),
    ]
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for breaking in broken:
        dashboard = json.loads(json.dumps(good))
        breaking(dashboard)
        assert not validator.is_valid(dashboard)


@pytest.mark.parametrize("path", dashboard_files(), ids=lambda p: p.name)
def test_layout_ids_and_datasources(path: Path) -> None:
    dashboard = load(path)
    all_panels = list(panels(dashboard))
    ids = [p["id"] for p in all_panels]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    cells: set[tuple[int, int]] = set()
    for panel in all_panels:
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24, panel["title"]
        area = {(x, y) for x in range(pos["x"], pos["x"] + pos["w"]) for y in range(pos["y"], pos["y"] + pos["h"])}
        assert not area & cells, f"{panel['title']} overlaps another panel"
        cells |= area
        if panel["type"] != "row":
            refs = [t["refId"] for t in panel["targets"]]
            assert len(refs) == len(set(refs)), panel["title"]
            assert panel["datasource"]["uid"] == "${datasource}", "panels follow the datasource variable"
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"


@pytest.mark.parametrize("path", dashboard_files(), ids=lambda p: p.name)
def test_queries_use_only_defined_variables(path: Path) -> None:
    dashboard = load(path)
    defined = {v["name"] for v in dashboard["templating"]["list"]} | BUILTIN_VARIABLES
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            used = set(re.findall(r"\$\{?(\w+)", target["expr"]))
            assert used <= defined, f"{panel['title']}: undefined {used - defined}"


def test_every_query_is_valid_promql() -> None:
    queries = dashboard_queries()
    assert len(queries) > 40
    for where, expr in queries:
        assert selectors(expr), f"{where}: no metric in {expr!r}"


def test_the_parser_catches_broken_queries() -> None:
    for broken in ("sum(rate(pagemill_pages_total[5m])", "rate(pagemill_pages_total)", "sum by (le (x)",
                   "no_such_function(pagemill_pages_total)", '{queue="x"}'):
        with pytest.raises(ValueError):
            selectors(broken)


def test_the_gpu_dashboard_shows_what_the_issue_asks_for() -> None:
    exprs = " ".join(t["expr"] for p in panels(load(DASHBOARDS / "gpu-vllm.json")) for t in p.get("targets", []))
    for metric in ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                   "vllm:generation_tokens_total", "vllm:spec_decode_num_drafts_total",
                   "vllm:spec_decode_num_draft_tokens_total", "vllm:spec_decode_num_accepted_tokens_total",
                   "vllm:time_to_first_token_seconds_bucket"):
        assert metric in exprs, metric


def test_an_unknown_metric_is_reported() -> None:
    from tests.observability import unknown_metrics

    exported = {"pagemill_pages_total"}
    assert unknown_metrics("sum(rate(pagemill_pages_total[5m])) / sum(rate(pagemill_pages_totl[5m]))", exported) \
        == {"pagemill_pages_totl"}
    assert unknown_metrics("vllm:num_requests_running + vllm:num_requests_runing", exported) \
        == {"vllm:num_requests_runing"}
    assert unknown_metrics('up{component="vllm"} == 0', exported) == set()
