"""An upload off the wire: the multipart body parsed as it streams, the file spooled to disk, hashed and counted.

Nothing is read before the route runs, so the API key and the rate limit are checked before the first byte of
the body; the size limit is checked while it streams (413 as soon as it is passed, not after the whole body
arrived), so is the file's type (415 from its first KiB), and a body that stalls or crawls gets 408. The file
never sits in memory: at most one batch of `BATCH_BYTES` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from fastapi.concurrency import run_in_threadpool
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, MultipartState, parse_options_header
from starlette.requests import ClientDisconnect, Request

from services.core.errors import FileTooLarge, InputError, RequestTimeout, ValidationFailed, clip
from services.core.formats import plausible_office_head
from services.core.pdf import sniff_media_type

FILE_FIELD = "file"
MAX_FIELD_BYTES = 64 * 1024  # a form field (pages, metadata, webhook_url, ...); metadata itself is ≤ 16 KiB
MAX_PARTS = 32
FORM_OVERHEAD_BYTES = MAX_PARTS * (MAX_FIELD_BYTES // 8) + 64 * 1024  # what a body may carry beside the file
SNIFF_BYTES = 1024  # what `sniff_media_type` reads
BATCH_BYTES = 1024 * 1024  # the parser runs in a thread once per batch, not once per network read


class ClientGone(InputError):
    """The client disconnected before its upload was complete (nobody reads this answer)."""

    code = "client_disconnected"


@dataclass
class ReceivedUpload:
    """The form of an upload; `path` is a temporary file the caller removes with `discard()`."""

    path: Path
    filename: str
    size: int
    sha256: str
    fields: dict[str, str] = field(default_factory=dict)

    def discard(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


class _Form:
    """python-multipart's callbacks: fields kept (bounded), the file part written to a temporary file."""

    def __init__(self, max_file_bytes: int, allowed_fields: frozenset[str]) -> None:
        self.max_file_bytes = max_file_bytes
        self.allowed_fields = allowed_fields
        self.fields: dict[str, str] = {}
        self.file: IO[bytes] | None = None
        self.path: Path | None = None
        self.filename = ""
        self.size = 0
        self.digest = hashlib.sha256()
        self.head = bytearray()  # the file's first KiB, enough to tell what it is
        self.parts = 0
        self._headers: dict[bytes, bytes] = {}
        self._header_name = bytearray()
        self._header_value = bytearray()
        self._name = ""
        self._in_file = False
        self._value = bytearray()

    def callbacks(self) -> Any:
        return {"on_part_begin": self.on_part_begin, "on_header_field": self.on_header_field,
                "on_header_value": self.on_header_value, "on_header_end": self.on_header_end,
                "on_headers_finished": self.on_headers_finished, "on_part_data": self.on_part_data,
                "on_part_end": self.on_part_end}

    def on_part_begin(self) -> None:
        self._headers.clear()
        self._value.clear()
        self._in_file = False

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header_name += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def on_header_end(self) -> None:
        self._headers[bytes(self._header_name).lower()] = bytes(self._header_value)
        self._header_name.clear()
        self._header_value.clear()

    def on_headers_finished(self) -> None:
        self.parts += 1
        if self.parts > MAX_PARTS:
            raise ValidationFailed(f"the form has more than {MAX_PARTS} parts")
        _, options = parse_options_header(self._headers.get(b"content-disposition"))
        self._name = options.get(b"name", b"").decode("utf-8", "replace")
        if self._name not in self.allowed_fields:  # a misspelt `webhookurl` is said, not silently ignored
            raise ValidationFailed(f"{self._name[:64]}: unknown form field; the upload takes "
                                   f"{', '.join(sorted(self.allowed_fields))}")
        if self._name != FILE_FIELD:
            if self._name in self.fields:
                raise ValidationFailed(f"{self._name}: given more than once")
            return
        if self.file is not None:
            raise ValidationFailed("file: send exactly one file")
        self.filename = options.get(b"filename", b"").decode("utf-8", "replace")
        handle = tempfile.NamedTemporaryFile(prefix="pagemill-upload-", suffix=".part", delete=False)  # noqa: SIM115
        self.file, self.path, self._in_file = handle, Path(handle.name), True

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        chunk = data[start:end]
        if self._in_file and self.file is not None:
            self.size += len(chunk)
            if self.size > self.max_file_bytes:
                raise FileTooLarge(f"the file is larger than the {self.max_file_bytes} byte limit")
            self.digest.update(chunk)
            self.file.write(chunk)
            if len(self.head) < SNIFF_BYTES:
                self.head += chunk[:SNIFF_BYTES - len(self.head)]
                # not a PDF, an image or an office document: 415 now, not after the whole body
                if len(self.head) == SNIFF_BYTES and not plausible_office_head(bytes(self.head)):
                    sniff_media_type(bytes(self.head))
            return
        self._value += chunk
        if len(self._value) > MAX_FIELD_BYTES:
            raise ValidationFailed(f"{self._name or 'a form field'}: at most {MAX_FIELD_BYTES // 1024} KiB")

    def on_part_end(self) -> None:
        if self._in_file:
            self._in_file = False
            return
        try:
            self.fields[self._name] = self._value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationFailed(f"{self._name or 'a form field'}: not UTF-8 text") from exc

    def close(self) -> None:
        if self.file is not None:
            self.file.close()

    def discard(self) -> None:
        self.close()
        if self.path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)


