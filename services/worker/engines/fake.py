"""An instant, deterministic engine for tests and the control-plane benchmark. Never for customers."""

from __future__ import annotations

import time
import zlib

from services.core.metrics import ENGINE_REQUESTS
from services.worker.engines.base import PageInput, PageOutput


class FakeEngine:
    name = "fake"
    needs_text_layer = False
    needs_image = False
    generative = False

    def __init__(self, latency_ms: int = 0) -> None:
        self.latency_ms = latency_ms
        self.calls = 0

    def parse(self, page: PageInput, *, temperature: float = 0.0) -> PageOutput:
        self.calls += 1
        # Counted across processes (tests read it from /metrics to prove a cache hit made no engine call).
        ENGINE_REQUESTS.labels(engine=self.name, outcome="ok").inc()
        if self.latency_ms:
            time.sleep(self.latency_ms / 1000)
        # the page's bytes shape the output (a checksum, not a hash: this engine stands for no work at all)
        checksum = zlib.crc32(page.data)
        markdown = f"## Page {page.index + 1}\n\nfake engine output for {page.media_type} crc32:{checksum:08x}\n"
        return PageOutput(markdown=markdown, engine=self.name, model="fake-1", confidence=1.0,
                          completion_tokens=len(markdown.split()))

    def check_health(self) -> None:
        return None
