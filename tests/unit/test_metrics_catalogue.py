"""The metric catalogue and its documentation agree, names follow the convention, labels stay bounded."""

from __future__ import annotations

import re

from services.core.exporters import message_sent_at, top_n_with_other
from tests.observability import REPO, catalogue

DOC = REPO / "docs" / "metrics.md"
ROW = re.compile(r"^\|\s*`(?P<name>pagemill_\w+)`\s*\|\s*(?P<type>\w+)\s*\|\s*(?P<labels>[^|]*)\|")
UNBOUNDED = {"document_id", "tenant_id", "request_id", "id", "path", "url", "filename", "pid"}


def documented() -> dict[str, tuple[str, tuple[str, ...]]]:
    rows: dict[str, tuple[str, tuple[str, ...]]] = {}
    for line in DOC.read_text().splitlines():
        match = ROW.match(line)
        if match:
            labels = tuple(x.strip() for x in match["labels"].split(",") if x.strip() not in ("", "—", "-"))
            assert match["name"] not in rows, f"{match['name']} is documented twice"
            rows[match["name"]] = (match["type"], labels)
    return rows


def test_every_declared_metric_is_documented_and_every_documented_one_declared() -> None:
    declared = catalogue()
    rows = documented()
    assert sorted(set(declared) - set(rows)) == [], "declared but missing from docs/metrics.md"
    assert sorted(set(rows) - set(declared)) == [], "documented but not declared in services/core/metrics.py"


def test_documented_type_and_labels_match_the_declaration() -> None:
    rows = documented()
    for name, entry in catalogue().items():
        assert rows[name] == (entry.type, entry.labels), name


def test_names_follow_the_convention_and_labels_are_bounded() -> None:
    units = ("_total", "_seconds", "_bytes", "_depth", "_requests", "_pages", "_slots", "documents")
    for name, entry in catalogue().items():
        assert re.fullmatch(r"pagemill_[a-z_]+", name), name
        assert name.endswith(units), f"{name}: end the name with its unit"
        assert (entry.type == "counter") == name.endswith("_total"), name
        assert not set(entry.labels) & UNBOUNDED, f"{name} has an unbounded label"
        assert entry.documentation.strip(), name


def test_tenant_top_n_keeps_at_most_n_plus_one_series() -> None:
    rows = [(f"tenant-{i}", float(i)) for i in range(50)]
    samples = list(top_n_with_other(rows, 3))
    assert samples == [(("tenant-49",), 49.0), (("tenant-48",), 48.0), (("tenant-47",), 47.0),
                       (("other",), float(sum(range(47))))]
    # `other` is always there (0 when every tenant is named), so the series exists from the first scrape
    assert list(top_n_with_other(rows[:2], 3)) == [(("tenant-1",), 1.0), (("tenant-0",), 0.0), (("other",), 0.0)]
    assert list(top_n_with_other([], 0)) == [(("other",), 0.0)]
    assert list(top_n_with_other(rows, 0)) == [(("other",), float(sum(range(50))))]


def test_a_message_age_comes_from_its_header_or_its_page_task() -> None:
    import base64
    import json

    assert message_sent_at(json.dumps({"headers": {"pagemill_sent_at": 1700000000.5}, "body": ""})) == 1700000000.5
    body = json.dumps([[{"document_id": "d", "enqueued_at": "2024-01-02T03:04:05Z"}], {}, {}])
    envelope = {"headers": {}, "properties": {"body_encoding": "base64"},
                "body": base64.b64encode(body.encode()).decode()}
    assert message_sent_at(json.dumps(envelope)) == 1704164645.0
    assert message_sent_at(b"not json") is None
    assert message_sent_at(json.dumps({"headers": {}, "body": "e30=", "properties": {"body_encoding": "base64"}})) \
        is None
