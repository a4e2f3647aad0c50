"""Every dev-corpus document's outputs checked by the real tools: document.html in headless Chromium (no console
errors, no KaTeX error nodes, every table visible, a screenshot kept), document.tex compiled by XeLaTeX and by
LuaLaTeX into a PDF that holds the document's words, and the chunk invariants — plus a PDF that tries to inject
script.

The pages come from the cpu engine in this process, once per session. Artifacts (the outputs of every case, the
compiled PDFs, a screenshot) are kept in test-artifacts/outputs/ (git-ignored). Chromium and TeX Live come from
Debian (`make browser-tools tex-tools`); without them those tests skip and say which target installs them.
"""

from __future__ import annotations

import json
import re
import shutil
import unicodedata
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pagemill_eval.corpus import load_cases
from services.core.elements import FURNITURE, ElementType
from services.core.settings import Settings
from services.results.render import typeset
from services.results.render.derive import RenderPage, document_pages
from services.results.render.formats import render_document
from services.runner import parse_locally
from tests.tex import ENGINES, compile_tex, pdf_text, tex_errors
from tests.unit.test_render_chunks import check_invariants

pytestmark = pytest.mark.slow

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "outputs"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WORD = re.compile(r"\w{3,}")
SCREENSHOT_CASE = "olmocr_math_2503_04086"  # formulas, inline and displayed


@dataclass(slots=True)
class Outputs:
    case_id: str
    pages: list[RenderPage]
    files: dict[str, Path]
    bodies: dict[str, bytes]


def _render(case_id: str, data: bytes, settings: Settings) -> Outputs:
    result = parse_locally(data, settings, engine_name="cpu")
    body: dict[str, Any] = {"id": case_id, "filename": case_id, "pages": result.pages}
    rendered = render_document(result.pages, body, settings)
    folder = ARTIFACTS / case_id
    folder.mkdir(parents=True, exist_ok=True)
    names = {"markdown": "document.md", "json": "document.json", "html": "document.html", "latex": "document.tex",
             "chunks": "chunks.json"}
    files = {}
    for fmt, content in rendered.bodies.items():
        files[fmt] = folder / names[fmt]
        files[fmt].write_bytes(content)
    return Outputs(case_id, document_pages(result.pages), files, rendered.bodies)


@pytest.fixture(scope="session")
def corpus_outputs(corpus: Path) -> list[Outputs]:
    settings = Settings()
    return [_render(case.case_id, case.input_path.read_bytes(), settings) for case in load_cases(corpus / "dev")]


def hostile_pdf() -> bytes:
    """A one-page PDF whose text is markup and script, with a javascript: link and a JavaScript open action."""
    lines = ["<script>alert('text')</script>", "<img src=x onerror=alert(1)>", "javascript:alert(document.cookie)",
             "[click me](javascript:alert(2))", '<a href="javascript:alert(3)">a link</a>', "Ordinary closing words."]
    content = "BT /F1 12 Tf 72 720 Td 16 TL " + " ".join(
        "(" + line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ") '" for line in lines) + " ET"
    stream = zlib.compress(content.encode("latin-1"))
    objects = [
        "<< /Type /Catalog /Pages 2 0 R /OpenAction << /S /JavaScript /JS (app.alert\\(1\\)) >> >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >>"
        " /Annots [6 0 R] >>",
        f"<< /Length {len(stream)} /Filter /FlateDecode >>",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        "<< /Type /Annot /Subtype /Link /Rect [72 620 300 640] /Border [0 0 0]"
        " /A << /S /URI /URI (javascript:alert\\(4\\)) >> >>",
    ]
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{n} 0 obj\n{body}\n".encode("latin-1")
        if n == 4:
            out += b"stream\n" + stream + b"\nendstream\n"
        out += b"endobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def words_of(pages: list[RenderPage]) -> set[str]:
    words: set[str] = set()
    for page in pages:
        for element in page.elements:
            if element.type in FURNITURE or element.type is ElementType.FORMULA:
                continue
            # Inline math is typeset, not text: the words are the Markdown's outside `$…$` (a table's its text).
            source = element.text if element.type is ElementType.TABLE else (element.markdown or element.text)
            text = re.sub(r"\$[^$]*\$", " ", source)
            words |= set(WORD.findall(unicodedata.normalize("NFKC", text).casefold()))
    return words


