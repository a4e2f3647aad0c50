"""An e-mail as a document: its headers and body become one HTML page; its attachments are listed beside it."""

from __future__ import annotations

import email
import email.policy
import html
from dataclasses import dataclass
from email.message import EmailMessage

from services.core.errors import CorruptDocument


@dataclass(frozen=True, slots=True)
class Attachment:
    filename: str
    content_type: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Mail:
    html: bytes  # the body page, for the converter
    attachments: list[Attachment]


_HEADERS = ("From", "To", "Cc", "Date", "Subject")


def read_mail(data: bytes, *, max_attachments: int = 50) -> Mail:
    try:
        message = email.message_from_bytes(data, policy=email.policy.default)
    except (ValueError, TypeError, IndexError) as exc:
        raise CorruptDocument(f"the e-mail cannot be read ({exc})") from exc
    if not isinstance(message, EmailMessage):
        raise CorruptDocument("the e-mail cannot be read")
    body_part = message.get_body(preferencelist=("html", "plain"))
    body = ""
    if body_part is not None:
        content = body_part.get_content()
        text = content if isinstance(content, str) else content.decode("utf-8", errors="replace")
        body = text if body_part.get_content_subtype() == "html" else f"<pre>{html.escape(text)}</pre>"
    rows = "".join(f"<tr><th>{name}</th><td>{html.escape(str(message[name]))}</td></tr>"
                   for name in _HEADERS if message[name])
    attachments: list[Attachment] = []
    for part in message.iter_attachments():
        if len(attachments) >= max_attachments:
            break
        payload = part.get_payload(decode=True)
        if isinstance(payload, bytes):
            attachments.append(Attachment(part.get_filename() or "attachment", part.get_content_type(), payload))
    listed = "".join(f"<li>{html.escape(a.filename)} ({html.escape(a.content_type)}, {len(a.data):,} bytes)</li>"
                     for a in attachments)
    page = (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{html.escape(str(message['Subject'] or ''))}"
            f"</title></head><body><table>{rows}</table>{body}"
            + (f"<h2>Attachments</h2><ul>{listed}</ul>" if listed else "") + "</body></html>")
    return Mail(page.encode("utf-8"), attachments)
