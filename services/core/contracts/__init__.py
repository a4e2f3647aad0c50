"""The wire contracts (generated from `proto/pagemill/v1/*.proto`) and their JSON form.

Celery carries JSON, so a task's arguments are the proto message's JSON mapping; parsing them back
through the message rejects anything the contract does not define.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from services.core.contracts.pagemill.v1.document_event_pb2 import DocumentEvent
from services.core.contracts.pagemill.v1.page_result_pb2 import PageElement, PageError, PageResult
from services.core.contracts.pagemill.v1.page_task_pb2 import ChunkPage, DocumentTask, PageTask
from services.core.contracts.pagemill.v1.webhook_task_pb2 import WebhookTask

__all__ = ["ChunkPage", "DocumentEvent", "DocumentTask", "PageElement", "PageError", "PageResult", "PageTask",
           "WebhookTask", "from_dict", "timestamp", "to_dict", "to_datetime"]

M = TypeVar("M", bound=Message)


def to_dict(message: Message) -> dict[str, Any]:
    return json_format.MessageToDict(message, preserving_proto_field_name=True,
                                     always_print_fields_with_no_presence=True)


def from_dict(cls: type[M], payload: dict[str, Any]) -> M:
    """Parses a JSON payload into `cls`; unknown fields raise `json_format.ParseError`."""
    return json_format.ParseDict(payload, cls())


def timestamp(moment: datetime | None = None) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime((moment or datetime.now(UTC)).astimezone(UTC))
    return stamp


def to_datetime(stamp: Timestamp) -> datetime:
    return stamp.ToDatetime(tzinfo=UTC)
