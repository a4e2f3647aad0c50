"""Reading uploads: media types by magic bytes, page selections, metadata, render scale."""

from __future__ import annotations

import pytest

from services.core.errors import EmptyDocument, PageTooLarge, UnsupportedMediaType, ValidationFailed
from services.core.pdf import JPEG, PDF, PNG, TIFF, WEBP, render_scale, sniff_media_type
from services.gateway.documents.service import parse_metadata, parse_page_selection


@pytest.mark.parametrize(("head", "expected"), [
    (b"%PDF-1.4\n", PDF),
    (b"\xef\xbb\xbfjunk before the header %PDF-1.7", PDF),
    (b"\x89PNG\r\n\x1a\n....", PNG),
    (b"\xff\xd8\xff\xe0..JFIF", JPEG),
    (b"II*\x00\x08\x00", TIFF),
    (b"MM\x00*\x00\x00", TIFF),
    (b"RIFF\x10\x00\x00\x00WEBPVP8 ", WEBP),
])
def test_media_type_comes_from_the_bytes(head: bytes, expected: str) -> None:
    assert sniff_media_type(head) == expected


def test_unknown_and_empty_files() -> None:
    with pytest.raises(UnsupportedMediaType):
        sniff_media_type(b"GIF89a")
    with pytest.raises(UnsupportedMediaType):
        sniff_media_type(b" " * 2000 + b"%PDF-1.4")  # a header beyond the first KiB is not a PDF header
    with pytest.raises(EmptyDocument):
        sniff_media_type(b"")


@pytest.mark.parametrize(("spec", "count", "expected"), [
    (None, 3, [1, 2, 3]),
    ("", 2, [1, 2]),
    ("1-3,7", 9, [1, 2, 3, 7]),
    (" 7 , 1-2 ,2", 9, [1, 2, 7]),
    ("4-4", 4, [4]),
])
def test_page_selection(spec: str | None, count: int, expected: list[int]) -> None:
    assert parse_page_selection(spec, count) == expected


@pytest.mark.parametrize("spec", ["0", "3-1", "1-10", "a", "1,,2", "-3", "1-2-3"])
def test_bad_page_selection(spec: str) -> None:
    with pytest.raises(ValidationFailed):
        parse_page_selection(spec, 9)


def test_metadata_must_be_a_small_json_object() -> None:
    assert parse_metadata('{"a": [1, 2]}') == {"a": [1, 2]}
    assert parse_metadata(None) == {} and parse_metadata("  ") == {}
    for bad in ("[]", "1", "{", '"x"', '{"k": "' + "x" * 20000 + '"}'):
        with pytest.raises(ValidationFailed):
            parse_metadata(bad)


def test_render_scale_respects_the_longest_side_and_the_pixel_cap() -> None:
    assert render_scale(612, 792, longest_side=1288, max_pixels=10**9, max_side_pt=14400) == pytest.approx(1288 / 792)
    capped = render_scale(612, 792, longest_side=100_000, max_pixels=4_000_000, max_side_pt=14400)
    assert 612 * 792 * capped**2 == pytest.approx(4_000_000)
    with pytest.raises(PageTooLarge):
        render_scale(595, 2**31, longest_side=1288, max_pixels=10**9, max_side_pt=14400)
    with pytest.raises(PageTooLarge):
        render_scale(0, 792, longest_side=1288, max_pixels=10**9, max_side_pt=14400)


@pytest.mark.parametrize("spec", ["9" * 5000, "1-" + "9" * 5000, "1," * 3000 + "1"])
def test_huge_page_selections_are_validation_errors(spec: str) -> None:
    # 5,000 digits pass Python's int-string limit (4,300): a ValueError that used to answer 500
    with pytest.raises(ValidationFailed):
        parse_page_selection(spec, 9)


@pytest.mark.parametrize("raw", [
    '{"a": ' + "[" * 5000 + "]" * 5000 + "}",  # RecursionError inside json.loads
    '{"a": ' + "[" * 40 + "]" * 40 + "}",  # parses, but deeper than the documented bound
    '{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}', '{"a": 1e999}', '{"a": -1e999}',
    '{"a": ' + "9" * 5000 + "}",  # int-string limit inside the JSON
])
def test_metadata_that_cannot_come_back_untouched_is_refused(raw: str) -> None:
    with pytest.raises(ValidationFailed):
        parse_metadata(raw)


def test_metadata_within_the_bounds_comes_back_as_sent() -> None:
    nested = '{"a": ' + "[" * 30 + "1.5e300" + "]" * 30 + "}"
    value = parse_metadata(nested)["a"]
    for _ in range(30):
        value = value[0]
    assert value == 1.5e300
