"""A Server-Sent Events reader for the tests: each event with the moment it arrived, read on a thread of its own."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx


@dataclass(frozen=True)
class Received:
    kind: str
    data: dict[str, Any]
    event_id: str | None
    at: datetime  # when the frame arrived (UTC), to compare with the database's timestamps


@dataclass
class EventStream:
    """Follows `/v1/documents/{id}/events` until the server closes it (after the final event)."""

    client: httpx.Client
    document_id: str
    last_event_id: str | None = None
    events: list[Received] = field(default_factory=list)
    comments: int = 0
    closed: threading.Event = field(default_factory=threading.Event)
    opened: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None

    def start(self) -> EventStream:
        threading.Thread(target=self._run, daemon=True).start()
        assert self.opened.wait(30), "the event stream did not open"
        return self

    def _run(self) -> None:
        headers = {"Last-Event-ID": self.last_event_id} if self.last_event_id else {}
        try:
            with self.client.stream("GET", f"/v1/documents/{self.document_id}/events", headers=headers,
                                    timeout=httpx.Timeout(10, read=None)) as response:
                assert response.status_code == 200, response.read()
                self.opened.set()
                kind, event_id = None, None
                for line in response.iter_lines():
                    if line.startswith(":"):
                        self.comments += 1
                    elif line.startswith("id: "):
                        event_id = line[4:]
                    elif line.startswith("event: "):
                        kind = line[7:]
                    elif line.startswith("data: ") and kind:
                        self.events.append(Received(kind, json.loads(line[6:]), event_id, datetime.now(UTC)))
                        kind, event_id = None, None
        except BaseException as exc:  # noqa: BLE001 - reported by the test through `wait_closed`
            self.error = exc
        finally:
            self.opened.set()
            self.closed.set()

    def kinds(self) -> list[str]:
        return [event.kind for event in self.events]

    def wait_for(self, kind: str, timeout: float) -> Received:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [event for event in self.events if event.kind == kind]
            if found:
                return found[0]
            if self.closed.is_set():
                break
            time.sleep(0.02)
        raise AssertionError(f"no {kind} within {timeout} s; got {self.kinds()} (error: {self.error!r})")

    def wait_closed(self, timeout: float) -> list[Received]:
        assert self.closed.wait(timeout), f"the stream is still open after {timeout} s; got {self.kinds()}"
        assert self.error is None, repr(self.error)
        return self.events
