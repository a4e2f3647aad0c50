"""Office, web and e-mail documents through the whole platform, converted by a real LibreOffice or read natively.

Every sample of `corpus/office` is uploaded over HTTP, and converted in the worker and parsed by the cpu engine
or (DOCX, HTML, EPUB, e-mail) read from its own structure;
its words must be found in the Markdown (against docling's reference) and its tables must come out as tables.
Hostile files made by `tests/office_files.py` each end with their code, and the worker keeps working.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from services.worker.office.libreoffice import available
from tests import office_files
from tests.conftest import PlatformFactory
from tests.harness import CORPUS, Platform
from tests.textmatch import words

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not available(), reason="LibreOffice is not installed (make office-tools)"),
              pytest.mark.skipif(not (CORPUS / "office").is_dir(), reason=f"no shared corpus at {CORPUS}")]

OFFICE = CORPUS / "office"
# docling's references carry image placeholders, link targets and formulas as LaTeX (an OMML formula comes out
# of the converted PDF as glyphs, not words); the words of the prose are compared, as bags.
# A merged cell's text stands once in a table with spans but once per spanned cell in the reference: words are
# counted once each (distinct-word recall).
_NOISE = re.compile(r"<!--.*?-->|\]\([^)]*\)|\$\$.*?\$\$|\$[^$\n]+\$", re.DOTALL)


# Below the 0.95 goal today, with the reason; the floor keeps them from getting worse.
# (None today: a presentation's Markdown is read from its slides, so a stand-in font that wraps a word apart on
# the rendered slide no longer costs its words.)
KNOWN_GAPS: dict[str, float] = {}


def recall(truth: str, output: str) -> tuple[float, list[str]]:
    """The share of the reference's distinct words found in the output, and the words that are not."""
    wanted, found = set(words(_NOISE.sub(" ", truth))), set(words(output))
    missing = sorted(wanted - found)
    return (1 - len(missing) / len(wanted) if wanted else 1.0), missing


def samples() -> list[tuple[Path, Path | None]]:
    found = []
    for path in sorted(OFFICE.glob("*/*")):
        if path.suffix in (".docx", ".pptx", ".xlsx", ".html", ".eml", ".epub") \
                and not path.name.endswith(".docx.html"):
            reference = path.with_name(path.name + ".md")
            found.append((path, reference if reference.exists() else None))
    return found


@pytest.fixture(scope="module")
def office_platform(tmp_path_factory: pytest.TempPathFactory, redis_server: str) -> Platform:
    from services.core.db.session import migrate

    workdir = tmp_path_factory.mktemp("office")
    url = f"sqlite:///{workdir / 'pagemill.db'}"
    migrate(url)
    platform = Platform(workdir=workdir, database_url=url, redis_base_url=redis_server, engine="cpu")
    platform.start(concurrency=2)
    yield platform
    platform.stop()


@pytest.mark.parametrize(("source", "reference"), samples(), ids=lambda v: v.name if isinstance(v, Path) else "-")
def test_each_office_sample_converts_and_keeps_its_words(office_platform: Platform, source: Path,
                                                        reference: Path | None) -> None:
    created = office_platform.upload(source)
    assert created["pages_total"] == 0  # known once converted
    state = office_platform.wait_done(created["id"], timeout=300)
    assert state["status"] == "succeeded", state
    assert state["pages_total"] >= 1
    markdown = office_platform.result(created["id"])
    document = office_platform.result(created["id"], "json")
    if reference is not None:
        score, missing = recall(reference.read_text(), markdown)
        print(f"{source.name}: recall {score:.3f}, missing {missing}")
        # read natively, a document keeps what it says: the issue-31 goal, 0.98 on each (0.95 through LibreOffice)
        floor = 0.98 if source.suffix in (".docx", ".html", ".epub", ".eml") else 0.95
        assert score >= KNOWN_GAPS.get(source.name, floor), \
            f"{source.name}: recall {score:.3f}, missing {missing}\n--- markdown ---\n{markdown}"
    if "<table" in (reference.read_text() if reference else "") or source.suffix == ".xlsx":
        sheets = (document.get("conversion") or {}).get("sheets") or []
        assert "<table" in markdown or sheets, f"{source.name}: no table came out"
    if source.suffix == ".pptx":  # read from the slide parts, one section per slide
        assert document["conversion"]["slides"] and "<!-- slide 1 -->" in markdown, source.name
    if source.suffix in (".docx", ".html", ".epub", ".eml"):  # read natively: one page, elements without boxes
        assert state["pages_total"] == 1 and document["pages"][0]["engine"] == "native", source.name
        assert document["pages"][0]["elements"] and all("bbox" not in e or e["bbox"] is None
                                                        for e in document["pages"][0]["elements"])
    if source.name == "eml_with_attachment.eml":
        assert document["conversion"]["attachments"], "the attachment is not listed"


