"""structlog set up once per process: event names plus key/values, JSON in production."""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog

_configured = False


def configure_logging(*, json: bool = False, level: str = "INFO") -> None:
    global _configured
    if _configured:
        return
    _configured = True
    logging.basicConfig(format="%(message)s", stream=sys.stderr, level=level.upper())
    for noisy in ("botocore", "boto3", "urllib3", "s3transfer", "httpx", "celery.worker.strategy",
                  "celery.app.trace", "kombu"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLevelName(level.upper())))
    renderer: Any = structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        # One write per line: `print` (PrintLogger) writes the line and its newline apart, and under
        # PYTHONUNBUFFERED (the images) each is its own write(2), so two processes sharing stderr (Celery's pool
        # children) interleaved them into lines holding two JSON objects. A line up to PIPE_BUF (4 KiB) lands whole.
        logger_factory=structlog.WriteLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )


def get_logger(name: str) -> Any:
    return structlog.get_logger(name)


def bind_request_id(request_id: str | None, **extra: Any) -> None:
    """Every log line of this task or request carries the request id that started the document."""
    structlog.contextvars.clear_contextvars()
    if request_id:
        structlog.contextvars.bind_contextvars(request_id=request_id, **extra)
    elif extra:
        structlog.contextvars.bind_contextvars(**extra)