async def body_chunks(request: Request, *, limit: int, idle_timeout_s: float,
                      min_bytes_per_s: float) -> AsyncIterator[bytes]:
    """The request body as it arrives: 413 past `limit` bytes, 408 when it pauses for `idle_timeout_s` or
    averages under `min_bytes_per_s` after the first `idle_timeout_s`."""
    stream = request.stream().__aiter__()
    started = time.monotonic()
    received = 0
    while True:
        try:
            chunk = await asyncio.wait_for(stream.__anext__(), timeout=idle_timeout_s)
        except StopAsyncIteration:
            return
        except TimeoutError as exc:
            raise RequestTimeout(f"the upload sent nothing for {idle_timeout_s:g} s") from exc
        except ClientDisconnect as exc:
            raise ClientGone("the client disconnected during the upload") from exc
        received += len(chunk)
        if received > limit:
            raise FileTooLarge(f"the upload is larger than the {limit} byte limit")
        elapsed = time.monotonic() - started
        if elapsed > idle_timeout_s and received < min_bytes_per_s * elapsed:
            raise RequestTimeout(f"the upload arrives at {received / elapsed:.0f} bytes/s, under the "
                                 f"{min_bytes_per_s:g} bytes/s minimum")
        if chunk:
            yield chunk


DRAIN_BYTES = 1024 * 1024  # a body declared this small is read before an answer that comes ahead of it


async def drain_small_body(request: Request, *, idle_timeout_s: float) -> None:
    """Reads and drops the body of an upload answered before its body was read (429, an invalid header), when it
    declares at most `DRAIN_BYTES`. Closed with its body unread, the connection is reset by the kernel, and a
    client still sending may lose the answer in the reset (Node: `fetch failed`). A larger or undeclared body is
    not read: its client gets the answer and `Connection: close` at once."""
    declared = request.headers.get("content-length", "")
    if not declared.isdigit() or int(declared) > DRAIN_BYTES:
        return
    with contextlib.suppress(InputError):  # the body stalls or the client leaves: answer anyway
        async for _ in body_chunks(request, limit=DRAIN_BYTES, idle_timeout_s=idle_timeout_s, min_bytes_per_s=0):
            pass


async def receive_upload(request: Request, *, max_file_bytes: int, idle_timeout_s: float,
                         min_bytes_per_s: float, allowed_fields: frozenset[str]) -> ReceivedUpload:
    """Reads a `multipart/form-data` body with one `file` part and fields among `allowed_fields`, each given
    once; raises a typed `InputError` for anything else."""
    content_type, params = parse_options_header(request.headers.get("content-type"))
    boundary = params.get(b"boundary")
    if content_type != b"multipart/form-data" or not boundary:
        raise ValidationFailed("file: Field required (send multipart/form-data with a `file` part)")
    form = _Form(max_file_bytes, allowed_fields)
    try:
        parser = MultipartParser(boundary, form.callbacks())
        batch = bytearray()
        async for chunk in body_chunks(request, limit=max_file_bytes + FORM_OVERHEAD_BYTES,
                                       idle_timeout_s=idle_timeout_s, min_bytes_per_s=min_bytes_per_s):
            batch += chunk
            if len(batch) >= BATCH_BYTES:
                await run_in_threadpool(parser.write, bytes(batch))
                batch.clear()
        if batch:
            await run_in_threadpool(parser.write, bytes(batch))
        if parser.state not in (MultipartState.END, MultipartState.BOUNDARY_PADDING) and form.parts:
            # the body ended before the closing boundary: a truncated upload, never parsed as a shorter file
            raise ValidationFailed("the multipart body ends before its closing boundary")
        parser.finalize()
    except FormParserError as exc:
        form.discard()
        raise ValidationFailed(clip(f"the multipart body cannot be read ({exc})")) from exc
    except BaseException:
        form.discard()
        raise
    form.close()
    if form.path is None:
        raise ValidationFailed("file: Field required")
    return ReceivedUpload(path=form.path, filename=form.filename, size=form.size, sha256=form.digest.hexdigest(),
                          fields=form.fields)
