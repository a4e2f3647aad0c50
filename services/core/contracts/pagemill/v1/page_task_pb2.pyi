import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PageTask(_message.Message):
    __slots__ = ("document_id", "page_index", "source_key", "media_type", "engine", "mode", "request_id", "tenant_id", "enqueued_at", "cache_lookup", "cache_store", "cache_scope", "chunk", "prior_retries")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_INDEX_FIELD_NUMBER: _ClassVar[int]
    SOURCE_KEY_FIELD_NUMBER: _ClassVar[int]
    MEDIA_TYPE_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    ENQUEUED_AT_FIELD_NUMBER: _ClassVar[int]
    CACHE_LOOKUP_FIELD_NUMBER: _ClassVar[int]
    CACHE_STORE_FIELD_NUMBER: _ClassVar[int]
    CACHE_SCOPE_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    PRIOR_RETRIES_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    page_index: int
    source_key: str
    media_type: str
    engine: str
    mode: str
    request_id: str
    tenant_id: str
    enqueued_at: _timestamp_pb2.Timestamp
    cache_lookup: bool
    cache_store: bool
    cache_scope: str
    chunk: _containers.RepeatedCompositeFieldContainer[ChunkPage]
    prior_retries: int
    def __init__(self, document_id: _Optional[str] = ..., page_index: _Optional[int] = ..., source_key: _Optional[str] = ..., media_type: _Optional[str] = ..., engine: _Optional[str] = ..., mode: _Optional[str] = ..., request_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., enqueued_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., cache_lookup: _Optional[bool] = ..., cache_store: _Optional[bool] = ..., cache_scope: _Optional[str] = ..., chunk: _Optional[_Iterable[_Union[ChunkPage, _Mapping]]] = ..., prior_retries: _Optional[int] = ...) -> None: ...

class ChunkPage(_message.Message):
    __slots__ = ("page_index", "source_key")
    PAGE_INDEX_FIELD_NUMBER: _ClassVar[int]
    SOURCE_KEY_FIELD_NUMBER: _ClassVar[int]
    page_index: int
    source_key: str
    def __init__(self, page_index: _Optional[int] = ..., source_key: _Optional[str] = ...) -> None: ...

class DocumentTask(_message.Message):
    __slots__ = ("document_id", "request_id")
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    request_id: str
    def __init__(self, document_id: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...