# --- chunks -------------------------------------------------------------------------------------------------

def test_chunk_invariants_on_every_corpus_document(corpus_outputs: list[Outputs]) -> None:
    assert len(corpus_outputs) >= 30
    for outputs in corpus_outputs:
        check_invariants(outputs.pages, json.loads(outputs.bodies["chunks"]))


def test_every_document_html_is_html5_without_parse_errors(corpus_outputs: list[Outputs]) -> None:
    html5lib = pytest.importorskip("html5lib", reason="html5lib is missing: `make install`")
    for outputs in corpus_outputs:
        parser = html5lib.HTMLParser(strict=True)  # raises on the first WHATWG parse error
        parser.parse(outputs.bodies["html"].decode())


# --- Chromium -----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser() -> Any:
    if CHROMIUM is None:
        pytest.skip("no chromium on PATH: `make browser-tools` installs Debian's chromium")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is missing: `make install`")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


def open_html(browser: Any, path: Path) -> tuple[Any, list[str], list[str]]:
    page = browser.new_page(viewport={"width": 1200, "height": 900}, java_script_enabled=True)
    errors: list[str] = []
    dialogs: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    # Standalone: nothing is fetched beyond the file itself (fonts are data: URLs), so it renders offline.
    page.on("request", lambda request: None if request.url.startswith(("file:", "data:"))
            else errors.append(f"fetched {request.url}"))
    page.goto(path.as_uri(), wait_until="load")
    page.evaluate("document.fonts.ready.then(() => true)")
    return page, errors, dialogs


def test_every_document_html_renders_cleanly_in_chromium(browser: Any, corpus_outputs: list[Outputs]) -> None:
    typeset_count = 0
    for outputs in corpus_outputs:
        page, errors, dialogs = open_html(browser, outputs.files["html"])
        try:
            where = outputs.case_id
            assert errors == [] and dialogs == [], (where, errors, dialogs)
            assert page.evaluate("document.compatMode") == "CSS1Compat", where  # standards mode: HTML5
            assert page.locator(".katex-error").count() == 0, where
            assert page.evaluate("document.scripts.length") == 0, where
            sections = page.locator("section[data-page]")
            assert sections.count() == len(outputs.pages), where
            assert page.locator("[data-type]:not([data-bbox])").count() == 0, where
            tables = page.locator("table")
            assert tables.count() == sum(e.type is ElementType.TABLE for p in outputs.pages for e in p.elements)
            for n in range(tables.count()):
                box = tables.nth(n).bounding_box()
                assert tables.nth(n).is_visible() and box and box["width"] > 0 and box["height"] > 0, (where, n)
            if typeset.available():
                typeset_count += page.locator(".katex").count()
            if outputs.case_id == SCREENSHOT_CASE:
                shot = ARTIFACTS / "screenshot.png"
                page.screenshot(path=str(shot))
                assert shot.stat().st_size > 10_000
        finally:
            page.close()
    if typeset.available():
        assert typeset_count >= 20, "the corpus's formulas are typeset by KaTeX"


