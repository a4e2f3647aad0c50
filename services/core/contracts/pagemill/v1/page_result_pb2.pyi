from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PageError(_message.Message):
    __slots__ = ("code", "message")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class PageElement(_message.Message):
    __slots__ = ("id", "type", "page", "bbox", "text", "markdown", "html", "latex", "level", "items", "ordered", "alignment", "chart", "derived", "confidence")
    ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    BBOX_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    MARKDOWN_FIELD_NUMBER: _ClassVar[int]
    HTML_FIELD_NUMBER: _ClassVar[int]
    LATEX_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    ORDERED_FIELD_NUMBER: _ClassVar[int]
    ALIGNMENT_FIELD_NUMBER: _ClassVar[int]
    CHART_FIELD_NUMBER: _ClassVar[int]
    DERIVED_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    id: str
    type: str
    page: int
    bbox: _containers.RepeatedScalarFieldContainer[float]
    text: str
    markdown: str
    html: str
    latex: str
    level: int
    items: _containers.RepeatedScalarFieldContainer[str]
    ordered: bool
    alignment: float
    chart: str
    derived: bool
    confidence: float
    def __init__(self, id: _Optional[str] = ..., type: _Optional[str] = ..., page: _Optional[int] = ..., bbox: _Optional[_Iterable[float]] = ..., text: _Optional[str] = ..., markdown: _Optional[str] = ..., html: _Optional[str] = ..., latex: _Optional[str] = ..., level: _Optional[int] = ..., items: _Optional[_Iterable[str]] = ..., ordered: _Optional[bool] = ..., alignment: _Optional[float] = ..., chart: _Optional[str] = ..., derived: _Optional[bool] = ..., confidence: _Optional[float] = ...) -> None: ...

class PageResult(_message.Message):
    __slots__ = ("document_id", "page_index", "page_number", "markdown", "engine", "model", "attempts", "latency_ms", "is_fallback", "fallback_reason", "error", "confidence", "signals", "finish_reason", "prompt_tokens", "completion_tokens", "width_px", "height_px", "rotation", "width", "height", "elements", "warnings")
    class SignalsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    DOCUMENT_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_INDEX_FIELD_NUMBER: _ClassVar[int]
    PAGE_NUMBER_FIELD_NUMBER: _ClassVar[int]
    MARKDOWN_FIELD_NUMBER: _ClassVar[int]
    ENGINE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    LATENCY_MS_FIELD_NUMBER: _ClassVar[int]
    IS_FALLBACK_FIELD_NUMBER: _ClassVar[int]
    FALLBACK_REASON_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    SIGNALS_FIELD_NUMBER: _ClassVar[int]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    WIDTH_PX_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_PX_FIELD_NUMBER: _ClassVar[int]
    ROTATION_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    HEIGHT_FIELD_NUMBER: _ClassVar[int]
    ELEMENTS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    document_id: str
    page_index: int
    page_number: int
    markdown: str
    engine: str
    model: str
    attempts: int
    latency_ms: int
    is_fallback: bool
    fallback_reason: str
    error: PageError
    confidence: float
    signals: _containers.ScalarMap[str, float]
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    width_px: int
    height_px: int
    rotation: int
    width: float
    height: float
    elements: _containers.RepeatedCompositeFieldContainer[PageElement]
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, document_id: _Optional[str] = ..., page_index: _Optional[int] = ..., page_number: _Optional[int] = ..., markdown: _Optional[str] = ..., engine: _Optional[str] = ..., model: _Optional[str] = ..., attempts: _Optional[int] = ..., latency_ms: _Optional[int] = ..., is_fallback: _Optional[bool] = ..., fallback_reason: _Optional[str] = ..., error: _Optional[_Union[PageError, _Mapping]] = ..., confidence: _Optional[float] = ..., signals: _Optional[_Mapping[str, float]] = ..., finish_reason: _Optional[str] = ..., prompt_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ..., width_px: _Optional[int] = ..., height_px: _Optional[int] = ..., rotation: _Optional[int] = ..., width: _Optional[float] = ..., height: _Optional[float] = ..., elements: _Optional[_Iterable[_Union[PageElement, _Mapping]]] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...