def test_sheets_are_read_natively_cell_for_cell(office_platform: Platform) -> None:
    source = OFFICE / "xlsx_xlsx_01" / "xlsx_01.xlsx"
    created = office_platform.upload(source)
    assert office_platform.wait_done(created["id"], timeout=300)["status"] == "succeeded"
    sheets = office_platform.result(created["id"], "json")["conversion"]["sheets"]
    import openpyxl

    book = openpyxl.load_workbook(source, read_only=True, data_only=True)
    assert [s["name"] for s in sheets] == book.sheetnames
    first = book.worksheets[0]
    cells = [[("" if v is None else str(int(v) if isinstance(v, float) and v.is_integer() else v)) for v in row]
             for row in first.iter_rows(values_only=True)]
    assert sheets[0]["cells"][0] == [c for c in cells[0]][:len(sheets[0]["cells"][0])]


@pytest.mark.parametrize(("name", "make", "code"), [
    ("bomb.docx", lambda: office_files.zip_bomb_docx(inflated_mb=300), "zip_bomb"),
    ("laughs.docx", office_files.billion_laughs_docx, "xml_entities"),
    ("xxe.docx", office_files.external_entity_docx, "xml_entities"),
    ("nested.html", lambda: office_files.deeply_nested_html(20_000), "too_deeply_nested"),
])
def test_hostile_office_files_end_with_their_code_and_the_worker_goes_on(
        office_platform: Platform, tmp_path: Path, name: str, make: object, code: str) -> None:
    path = office_files.write(tmp_path, name, make())  # type: ignore[operator]
    state = office_platform.wait_done(office_platform.upload(path)["id"], timeout=300)
    assert state["status"] == "failed" and state["error"]["code"] == code, state
    healthy = office_platform.upload(office_files.write(tmp_path, "after.docx", office_files.plain_docx()))
    after = office_platform.wait_done(healthy["id"], timeout=300)
    assert after["status"] == "succeeded"
    assert "quick brown fox" in office_platform.result(healthy["id"])


def test_a_macro_document_converts_with_macros_off_and_says_so(office_platform: Platform, tmp_path: Path) -> None:
    path = office_files.write(tmp_path, "macro.docm", office_files.macro_docx())
    created = office_platform.upload(path)
    assert office_platform.wait_done(created["id"], timeout=300)["status"] == "succeeded"
    assert office_platform.result(created["id"], "json")["conversion"]["warnings"] == ["macros_ignored"]


def test_a_conversion_that_outlasts_its_timeout_is_killed(platform_factory: PlatformFactory, sqlite_url: str,
                                                          tmp_path: Path) -> None:
    import psutil

    # a DOCX is read natively unless told otherwise: here it goes to LibreOffice, whose sandbox is under test
    platform = platform_factory(sqlite_url, engine="cpu", extra_env={"PAGEMILL_CONVERT__TIMEOUT_S": "0.5",
                                                                     "PAGEMILL_CONVERT__NATIVE": "false"})
    platform.start(concurrency=1)
    path = office_files.write(tmp_path, "slow.docx", office_files.plain_docx())
    state = platform.wait_done(platform.upload(path)["id"], timeout=120)
    assert state["status"] == "failed" and state["error"]["code"] == "conversion_timeout", state
    left = [p for p in psutil.process_iter(["name", "cmdline"])
            if "soffice" in " ".join(p.info["cmdline"] or []) and str(tmp_path) not in " ".join(p.info["cmdline"] or [])
            and "pagemill-convert-" in " ".join(p.info["cmdline"] or [])]
    assert not left, f"LibreOffice processes left behind: {left}"


