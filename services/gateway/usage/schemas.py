"""`/v1/usage` answers."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field


class UsageLine(BaseModel):
    mode: str
    engine: str
    pages: int  # charged: parsed by an engine
    cached_pages: int  # answered from the result cache: not charged
    failed_pages: int  # ended failed: not charged


class UsageRead(BaseModel):
    from_: datetime = Field(serialization_alias="from")
    to: datetime
    pages: int
    cached_pages: int
    failed_pages: int
    by_mode_engine: list[UsageLine]
