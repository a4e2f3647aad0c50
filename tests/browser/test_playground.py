"""The web playground in headless Chromium against a real platform (cpu engine): key, upload, live progress to
100 %, the result beside the page image, element boxes, downloads, math, listing and delete; no console errors
and no request off the machine. The screenshot is kept in .artifacts/ (PAGEMILL_TEST_ARTIFACTS)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.browser.conftest import ARTIFACTS, Watched
from tests.harness import Platform
from tests.pdfs import FIGURE_CAPTION, figure_pdf, form_pdf, make_pdf, repeat_pages

pytestmark = pytest.mark.slow

# Records every value the progress cell of each row shows, as the page changes it.
WATCH_PROGRESS = """() => {
  window.progressSeen = [];
  new MutationObserver(() => {
    for (const cell of document.querySelectorAll('#documents tbody tr .pct')) {
      const last = window.progressSeen[window.progressSeen.length - 1];
      if (cell.textContent && cell.textContent !== last) window.progressSeen.push(cell.textContent);
    }
  }).observe(document.querySelector('#documents tbody'), {subtree: true, childList: true, characterData: true});
}"""


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, redis_server: str) -> Iterator[Platform]:
    workdir = tmp_path_factory.mktemp("playground")
    platform = Platform(workdir=workdir, database_url=f"sqlite:///{workdir / 'pagemill.db'}",
                        redis_base_url=redis_server, engine="cpu")
    platform.start(concurrency=2)
    yield platform
    platform.stop()


def box_geometry_matches(page: Any, entry: dict[str, Any]) -> None:
    """Each drawn box sits where its bbox (PDF points, top-left origin) falls on the displayed image."""
    image = page.locator("#page-image").bounding_box()
    boxes = page.locator("#boxes .bbox")
    with_box = [e for e in entry["elements"] if e.get("bbox")]
    assert boxes.count() == len(with_box)
    for i, element in enumerate(with_box):
        drawn = boxes.nth(i).bounding_box()
        x0, y0, x1, y1 = element["bbox"]
        assert abs(drawn["x"] - (image["x"] + x0 / entry["width"] * image["width"])) < 2
        assert abs(drawn["y"] - (image["y"] + y0 / entry["height"] * image["height"])) < 2
        assert abs(drawn["width"] - (x1 - x0) / entry["width"] * image["width"]) < 3


def test_upload_watch_progress_view_download_and_delete(platform: Platform, watched: Watched, corpus: Path,
                                                        tmp_path: Path) -> None:
    # 15 pages (the corpus document's 5, three times): enough parsing for the progress to be seen moving even
    # when the machine is busy and the event stream connects late.
    source = tmp_path / "multi_page.pdf"
    source.write_bytes(repeat_pages(corpus / "dev" / "docling_multi_page" / "multi_page.pdf", 15))
    page: Any = watched.page
    page.goto(f"{platform.url}/playground")
    page.fill("#api-key", platform.api_key or "")
    page.check("#remember-key")
    page.click("#save-key")
    page.wait_for_selector("#list-empty:not([hidden])")
    page.evaluate(WATCH_PROGRESS)
    page.set_input_files("#file-input", str(source))
    row = page.locator("#documents tbody tr").first
    row.locator(".pct", has_text="100 %").wait_for(timeout=180_000)
    page.wait_for_selector('#documents tbody tr[data-status="succeeded"]', timeout=60_000)
    seen = page.evaluate("window.progressSeen")
    assert seen[0] == "0 %" and seen[-1] == "100 %" and len(seen) >= 3, seen  # it moved page by page
    document_id = row.get_attribute("data-id")
    assert row.locator(".file").inner_text() == "multi_page.pdf"

    row.locator("button.open").click()
    page.wait_for_selector("#viewer:not([hidden])")
    page.wait_for_function("() => document.querySelector('#page-image').naturalWidth > 0")
    assert page.locator("#page-label").inner_text() == "page 1 of 15"
    with platform.client() as client:
        body = client.get(f"/v1/documents/{document_id}/result", params={"format": "json"}).json()
        image = client.get(f"/v1/documents/{document_id}/pages/1/image")
    assert image.status_code == 200 and image.content.startswith(b"\x89PNG")
    first_words = body["pages"][0]["markdown"].split()[:3]
    assert first_words and all(w.strip("#*") in page.locator("#view-html").inner_text() for w in first_words[1:])
    entry = body["pages"][0]
    if entry.get("elements") and entry.get("width"):
        box_geometry_matches(page, entry)
    else:  # a server without the element tree: the overlay draws nothing and says so
        assert page.locator("#boxes .bbox").count() == 0
        assert page.locator("#box-note").inner_text() == "no element boxes for this page"
    page.click("#tab-markdown")
    assert page.locator("#view-markdown").inner_text().strip() == entry["markdown"].strip()
    page.click("#next-page")
    page.wait_for_function("() => document.querySelector('#page-image').dataset.page === '2'")
    assert page.locator("#page-label").inner_text() == "page 2 of 15"

    page.click("#tab-html")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "playground.png"), full_page=True)

    formats = [a.get_attribute("data-format") for a in page.locator("#downloads a").all()]
    assert {"markdown", "json"} <= set(formats)
    for fmt in formats:
        with page.expect_download() as info:
            page.click(f'#downloads a[data-format="{fmt}"]')
        saved = tmp_path / info.value.suggested_filename
        info.value.save_as(saved)
        assert saved.name.startswith("multi_page.")
        expected = httpx.get(f"{platform.url}/v1/documents/{document_id}/result", params={"format": fmt},
                             headers={"Authorization": f"Bearer {platform.api_key}"}, timeout=30)
        if fmt in ("json", "chunks"):
            assert json.loads(saved.read_text()) == expected.json()
        else:
            assert saved.read_text() == expected.text

    # the key was remembered: a reload lists the document again without typing it
    page.reload()
    page.wait_for_selector(f'#documents tbody tr[data-id="{document_id}"]')
    page.locator(f'tr[data-id="{document_id}"] button.remove').click()
    page.locator(f'tr[data-id="{document_id}"] button.remove', has_text="Really delete?").click()
    page.wait_for_selector(f'tr[data-id="{document_id}"]', state="detached")
    with platform.client() as client:
        assert client.get(f"/v1/documents/{document_id}").status_code == 404
    watched.assert_clean()


def test_math_is_typeset_and_document_html_is_sanitized(platform: Platform, watched: Watched) -> None:
    page: Any = watched.page
    page.goto(f"{platform.url}/playground/")
    rendered = page.evaluate("""async () => {
      const { showResult } = await import('./render.js');
      const target = document.createElement('div');
      document.body.append(target);
      showResult(target, { markdown: '# Title\\n\\nInline $x^2$ here.\\n\\n$$\\\\int_0^1 f(x)\\\\,dx$$\\n\\n' +
        '<table><tr><td onclick="alert(1)">a<script>window.hacked=1</script></td></tr></table>' +
        '\\n\\n[link](javascript:alert(1))' });
      return { katex: target.querySelectorAll('.katex').length,
               display: target.querySelectorAll('.katex-display').length,
               html: target.innerHTML, hacked: window.hacked === 1 };
    }""")
    assert rendered["katex"] == 2 and rendered["display"] == 1
    assert "onclick" not in rendered["html"] and "<script" not in rendered["html"] and not rendered["hacked"]
    assert "href=\"javascript" not in rendered["html"] and "<td>a</td>" in rendered["html"]
    # The page's Content-Security-Policy refused even to compile the handler while the sanitizer parsed it:
    # the one console error here is that refusal (and a test that the CSP is in force).
    refused = [e for e in watched.errors if "inline event handler violates" in e and "has been blocked" in e]
    assert refused and len(refused) == len(watched.errors), watched.errors
    watched.errors.clear()
    watched.assert_clean()


def test_a_dropped_file_is_uploaded_and_followed_to_the_end(platform: Platform, watched: Watched,
                                                            corpus: Path) -> None:
    source = corpus / "dev" / "docling_code_and_formula" / "code_and_formula.pdf"
    page: Any = watched.page
    page.goto(f"{platform.url}/playground/")
    page.fill("#api-key", platform.api_key or "")
    page.click("#save-key")
    page.wait_for_selector("#key-status:has-text('key set')")
    page.fill("#pages", "2")
    # a real drop event carrying the file, as the browser makes one when a file is dragged in
    transfer = page.evaluate_handle("""async (bytes) => {
      const transfer = new DataTransfer();
      transfer.items.add(new File([new Uint8Array(bytes)], 'code_and_formula.pdf', { type: 'application/pdf' }));
      return transfer;
    }""", list(source.read_bytes()))
    page.dispatch_event("#drop-zone", "dragover", {"dataTransfer": transfer})
    assert "over" in (page.get_attribute("#drop-zone", "class") or "")
    page.dispatch_event("#drop-zone", "drop", {"dataTransfer": transfer})
    row = page.locator("#documents tbody tr", has_text="code_and_formula.pdf").first
    row.locator(".pct", has_text="100 %").wait_for(timeout=120_000)
    # every page done: the status follows once the document is assembled
    page.locator('#documents tbody tr[data-status="succeeded"]', has_text="code_and_formula.pdf").wait_for(
        timeout=60_000)
    with platform.client() as client:
        state = client.get(f"/v1/documents/{row.get_attribute('data-id')}").json()
    assert state["pages_total"] == 1 and state["filename"] == "code_and_formula.pdf"
    watched.assert_clean()


def test_entities_in_a_documents_markdown_show_as_the_characters_they_stand_for(platform: Platform,
                                                                                watched: Watched,
                                                                                tmp_path: Path) -> None:
    """The cpu engine writes a `<` that could open a tag as `&lt;`; the viewer shows `<`, not `&lt;` (it escaped
    the `&` of the entity a second time), while a bare `&` and the document's HTML stay as they were."""
    source = tmp_path / "tags.pdf"
    source.write_bytes(make_pdf(lines=["Tags like <script> and <b> stay text, said AT&T & co."]))
    document_id = platform.upload(source)["id"]
    assert platform.wait_done(document_id)["status"] == "succeeded"
    markdown = platform.result(document_id, "json")["pages"][0]["markdown"]
    assert "&lt;script>" in markdown and "AT&T & co." in markdown  # what the engine wrote: entities
    page: Any = watched.page
    page.goto(f"{platform.url}/playground/")
    page.fill("#api-key", platform.api_key or "")
    page.click("#save-key")
    page.locator(f'#documents tbody tr[data-id="{document_id}"] button.open').click()
    page.wait_for_selector("#viewer:not([hidden])")
    shown = page.locator("#view-html").inner_text()
    assert "Tags like <script> and <b> stay text, said AT&T & co." in shown, shown
    assert "&lt;" not in shown and page.locator("#view-html script, #view-html b").count() == 0
    assert page.locator("#view-markdown").inner_text().strip() == markdown.strip()  # the source, as written
    watched.assert_clean()


