"""What `parse_document` may read: a file under the allowed roots, a URL under the webhooks' SSRF rules, or base64.

A path is resolved (symlinks followed) before it is checked, so a link cannot lead out of a root. A URL must be
http(s) to a public address (`check_url`, as a webhook receiver); each redirect is checked the same way, and the body
is cut off at the size limit.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import anyio
import httpx

from services.core.errors import FileTooLarge, NotFound, ValidationFailed, clip
from services.core.webhooks import check_url
from services.gateway.mcp.api import Upload

MAX_REDIRECTS = 5


@dataclass(frozen=True, slots=True)
class SourcePolicy:
    """`roots`: folders whose files may be read by path (none: paths are refused); `allow_private_urls`: as
    `PAGEMILL_WEBHOOKS__ALLOW_PRIVATE_URLS`; `max_bytes`: the largest file taken from a URL, a path or base64."""

    roots: tuple[Path, ...] = ()
    allow_private_urls: bool = False
    max_bytes: int = 200 * 1024 * 1024
    fetch_timeout_s: float = 60.0
    resolved_roots: tuple[Path, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "resolved_roots", tuple(Path(r).expanduser().resolve() for r in self.roots))


def read_path(policy: SourcePolicy, path: str) -> Upload:
    if not policy.resolved_roots:
        raise ValidationFailed("path: this server reads no files by path; send url or content_base64")
    target = Path(path).expanduser()
    if not target.is_absolute():
        target = policy.resolved_roots[0] / target
    target = target.resolve()
    if not any(target.is_relative_to(root) for root in policy.resolved_roots):
        allowed = ", ".join(str(r) for r in policy.resolved_roots)
        raise ValidationFailed(f"path: {path!r} is outside the folders this server may read ({allowed})")
    if not target.is_file():
        raise NotFound(f"path: no file {path!r}")
    size = target.stat().st_size
    if size > policy.max_bytes:
        raise FileTooLarge(f"path: the file is over the {policy.max_bytes} byte limit")
    return Upload(target.name, target.read_bytes())


def read_base64(policy: SourcePolicy, content: str, filename: str | None) -> Upload:
    if len(content) > policy.max_bytes * 4 // 3 + 4:
        raise FileTooLarge(f"content_base64: the file is over the {policy.max_bytes} byte limit")
    try:
        data = base64.b64decode(content, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValidationFailed("content_base64: not valid base64") from exc
    return Upload(filename or "document", data)


async def fetch_url(policy: SourcePolicy, url: str, filename: str | None) -> Upload:
    """GET `url`, following at most five redirects, each to an address a webhook could be sent to, all within
    `fetch_timeout_s` (httpx's timeouts bound each read, not a server that drips the file out)."""
    try:
        with anyio.fail_after(policy.fetch_timeout_s):
            return await _fetch(policy, url, filename)
    except TimeoutError as exc:
        raise ValidationFailed(f"url: not fetched within {policy.fetch_timeout_s:g} s") from exc
    except (httpx.InvalidURL, ValueError, UnicodeError) as exc:  # a host that is no hostname, a broken IPv6
        raise ValidationFailed(clip(f"url: not a valid URL ({exc})")) from exc


async def _fetch(policy: SourcePolicy, url: str, filename: str | None) -> Upload:
    async with httpx.AsyncClient(follow_redirects=False, timeout=policy.fetch_timeout_s) as client:
        for _ in range(MAX_REDIRECTS + 1):
            url = check_url(url, allow_private=policy.allow_private_urls)
            try:
                async with client.stream("GET", url) as response:
                    if response.is_redirect and "location" in response.headers:
                        url = urljoin(url, response.headers["location"])
                        continue
                    if response.status_code >= 400:
                        raise ValidationFailed(f"url: the server answered {response.status_code}")
                    declared = response.headers.get("content-length", "")
                    if declared.isdigit() and int(declared) > policy.max_bytes:
                        raise FileTooLarge(f"url: the file is over the {policy.max_bytes} byte limit")
                    body = bytearray()
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) > policy.max_bytes:
                            raise FileTooLarge(f"url: the file is over the {policy.max_bytes} byte limit")
                    return Upload(filename or _name_of(url), bytes(body))
            except httpx.HTTPError as exc:
                raise ValidationFailed(f"url: cannot fetch it ({type(exc).__name__})") from exc
    raise ValidationFailed(f"url: more than {MAX_REDIRECTS} redirects")


def _name_of(url: str) -> str:
    name = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
    return name or "document"
