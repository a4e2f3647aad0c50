"""Locust users of `make soak`: each one a tenant's client uploading small PDFs and polling their status.

The tenants' API keys come from the JSON file in `PAGEMILL_SOAK_KEYS` (bench/soak.py writes it); the PDF from
`PAGEMILL_SOAK_PDF`. Uploads skip the result cache, so every page is really parsed.
"""

from __future__ import annotations

import itertools
import json
import os
import random
from pathlib import Path

from locust import HttpUser, between, task

KEYS = json.loads(Path(os.environ["PAGEMILL_SOAK_KEYS"]).read_text())
PDF = Path(os.environ["PAGEMILL_SOAK_PDF"]).read_bytes()
_next_key = itertools.cycle(KEYS)


class Tenant(HttpUser):
    wait_time = between(0.5, 1.5)

    def on_start(self) -> None:
        self.client.headers["Authorization"] = f"Bearer {next(_next_key)}"
        self.documents: list[str] = []

    @task(3)
    def upload(self) -> None:
        with self.client.post("/v1/documents", files={"file": ("soak.pdf", PDF, "application/pdf")},
                              data={"cache": "false", "do_not_cache": "true"}, name="POST /v1/documents",
                              catch_response=True) as response:
            if response.status_code == 202:
                self.documents.append(response.json()["id"])
                response.success()
            else:
                response.failure(f"{response.status_code}: {response.text[:200]}")

    @task(2)
    def status(self) -> None:
        if self.documents:
            document_id = random.choice(self.documents[-20:])
            self.client.get(f"/v1/documents/{document_id}", name="GET /v1/documents/{id}")
