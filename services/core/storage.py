"""Object storage: a local folder (default) or any S3 API. Keys are derived, so a rewrite overwrites."""

from __future__ import annotations

import itertools
import json
import os
import shutil
from pathlib import Path
from typing import Any, Protocol

from services.core.settings import Settings


def source_key(document_id: str, extension: str) -> str:
    return f"documents/{document_id}/source{extension}"


def in_document_pdf(key: str, document_id: str) -> bool:
    """True when a page's source key is its document's PDF, not a file of its own."""
    return key == source_key(document_id, ".pdf")


def pages_read_from_source(key: str, document_id: str, size_bytes: int, page_files_over_mb: float) -> bool:
    """Whether a document's pages are copied out of its stored PDF (`key`) by the page workers: a PDF up to
    `worker.page_files_over_mb` gets no file per page (services/worker/page_source.py)."""
    return in_document_pdf(key, document_id) and size_bytes <= page_files_over_mb * 1024 * 1024


def page_source_key(document_id: str, index: int, extension: str) -> str:
    return f"documents/{document_id}/pages/{index:05d}{extension}"


def page_result_key(document_id: str, index: int) -> str:
    return f"documents/{document_id}/pages/{index:05d}.json"


def page_results_key(document_id: str, first: int, last: int, deliveries: int) -> str:
    """The results of several pages of a chunk that ended together, in one object (`{"pages": [...]}`): one object
    written for them instead of one each. The first page's delivery count makes the key this delivery's own, so
    another delivery of the same pages never overwrites an object a finished page's row names."""
    return f"documents/{document_id}/pages/{first:05d}-{last:05d}.{deliveries}.json"


def page_result_in(body: dict[str, Any], index: int) -> dict[str, Any] | None:
    """The result of page `index` in a stored result object: the page's own, or one of several pages'."""
    if "pages" not in body:
        return body
    return next((page for page in body["pages"] if page.get("page_index") == index), None)


def load_page_result(store: ObjectStore, key: str, index: int,
                     read: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The stored result of page `index` under `key` (`Page.result_key`); ObjectNotFound when it is not there.
    `read`: the objects already read, by key, filled as it reads (the pages of a chunk share one object)."""
    body = read.get(key) if read is not None else None
    if body is None:
        body = json.loads(store.get(key))
        if read is not None:
            read[key] = body
    result = page_result_in(body, index)
    if result is None:
        raise ObjectNotFound(f"{key}: page {index}")
    return result


# The assembled document, one object per format (`?format=` of the result endpoint), and their media types.
# The last three are the answers of the model tasks (services/core/document_tasks.py).
RESULT_FILES = {"markdown": "document.md", "json": "document.json", "html": "document.html",
                "latex": "document.tex", "chunks": "chunks.json", "extraction": "extraction.json",
                "translation": "translation.md", "summary": "summary.md"}
RESULT_MEDIA_TYPES = {"markdown": "text/markdown; charset=utf-8", "json": "application/json",
                      "html": "text/html; charset=utf-8", "latex": "application/x-tex; charset=utf-8",
                      "chunks": "application/json", "extraction": "application/json",
                      "translation": "text/markdown; charset=utf-8", "summary": "text/markdown; charset=utf-8"}

# The standalone HTML result shows untrusted text: no script, no fetch, no form, styles and fonts inline only.
# Its <meta> says it wherever the file is opened; the gateway sends it as a header too.
RESULT_HTML_CSP = ("default-src 'none'; style-src 'unsafe-inline'; font-src data:; img-src data:; base-uri 'none';"
                   " form-action 'none'")


def document_result_key(document_id: str, fmt: str) -> str:
    return f"documents/{document_id}/{RESULT_FILES[fmt]}"


def page_image_key(document_id: str, index: int, longest_side: int) -> str:
    """A page's image as the gateway rendered it for showing, kept (under the document's prefix, so deleted
    with it) so that it is decoded once per size, not once per request."""
    return f"documents/{document_id}/page-images/{index:05d}-{longest_side}.png"


# A figure's image name: its element's id, so a reassembly overwrites it (`p3-e5.png`).
FIGURE_NAME = r"^p[0-9]{1,6}-e[0-9]{1,6}\.(png|jpg)$"
FIGURE_MEDIA_TYPES = {"png": "image/png", "jpg": "image/jpeg"}


def figure_key(document_id: str, name: str) -> str:
    """A figure's image: `documents/{id}/figures/{name}`, under the document's prefix (deleted with it)."""
    return f"documents/{document_id}/figures/{name}"


def document_prefix(document_id: str) -> str:
    return f"documents/{document_id}/"


class ObjectNotFound(KeyError):
    pass


class ObjectStore(Protocol):
    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None: ...
    def put_file(self, key: str, path: Path, content_type: str = "application/octet-stream") -> None: ...
    def get(self, key: str) -> bytes: ...
    def exists(self, key: str) -> bool: ...
    def copy(self, source: str, destination: str) -> None: ...
    def delete_prefix(self, prefix: str) -> int: ...
    def presigned_url(self, key: str, expires_s: int) -> str | None: ...
    def check(self) -> None: ...


class LocalStore:
    """A folder on disk. Writes go to a temporary file first so a reader never sees half an object."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root.resolve()
        self._writes = itertools.count()

    def _path(self, key: str) -> Path:
        # Keys are relative, slash-separated and never climb: checked lexically (no realpath per call).
        parts = key.split("/")
        if key.startswith("/") or any(part in ("", ".", "..") for part in parts[:-1]) or parts[-1] in (".", ".."):
            raise ValueError(f"not a valid object key: {key!r}")
        return self.root.joinpath(*parts)

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        path = self._path(key)
        # A name no other writer can pick (this process, a counter): no random-name retries, no extra files.
        tmp = path.with_name(f".tmp-{os.getpid()}-{next(self._writes)}-{path.name}")
        try:
            handle = tmp.open("wb")
        except FileNotFoundError:  # first object under this prefix
            path.parent.mkdir(parents=True, exist_ok=True)
            handle = tmp.open("wb")
        with handle:
            handle.write(data)
        os.replace(tmp, path)

    def put_file(self, key: str, path: Path, content_type: str = "application/octet-stream") -> None:
        """Copies a file in by chunks: a large upload never sits in memory."""
        target = self._path(key)
        tmp = target.with_name(f".tmp-{os.getpid()}-{next(self._writes)}-{target.name}")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, tmp)
        os.replace(tmp, target)

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError as exc:
            raise ObjectNotFound(key) from exc

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def copy(self, source: str, destination: str) -> None:
        self.put(destination, self.get(source))

    def delete_prefix(self, prefix: str) -> int:
        path = self._path(prefix)
        if path.is_dir():
            count = sum(1 for p in path.rglob("*") if p.is_file())
            shutil.rmtree(path, ignore_errors=True)
            return count
        if path.is_file():
            path.unlink(missing_ok=True)
            return 1
        return 0

    def presigned_url(self, key: str, expires_s: int) -> str | None:
        return None

    def check(self) -> None:
        if not os.access(self.root, os.W_OK):
            raise OSError(f"store folder is not writable: {self.root}")


