"""Office, web and e-mail documents made into PDF pages before the split: guard, convert, read sheets and slides
natively; DOCX, HTML, EPUB and e-mail read into the element tree without a conversion at all.

    docx, html, epub, eml ─▶ guard ─▶ native readers ─▶ elements of one page (LibreOffice when they refuse)
    upload (doc, xlsx, …) ─▶ guard (bombs, entities, nesting) ─▶ LibreOffice, sandboxed ─▶ PDF ─▶ split
                                                 xlsx/ods/xls ─▶ every sheet's cells as a table (conversion.json)
                                                 pptx/odp/ppt ─▶ every slide's title, text and tables (conversion.json)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from services.core.elements import Element
from services.core.errors import CorruptDocument, clip
from services.core.formats import DOCX, EML, EPUB, HTML, ODP, ODS, PPT, PPTX, XLS, XLSX
from services.core.logging import get_logger
from services.core.settings import Settings
from services.worker.office.charts import Chart, read_charts
from services.worker.office.epub import epub_to_html
from services.worker.office.guard import GuardLimits, check_document
from services.worker.office.html_source import titled
from services.worker.office.libreoffice import convert, slot
from services.worker.office.mail import Attachment, read_mail
from services.worker.office.native import NATIVE_TYPES, read_native
from services.worker.office.slides import Slide, read_pptx
from services.worker.office.spreadsheet import Sheet, read_xlsx

SLOT_WAIT_S = 5.0
log = get_logger(__name__)


@dataclass(slots=True)
class Converted:
    pdf: bytes
    warnings: list[str] = field(default_factory=list)
    sheets: list[Sheet] = field(default_factory=list)
    attachments: list[Attachment] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)
    slides: list[Slide] = field(default_factory=list)
    elements: list[Element] | None = None  # read natively: the whole document as one page, and no PDF


def convert_document(data: bytes, media_type: str, settings: Settings) -> Converted:
    """Raises `UnsafeDocument`/`CorruptDocument` for a document refused, `ConverterBusy` (retryable) when every
    conversion slot of the host is taken."""
    options = settings.convert
    limits = GuardLimits(max_expanded_bytes=options.max_expanded_mb << 20)
    report = check_document(data, media_type, limits)
    result = Converted(pdf=b"", warnings=list(report.warnings))
    if options.native and media_type in NATIVE_TYPES:
        try:
            result.elements, result.attachments = read_native(data, media_type)
            if media_type == DOCX:
                result.charts = read_charts(data)
            return result
        except CorruptDocument as exc:  # LibreOffice may still open what the reader cannot
            log.info("convert.native_refused", media_type=media_type, error=clip(str(exc)))
            result.warnings.append("native_reader_refused")
    source, source_type = data, media_type
    if media_type == EML:
        mail = read_mail(data)
        source, source_type, result.attachments = mail.html, HTML, mail.attachments
    elif media_type == EPUB:
        source, source_type = epub_to_html(data), HTML
    elif media_type == HTML:
        source = titled(data)
    with slot(options.pool_size, SLOT_WAIT_S):
        result.pdf = convert(source, source_type, timeout_s=options.timeout_s, memory_mb=options.memory_mb)
        if media_type in (ODS, XLS):
            workbook = convert(data, media_type, timeout_s=options.timeout_s, memory_mb=options.memory_mb,
                               target="xlsx")
            result.sheets = read_xlsx(workbook, max_cells=options.max_sheet_cells)
            result.charts = read_charts(workbook)  # LibreOffice's xlsx keeps the charts as chart parts
        elif media_type in (ODP, PPT):
            deck = convert(data, media_type, timeout_s=options.timeout_s, memory_mb=options.memory_mb, target="pptx")
            result.slides = read_pptx(deck, limits=limits)
            result.charts = read_charts(deck)
    if media_type == XLSX:
        result.sheets = read_xlsx(data, max_cells=options.max_sheet_cells)
    if media_type == PPTX:
        result.slides = read_pptx(data, limits=limits)
    if media_type in (DOCX, PPTX, XLSX):
        result.charts = read_charts(data)
    return result
