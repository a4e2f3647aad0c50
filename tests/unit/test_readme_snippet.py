"""The webhook verification snippet in docs/webhooks.md works as pasted, against pagemill's own signatures."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from services.core import webhooks

WEBHOOKS_DOC = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"


def test_readme_verification_snippet_accepts_our_signatures_and_rejects_forgeries() -> None:
    text = WEBHOOKS_DOC.read_text()
    match = re.search(r"<!-- verify-snippet -->\n```python\n(.*?)```", text, re.S)
    assert match, "docs/webhooks.md lost its verification snippet"
    namespace: dict[str, Any] = {}
    exec(match.group(1), namespace)  # our own docs, run as a customer would
    verify = namespace["verify_pagemill_webhook"]
    secret = webhooks.generate_secret()
    body = '{"type":"document.succeeded","data":{"document_id":"doc_1"}}'
    headers = webhooks.headers(secret, "msg_1", body)
    assert verify(secret, headers, body.encode()) is True
    assert verify(webhooks.generate_secret(), headers, body.encode()) is False
    assert verify(secret, headers, body.replace("doc_1", "doc_2").encode()) is False
    stale = webhooks.headers(secret, "msg_1", body, timestamp=int(time.time()) - 3600)
    assert verify(secret, stale, body.encode()) is False