def test_a_pdf_cannot_inject_script_or_markup(browser: Any, corpus: Path) -> None:
    settings = Settings()
    hostile = _render("hostile", hostile_pdf(), settings)
    link_case = corpus / "bad" / "injection_pymupdf4llm_link_malicious" / "test_to_markdown_link_malicious.pdf"
    injected = _render("link_injection", link_case.read_bytes(), settings)
    html = hostile.bodies["html"].decode()
    assert "&lt;script&gt;alert(" in html and "&lt;/script&gt;" in html  # the text is shown, as text
    assert "Ordinary closing words." in html
    for outputs in (hostile, injected):
        page, errors, dialogs = open_html(browser, outputs.files["html"])
        try:
            assert errors == [] and dialogs == [], (outputs.case_id, errors, dialogs)
            assert page.evaluate("document.scripts.length") == 0
            assert page.locator("img, iframe, object, embed, form, [onerror], [onclick]").count() == 0
            hrefs = page.eval_on_selector_all("a[href]", "links => links.map(a => a.href)")
            assert all(href.startswith(("http:", "https:", "mailto:")) for href in hrefs), hrefs
        finally:
            page.close()
    assert "Quarterly Financial Report" in injected.bodies["html"].decode()
    tex = hostile.bodies["latex"].decode()
    assert "\\textless{}script\\textgreater{}" in tex


# --- XeLaTeX and LuaLaTeX -----------------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_every_document_tex_compiles_and_holds_its_words(corpus_outputs: list[Outputs], engine: str,
                                                         tmp_path: Path) -> None:
    recalls = {}
    for outputs in corpus_outputs:
        folder = tmp_path / outputs.case_id
        folder.mkdir()
        shutil.copy(outputs.files["latex"], folder / "document.tex")
        done = compile_tex(folder, engine)
        assert done.returncode == 0, (outputs.case_id, tex_errors(done))
        pdf = folder / "document.pdf"
        shutil.copy(pdf, ARTIFACTS / outputs.case_id / f"document.{engine}.pdf")
        text = pdf_text(pdf).casefold()
        squashed = re.sub(r"\s+", "", re.sub(r"-\s+", "", text))  # words broken over lines, hyphenated
        words = words_of(outputs.pages)
        # Right-to-left runs come out of the PDF in visual order: a word may read backwards.
        found = [w for w in words if w in text or w in squashed or w[::-1] in squashed]
        recalls[outputs.case_id] = len(found) / len(words) if words else 1.0
    low = {case: round(recall, 3) for case, recall in recalls.items() if recall < 0.97}
    assert low == {}, low


@pytest.mark.parametrize("engine", ENGINES)
def test_hard_cases_compile_spans_scripts_and_hostile_formulas(engine: str, tmp_path: Path) -> None:
    from services.results.render.derive import markdown_elements
    from services.results.render.latex import render_latex

    markdown = "\n\n".join([
        "# Spans & scripts: 100% of {them} ~ #1 \\ end",
        '<table><tr><th rowspan="2" colspan="2">corner</th><th colspan="2">head</th></tr>'
        '<tr><th>a</th><th>b</th></tr><tr><td rowspan="3" colspan="2">tall wide</td><td>1</td><td>2</td></tr>'
        '<tr><td colspan="2">wide $x_1$</td></tr><tr><td>3</td><td rowspan="2">deep</td></tr>'
        "<tr><td>4</td><td>5</td><td>6</td></tr></table>",
        "مرحبا بالعالم 2026 and שלום עולם, नमस्ते, 你好世界, 안녕하세요, ภาษาไทย, Ελληνικά, Русский.",
        "$$\n\\input{/etc/hostname}\n$$", "$$\n\\def\\x{\\x}\\x\n$$", "$$\n\\frac{a}{\n$$",
        "$$\n\\begin{aligned} a &= b \\\\ c &= d \\end{aligned}\n$$", "Inline $\\R^n$ and $\\csname foo\\endcsname$.",
        "```\n\\end{verbatim}\\input{x} }{ $\n```",
    ])
    tex = render_latex([RenderPage(number=1, status="succeeded", elements=markdown_elements(markdown, 1))])
    (tmp_path / "document.tex").write_text(tex, encoding="utf-8")
    done = compile_tex(tmp_path, engine)
    assert done.returncode == 0, tex_errors(done)
    text = pdf_text(tmp_path / "document.pdf")
    for word in ("corner", "tall wide", "deep", "Ελληνικά", "Русский", "/etc/hostname"):
        assert word in text, (word, text[:500])
    assert "Missing character" not in (tmp_path / "document.log").read_text(errors="replace")