def test_a_kept_figure_is_shown_and_form_checkboxes_are_visible(platform: Platform, watched: Watched,
                                                                tmp_path: Path) -> None:
    figure, form = tmp_path / "figure.pdf", tmp_path / "form.pdf"
    figure.write_bytes(figure_pdf())
    form.write_bytes(form_pdf())
    figure_id, form_id = platform.upload(figure)["id"], platform.upload(form)["id"]
    for document_id in (figure_id, form_id):
        assert platform.wait_done(document_id)["status"] == "succeeded"
    page: Any = watched.page
    page.goto(f"{platform.url}/playground/")
    page.fill("#api-key", platform.api_key or "")
    page.click("#save-key")
    page.locator(f'#documents tbody tr[data-id="{figure_id}"] button.open').click()
    page.wait_for_selector("#viewer:not([hidden])")
    image = page.locator("#view-html figure.pm-figure img")
    image.wait_for(timeout=30_000)
    page.wait_for_function("() => document.querySelector('#view-html figure.pm-figure img').naturalWidth > 0")
    assert page.evaluate("() => document.querySelector('#view-html figure.pm-figure img').naturalWidth") == 600
    assert FIGURE_CAPTION in page.locator("#view-html figure.pm-figure figcaption").inner_text()
    page.locator(f'#documents tbody tr[data-id="{form_id}"] button.open').click()
    page.locator("#view-html .pm-check", has_text="newsletter").wait_for(timeout=30_000)
    shown = page.locator("#view-html").inner_text()
    assert "\u2612 agree" in shown and "\u2610 newsletter" in shown, shown
    watched.assert_clean()


