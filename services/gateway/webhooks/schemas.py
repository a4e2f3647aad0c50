"""Webhook endpoint and delivery-log bodies."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

from services.core.events import EventType

# What `check_url` enforces, said in the schema (it also refuses private addresses, which a schema cannot say).
URL_SCHEMA: JsonDict = {"format": "uri", "pattern": r"^\s*[hH][tT][tT][pP][sS]?://[^\s/?#@]+"}
EVENTS_SCHEMA: JsonDict = {"items": {"type": "string", "enum": [e.value for e in EventType]}}


class WebhookCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=2048, json_schema_extra=URL_SCHEMA)
    events: list[str] = Field(default_factory=list, description="event types to receive; empty: all",
                              json_schema_extra=EVENTS_SCHEMA)
    description: str = Field(default="", max_length=256)


class WebhookUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(default=None, min_length=1, max_length=2048, json_schema_extra=URL_SCHEMA)
    events: list[str] | None = Field(default=None, json_schema_extra=EVENTS_SCHEMA)
    description: str | None = Field(default=None, max_length=256)


class WebhookRead(BaseModel):
    id: str
    url: str
    events: list[str]
    description: str
    document_id: str | None  # set for the endpoint made from one document's `webhook_url`
    created_at: datetime


class WebhookCreated(WebhookRead):
    secret: str  # `whsec_...`: verify `webhook-signature` with it


class SecretRotate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    overlap_s: float | None = Field(
        default=None, strict=True, ge=0, le=7 * 86400,
        description="seconds the previous secret keeps signing (a second signature); 0: stop at once (a leaked "
                    "secret); default PAGEMILL_WEBHOOKS__SECRET_OVERLAP_S (24 h)")


class WebhookRotated(WebhookCreated):
    previous_secret_expires_at: datetime | None  # until then the previous secret signs too


class WebhookList(BaseModel):
    data: list[WebhookRead]


class AttemptRead(BaseModel):
    number: int
    started_at: datetime
    duration_ms: int
    status_code: int | None
    error: str | None


class DeliveryRead(BaseModel):
    id: str
    event_id: str  # the `webhook-id` header: the same on every attempt and redelivery
    event_type: str
    document_id: str | None
    status: str  # pending, sending, succeeded, failed
    attempts: int
    next_attempt_at: datetime | None
    last_status_code: int | None
    last_error: str | None
    created_at: datetime
    finished_at: datetime | None
    attempt_log: list[AttemptRead]


class DeliveryList(BaseModel):
    data: list[DeliveryRead]
    next_cursor: str | None
