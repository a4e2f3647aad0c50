"""What a stand-in generative model (behind the Engine interface, where a GPU model cannot run) returns for one
raw answer: the answer read through a real preset's parser into the `PageOutput` the vllm engine would build."""

from __future__ import annotations

import struct

from services.worker.engines.base import PageInput, PageOutput
from services.worker.engines.vllm.presets import Preset


def image_size(page: PageInput) -> tuple[int, int]:
    """The width and height of the page's PNG, read from its IHDR chunk."""
    assert page.image is not None
    width, height = struct.unpack(">II", page.image[16:24])
    return width, height


def answered_page(preset: Preset, page: PageInput, raw: str, *, engine: str, model: str,
                  finish_reason: str = "stop") -> PageOutput:
    parsed = preset.parse(raw)
    width, height = image_size(page)
    return PageOutput(markdown=parsed.markdown, engine=engine, model=model, finish_reason=finish_reason,
                      prompt_tokens=100, completion_tokens=len(raw.split()), rotation=page.rotation,
                      width_px=width, height_px=height,
                      details={"rotation_valid": parsed.rotation_valid,
                               "rotation_correction": parsed.rotation_correction})