class S3Store:
    """Any S3 API through boto3 (AWS, MinIO, moto's server)."""

    def __init__(self, bucket: str, *, prefix: str = "", endpoint_url: str | None = None,
                 region: str = "us-east-1", create_bucket: bool = False) -> None:
        import boto3
        from botocore.config import Config

        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.client: Any = boto3.client(
            "s3", endpoint_url=endpoint_url, region_name=region,
            # SigV4: presigned URLs that every AWS region and S3 API accepts (SigV2 is deprecated).
            config=Config(retries={"max_attempts": 5, "mode": "standard"}, connect_timeout=5, read_timeout=60,
                          signature_version="s3v4"),
        )
        if create_bucket:
            try:
                self.client.head_bucket(Bucket=bucket)
            except self.client.exceptions.ClientError:
                self.client.create_bucket(Bucket=bucket)

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        self.client.put_object(Bucket=self.bucket, Key=self.prefix + key, Body=data, ContentType=content_type)

    def put_file(self, key: str, path: Path, content_type: str = "application/octet-stream") -> None:
        """boto3's managed transfer: a multipart upload above 16 MiB, two 8 MiB parts in memory at most."""
        from boto3.s3.transfer import TransferConfig

        config = TransferConfig(multipart_threshold=16 * 1024 * 1024, multipart_chunksize=8 * 1024 * 1024,
                                max_concurrency=2)
        self.client.upload_file(str(path), self.bucket, self.prefix + key, ExtraArgs={"ContentType": content_type},
                                Config=config)

    def get(self, key: str) -> bytes:
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self.prefix + key)
        except self.client.exceptions.NoSuchKey as exc:
            raise ObjectNotFound(key) from exc
        return bytes(response["Body"].read())

    def exists(self, key: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=self.prefix + key)
        except self.client.exceptions.ClientError:
            return False
        return True

    def copy(self, source: str, destination: str) -> None:
        """A server-side copy: the bytes never pass through this process."""
        try:
            self.client.copy_object(Bucket=self.bucket, Key=self.prefix + destination,
                                    CopySource={"Bucket": self.bucket, "Key": self.prefix + source})
        except self.client.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
                raise ObjectNotFound(source) from exc
            raise

    def delete_prefix(self, prefix: str) -> int:
        deleted = 0
        paginator = self.client.get_paginator("list_objects_v2")
        for listing in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix + prefix):
            keys = [{"Key": item["Key"]} for item in listing.get("Contents", [])]
            if keys:
                self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": keys, "Quiet": True})
                deleted += len(keys)
        return deleted

    def presigned_url(self, key: str, expires_s: int) -> str | None:
        return str(self.client.generate_presigned_url(
            "get_object", Params={"Bucket": self.bucket, "Key": self.prefix + key}, ExpiresIn=expires_s
        ))

    def check(self) -> None:
        self.client.head_bucket(Bucket=self.bucket)


_stores: dict[tuple[Any, ...], ObjectStore] = {}


def get_store(settings: Settings) -> ObjectStore:
    """One store per configuration per process (boto3 clients are thread-safe and costly to build)."""
    cfg = settings.storage
    if cfg.kind == "s3":
        key: tuple[Any, ...] = ("s3", cfg.bucket, cfg.prefix, cfg.endpoint_url, cfg.region)
        if key not in _stores:
            _stores[key] = S3Store(cfg.bucket, prefix=cfg.prefix, endpoint_url=cfg.endpoint_url,
                                   region=cfg.region, create_bucket=cfg.create_bucket)
    else:
        key = ("local", str(settings.resolved_storage_root()))
        if key not in _stores:
            _stores[key] = LocalStore(settings.resolved_storage_root())
    return _stores[key]
