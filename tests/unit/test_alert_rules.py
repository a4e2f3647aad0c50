"""The alert rules: the ones the issue asks for exist, every expression is valid PromQL with a severity and a
runbook entry, and — with promtool (`make ops-tools`) — Prometheus loads them and they fire on synthetic series
exactly when they should (`tests/data/alert-rules.test.yaml`). Which metrics they use is checked against a live
scrape in `tests/integration/test_observability.py`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import promql_parser
import pytest

from tests.observability import REPO, alert_rules, rule_files, selectors

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (make ops-tools)")
RULE_TESTS = Path(__file__).resolve().parents[1] / "data" / "alert-rules.test.yaml"


def test_the_alerts_the_issue_asks_for_exist() -> None:
    names = {rule["alert"] for rule in alert_rules()}
    assert {"PagemillQueueBacklogOld", "PagemillPageErrorRate", "PagemillWebhookFailureRate",
            "PagemillNoWorkerConsuming", "PagemillVllmDown"} <= names
    assert len(names) == len(alert_rules()), "alert names are unique"


def test_every_rule_is_valid_and_actionable() -> None:
    runbook = (REPO / "docs" / "operations.md").read_text()
    for rule in alert_rules():
        name = rule["alert"]
        assert selectors(rule["expr"]), name
        assert promql_parser.parse_duration(rule["for"]).total_seconds() >= 60, name
        assert rule["labels"]["severity"] in {"warning", "critical"}, name
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], name
        assert f"`{name}`" in runbook, f"{name} has no entry in docs/operations.md"


@needs_promtool
def test_prometheus_accepts_the_rule_files() -> None:
    result = subprocess.run([PROMTOOL, "check", "rules", *map(str, rule_files())], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_alerts_fire_exactly_when_they_should() -> None:
    result = subprocess.run([PROMTOOL, "test", "rules", str(RULE_TESTS)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    tested = set()
    for line in RULE_TESTS.read_text().splitlines():
        if line.strip().startswith("alertname:"):
            tested.add(line.split(":", 1)[1].strip())
    assert tested == {rule["alert"] for rule in alert_rules()}, "every alert has a promtool test"
