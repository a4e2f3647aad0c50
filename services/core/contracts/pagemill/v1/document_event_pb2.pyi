import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DocumentEvent(_message.Message):
    __slots__ = ("id", "type", "document_id", "tenant_id", "status", "pages_total", "pages_done", "pages_failed", "occurred_at", "error_code", "error_message", "request_id", "metadata_json", "parent_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    PAGES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    PAGES_DONE_FIELD_NUMBER: _ClassVar[int]
    PAGES_FAILED_FIELD_NUMBER: _ClassVar[int]
    OCCURRED_AT_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    METADATA_JSON_FIELD_NUMBER: _ClassVar[int]
    PARENT_ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    type: str
    document_id: str
    tenant_id: str
    status: str
    pages_total: int
    pages_done: int
    pages_failed: int
    occurred_at: _timestamp_pb2.Timestamp
    error_code: str
    error_message: str
    request_id: str
    metadata_json: str
    parent_id: str
    def __init__(self, id: _Optional[str] = ..., type: _Optional[str] = ..., document_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., status: _Optional[str] = ..., pages_total: _Optional[int] = ..., pages_done: _Optional[int] = ..., pages_failed: _Optional[int] = ..., occurred_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., error_code: _Optional[str] = ..., error_message: _Optional[str] = ..., request_id: _Optional[str] = ..., metadata_json: _Optional[str] = ..., parent_id: _Optional[str] = ...) -> None: ...
