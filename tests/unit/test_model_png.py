"""The PNG a model gets: written with one filter for every row, it decodes to exactly the pixels rendered."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from services.core.pdf import png_bytes, png_up_filtered, render_pdf_page
from tests.pdfs import placed_text_pdf


def _pixels(data: bytes) -> tuple[str, np.ndarray]:
    with Image.open(io.BytesIO(data)) as image:
        image.load()
        return image.mode, np.asarray(image)


@pytest.mark.parametrize("mode", ["RGB", "L", "RGBA", "P", "1"])
@pytest.mark.parametrize("size", [(1, 1), (53, 37), (1, 9), (9, 1)])
def test_every_mode_and_shape_decodes_to_the_same_pixels(mode: str, size: tuple[int, int]) -> None:
    noise = np.random.default_rng(7).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    image = Image.fromarray(noise, "RGB").convert(mode)
    decoded_mode, pixels = _pixels(png_up_filtered(image))
    assert decoded_mode == mode
    assert np.array_equal(pixels, np.asarray(image))


def test_a_rendered_page_is_the_same_image_as_pillows_png_at_about_its_size() -> None:
    page = render_pdf_page(placed_text_pdf([("A rendered page of text", 72, 700, 12), ("and a second line", 72, 680,
                                                                                            10)]), longest_side=800)
    ours, pillows = png_up_filtered(page), png_bytes(page, compress_level=1)
    assert np.array_equal(_pixels(ours)[1], _pixels(pillows)[1])
    assert np.array_equal(_pixels(ours)[1], np.asarray(page))
    assert len(ours) < 1.5 * len(pillows)
