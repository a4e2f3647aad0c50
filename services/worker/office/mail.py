"""An e-mail as a document: its headers and body become one HTML page; its attachments are handed back beside it."""

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


def _attachment(part: EmailMessage) -> Attachment:
    if part.get_content_type() == "message/rfc822":  # a forwarded e-mail: its payload is a message, not bytes
        inner = part.get_payload()
        message = inner[0] if isinstance(inner, list) and inner else inner
        data = message.as_bytes() if isinstance(message, email.message.Message) else b""
        return Attachment(part.get_filename() or "message.eml", part.get_content_type(), data)
    payload = part.get_payload(decode=True)
    data = payload if isinstance(payload, bytes) else b""
    return Attachment(part.get_filename() or "attachment", part.get_content_type(), data)


def _plain_body(text: str) -> str:
    """A text/plain body as HTML paragraphs (blank lines apart), its line breaks kept."""
    paragraphs = [p for p in text.replace("\r\n", "\n").split("\n\n") if p.strip()]
    return "".join("<p>" + "<br>".join(html.escape(line) for line in p.strip("\n").split("\n")) + "</p>"
                   for p in paragraphs)


def read_mail(data: bytes) -> Mail:
    """The body page and every attachment (a forwarded e-mail too): which are parsed is decided later."""
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
        body = text if body_part.get_content_subtype() == "html" else _plain_body(text)
    rows = "".join(f"<tr><th>{name}</th><td>{html.escape(str(message[name]))}</td></tr>"
                   for name in _HEADERS if message[name])
    attachments = [_attachment(part) for part in message.iter_attachments()]
    listed = "".join(f"<li>{html.escape(a.filename)} ({html.escape(a.content_type)}, {len(a.data):,} bytes)</li>"
                     for a in attachments)
    page = (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{html.escape(str(message['Subject'] or ''))}"
            f"</title></head><body><table>{rows}</table>{body}"
            + (f"<h2>Attachments</h2><ul>{listed}</ul>" if listed else "") + "</body></html>")
    return Mail(page.encode("utf-8"), attachments)
