"""The log checks: no logger call passes `event` (structlog's own argument), and the harness's scan of process
logs finds a crashed task."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.harness import REPO, Platform

LOG_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "msg", "bind", "new"}

CRASHED_TASK = """\
[2026-12-01 19:40:01,000: INFO/MainProcess] Task pagemill.results.deliver_webhook[1f2e] received
[2026-12-01 19:40:01,200: ERROR/MainProcess] Task pagemill.results.deliver_webhook[1f2e] raised unexpected: \
TypeError("meth() got multiple values for argument 'event'")
Traceback (most recent call last):
  File "services/results/webhooks.py", line 104, in deliver
TypeError: meth() got multiple values for argument 'event'
2026-12-01T19:40:02.000000Z [info     ] page.parsed                    engine=fake ms=3
"""


def test_no_logger_call_passes_event_as_a_keyword() -> None:
    """structlog's methods take the event name as their first argument, `event`: a keyword of that name raises
    TypeError at the call (it crashed every webhook delivery task once)."""
    offenders = []
    for root in ("services", "pagemill_eval", "bench", "tools"):
        for path in sorted((REPO / root).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in LOG_METHODS and any(k.arg == "event" for k in node.keywords)):
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == []


def test_the_platform_log_scan_finds_a_crashed_task_unless_expected(tmp_path: Path) -> None:
    platform = Platform.__new__(Platform)  # only the log folder and the expectations are used
    platform.workdir, platform.expected_log_errors = tmp_path, []
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "webhooks.log").write_text(CRASHED_TASK)
    (tmp_path / "logs" / "gateway.log").write_text("2026-12-01T19:40:02Z [info     ] http.request  status=200\n")
    errors = platform.log_errors()
    assert len(errors) == 1 and errors[0].startswith("webhooks.log: ") and "multiple values" in errors[0]
    assert "page.parsed" not in errors[0], "a record ends where the next one starts"
    platform.expect_log_errors(r"deliver_webhook\[\w+\] raised unexpected")
    assert platform.log_errors() == []
