"""One page of a corpus file through an engine, as the worker would hand it over."""

from __future__ import annotations

from pathlib import Path

from services.core.pdf import PDF, split_pdf
from services.worker.engines.base import Engine, PageInput, PageOutput

IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".webp": "image/webp", ".tif": "image/tiff"}


def parse_file(engine: Engine, path: Path, page: int = 1) -> PageOutput:
    """Page `page` (1-based) of a PDF, or the image, parsed by `engine`."""
    data = path.read_bytes()
    if path.suffix == ".pdf":
        return engine.parse(PageInput("test", page - 1, PDF, next(split_pdf(data, [page]))))
    return engine.parse(PageInput("test", 0, IMAGE_TYPES[path.suffix], data))