def _tilted_scan(path: Path) -> None:
    """A scan turned 6°: OCR still reads it, but the engine doubts every block of it (the tilt breaks the line
    grouping recognition scores do not see)."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (1000, 520), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=40)
    for index, line in enumerate(["The quarterly report shows revenue", "growing in every region we serve,",
                                  "while costs stayed close to plan.", "Shipping times fell by two days."]):
        draw.text((60, 50 + 85 * index), line, fill="black", font=font)
    image.rotate(6.0, expand=True, fillcolor="white", resample=Image.Resampling.BICUBIC).save(path)


def shading_matches(page: Any, entry: dict[str, Any], threshold: float) -> int:
    """Each drawn box is shaded exactly when its element's own confidence is under the threshold; the count."""
    boxes = page.locator("#boxes .bbox")
    with_box = [e for e in entry["elements"] if e.get("bbox")]
    assert boxes.count() == len(with_box) > 0
    for i, element in enumerate(with_box):
        low = element.get("confidence") is not None and element["confidence"] < threshold
        assert ("low-confidence" in (boxes.nth(i).get_attribute("class") or "").split()) == low, element
    return sum(1 for e in with_box if e.get("confidence") is not None and e["confidence"] < threshold)


def test_elements_under_the_review_threshold_are_shaded(platform: Platform, watched: Watched,
                                                        tmp_path: Path) -> None:
    tilted, clean = tmp_path / "tilted.png", tmp_path / "clean.pdf"
    _tilted_scan(tilted)
    clean.write_bytes(make_pdf(lines=["A clean digital page the engine reads surely."]))
    ids = {name: platform.upload(path)["id"] for name, path in (("tilted", tilted), ("clean", clean))}
    for document_id in ids.values():
        assert platform.wait_done(document_id)["status"] == "succeeded"
    page: Any = watched.page
    page.goto(f"{platform.url}/playground/")
    page.fill("#api-key", platform.api_key or "")
    page.click("#save-key")
    shaded = {}
    for name, document_id in ids.items():
        with platform.client() as client:
            state = client.get(f"/v1/documents/{document_id}").json()
        entry = platform.result(document_id, "json")["pages"][0]
        page.locator(f'#documents tbody tr[data-id="{document_id}"] button.open').click()
        page.wait_for_selector(f'#boxes[data-document="{document_id}"] .bbox')
        shaded[name] = shading_matches(page, entry, state["needs_review_below"])
        assert ("(shaded)" in page.locator("#box-note").inner_text()) == (shaded[name] > 0)
        assert state["pages_needing_review"] == (1 if entry["needs_review"] else 0)
    assert shaded["tilted"] > 0 and shaded["clean"] == 0, shaded
    watched.assert_clean()