# OpenDocument, RTF and the 97-2003 formats: the corpus has none, so LibreOffice itself (not pagemill's
# converter) writes them from three corpus samples, and each goes through the platform like any upload.
GENERATED = [("docx_word_sample/word_sample.docx", "odt"), ("docx_word_sample/word_sample.docx", "doc"),
             ("docx_word_sample/word_sample.docx", "rtf"), ("xlsx_xlsx_01/xlsx_01.xlsx", "ods"),
             ("xlsx_xlsx_01/xlsx_01.xlsx", "xls"), ("pptx_powerpoint_sample/powerpoint_sample.pptx", "odp"),
             ("pptx_powerpoint_sample/powerpoint_sample.pptx", "ppt")]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import os
    import subprocess

    from services.worker.office import fonts
    from services.worker.office.libreoffice import soffice_path

    folder = tmp_path_factory.mktemp("generated")
    for sample, target in GENERATED:  # with the worker's fonts too: nothing of the host's may reach a result
        subprocess.run([str(soffice_path()), "--headless", "--norestore",
                        f"-env:UserInstallation={(folder / 'profile').as_uri()}", "--convert-to", target,
                        "--outdir", str(folder), str(OFFICE / sample)], capture_output=True, timeout=180, check=True,
                       env={**os.environ, **fonts.environment()})
    return folder


@pytest.mark.parametrize(("sample", "target"), GENERATED, ids=[t for _, t in GENERATED])
def test_opendocument_rtf_and_legacy_files_convert_and_keep_their_words(
        office_platform: Platform, generated: Path, sample: str, target: str) -> None:
    source = generated / f"{Path(sample).stem}.{target}"
    created = office_platform.upload(source)
    state = office_platform.wait_done(created["id"], timeout=300)
    assert state["status"] == "succeeded" and state["pages_total"] >= 1, state
    document = office_platform.result(created["id"], "json")
    reference = (OFFICE / sample).with_name(Path(sample).name + ".md").read_text()
    score, missing = recall(reference, office_platform.result(created["id"]))
    # a file LibreOffice re-wrote may have dropped a little of the original (0.05 of slack on its floor)
    assert score >= KNOWN_GAPS.get(Path(sample).name, 0.95) - 0.05, \
        f"{source.name}: recall {score:.3f}, missing {missing}"
    if target in ("odp", "ppt"):  # read natively too, through LibreOffice's own pptx
        assert len(document["conversion"]["slides"]) == state["pages_total"]
    if target in ("ods", "xls"):  # read natively too, through LibreOffice's own xlsx
        assert [s["name"] for s in document["conversion"]["sheets"]][:1] == ["Sheet1"]


def test_a_docx_the_native_reader_refuses_is_converted_by_libreoffice(office_platform: Platform,
                                                                       tmp_path: Path) -> None:
    """Strict OOXML (ISO 29500's own namespaces) is not what the native reader reads; LibreOffice opens it."""
    strict = 'xmlns:w="http://purl.oclc.org/ooxml/wordprocessingml/main"'
    document = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document {strict} '
                'w:conformance="strict"><w:body><w:p><w:r><w:t>Strict words survive</w:t></w:r></w:p></w:body>'
                "</w:document>")
    path = office_files.write(tmp_path, "strict.docx", office_files.docx(document.encode()))
    created = office_platform.upload(path)
    state = office_platform.wait_done(created["id"], timeout=300)
    assert state["status"] == "succeeded", state
    result = office_platform.result(created["id"], "json")
    assert result["conversion"]["warnings"] == ["native_reader_refused"]
    assert result["pages"][0]["engine"] != "native"
    assert "Strict words survive" in office_platform.result(created["id"])
