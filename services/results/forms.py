"""A PDF's own form: its AcroForm fields read with pdfium's form API, put in the page's element tree.

A filled-in form's values live in its fields, not in its text: pdfium's text page does not hold them, so an
engine reading the page (text layer or pixels) sees an empty box or, at best, the printed appearance. At
assembly the document's source PDF is opened with its form environment and each widget of each parsed page
becomes a `form_field` element — `field_name`, `field_type` (text, checkbox, radio, combobox, listbox,
signature, button), `value` (a radio button: its own option), `checked` (checkboxes and radio buttons), `bbox`
(the widget, in displayed page points) — placed in reading order after the last element that starts above it.
The JSON result lists them all in `fields`. Markdown: `label: value` for text, `[x] label` / `[ ] label` for a
checkbox, `[x] label: option` for a radio button, where the label is the field's tooltip (`/TU`) or its name.

Only a PDF upload's own form is read (a converted office document has none); a page whose Markdown is not its
tree rendered gets the elements in its tree but keeps its Markdown.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import pypdfium2.raw as pdfium_c

from services.core.db.models import Document
from services.core.elements import FURNITURE, BBox, Element, ElementType, page_markdown
from services.core.errors import describe
from services.core.logging import get_logger
from services.core.pages import PageEntry, entry_elements
from services.core.pdf import PDF, PDFIUM_LOCK, open_pdf
from services.core.storage import ObjectStore

log = get_logger(__name__)

FIELD_TYPES = {pdfium_c.FPDF_FORMFIELD_TEXTFIELD: "text", pdfium_c.FPDF_FORMFIELD_CHECKBOX: "checkbox",
               pdfium_c.FPDF_FORMFIELD_RADIOBUTTON: "radio", pdfium_c.FPDF_FORMFIELD_COMBOBOX: "combobox",
               pdfium_c.FPDF_FORMFIELD_LISTBOX: "listbox", pdfium_c.FPDF_FORMFIELD_SIGNATURE: "signature",
               pdfium_c.FPDF_FORMFIELD_PUSHBUTTON: "button"}
TICKED = frozenset({"checkbox", "radio"})
MAX_FIELDS_PER_PAGE = 2000  # a page of more widgets than this is not a form a reader fills in


@dataclass(frozen=True, slots=True)
class FormField:
    name: str
    kind: str
    value: str
    checked: bool | None
    label: str
    bbox: BBox | None


def _text(function: Any, *args: Any) -> str:
    """A UTF-16LE string out of one of pdfium's two-call getters (size first, then the bytes)."""
    size = function(*args, None, 0)
    if size <= 2:
        return ""
    buffer = ctypes.create_string_buffer(size)
    function(*args, ctypes.cast(buffer, ctypes.POINTER(pdfium_c.FPDF_WCHAR)), size)
    return buffer.raw[: size - 2].decode("utf-16-le", errors="replace")


def displayed(page: Any, width: float, height: float, rect: Any) -> BBox:
    """A widget's rectangle (PDF user space) in the page as displayed (after /Rotate), top-left origin."""
    corners = []
    for x, y in ((rect.left, rect.bottom), (rect.right, rect.top)):
        device_x, device_y = ctypes.c_int(), ctypes.c_int()
        # 100 device units per point keeps the rounding to ints well under a point
        pdfium_c.FPDF_PageToDevice(page, 0, 0, int(width * 100), int(height * 100), 0, x, y, device_x, device_y)
        corners.append((device_x.value / 100, device_y.value / 100))
    (xa, ya), (xb, yb) = corners
    return (round(min(xa, xb), 2), round(min(ya, yb), 2), round(max(xa, xb), 2), round(max(ya, yb), 2))


def read_form_fields(pdf_bytes: bytes, page_numbers: list[int]) -> dict[int, list[FormField]]:
    """The widgets of the given pages (1-based), by page number; empty when the PDF has no form."""
    found: dict[int, list[FormField]] = {}
    with PDFIUM_LOCK:
        pdf = open_pdf(pdf_bytes)
        try:
            pdf.init_forms()
            if pdf.formenv is None:  # no AcroForm (nor XFA)
                return found
            env = pdf.formenv.raw
            for number in page_numbers:
                if not 1 <= number <= len(pdf):
                    continue
                page = pdf[number - 1]
                try:
                    found[number] = _page_fields(page.raw, env, *page.get_size(), rotation=page.get_rotation())
                finally:
                    page.close()
        finally:
            pdf.close()
    return {number: fields for number, fields in found.items() if fields}


def _page_fields(page: Any, env: Any, width: float, height: float, *, rotation: int) -> list[FormField]:
    if rotation % 180:
        width, height = height, width
    fields: list[FormField] = []
    for index in range(min(pdfium_c.FPDFPage_GetAnnotCount(page), MAX_FIELDS_PER_PAGE)):
        annot = pdfium_c.FPDFPage_GetAnnot(page, index)
        try:
            if pdfium_c.FPDFAnnot_GetSubtype(annot) != pdfium_c.FPDF_ANNOT_WIDGET:
                continue
            kind = FIELD_TYPES.get(pdfium_c.FPDFAnnot_GetFormFieldType(env, annot))
            if kind is None:
                continue
            name = _text(pdfium_c.FPDFAnnot_GetFormFieldName, env, annot)
            value = _text(pdfium_c.FPDFAnnot_GetFormFieldValue, env, annot)
            checked = bool(pdfium_c.FPDFAnnot_IsChecked(env, annot)) if kind in TICKED else None
            if kind == "radio":  # each button is one option of the group: its own export value
                value = _text(pdfium_c.FPDFAnnot_GetFormFieldExportValue, env, annot) or value
            label = _text(pdfium_c.FPDFAnnot_GetFormFieldAlternateName, env, annot) or name
            rect = pdfium_c.FS_RECTF()
            box = displayed(page, width, height, rect) if pdfium_c.FPDFAnnot_GetRect(annot, rect) else None
            fields.append(FormField(name=name, kind=kind, value=value, checked=checked, label=label, bbox=box))
        finally:
            pdfium_c.FPDFPage_CloseAnnot(annot)
    return fields


def field_markdown(field: FormField) -> str:
    label = " ".join(field.label.split()) or field.name or "field"
    if field.kind == "checkbox":
        return f"[{'x' if field.checked else ' '}] {label}"
    if field.kind == "radio":
        return f"[{'x' if field.checked else ' '}] {label}: {field.value}"
    if field.kind == "button":
        return ""
    if field.kind == "signature":
        return f"{label}: (signature field)"
    return f"{label}: {' '.join(field.value.split())}".rstrip()


def insert_in_order(elements: list[Element], element: Element) -> None:
    """After the last content element that starts above the field (furniture keeps its place)."""
    content_end = next((i for i in range(len(elements), 0, -1) if elements[i - 1].type not in FURNITURE
                        or elements[i - 1].type is ElementType.PAGE_HEADER), 0)
    position = content_end
    if element.bbox is not None:
        above = [i for i, e in enumerate(elements[:content_end]) if e.bbox is not None and e.type not in FURNITURE
                 and e.bbox[1] <= element.bbox[1]]
        position = above[-1] + 1 if above else next(
            (i for i, e in enumerate(elements) if e.type is not ElementType.PAGE_HEADER), content_end)
    elements.insert(position, element)


def add_form_fields(entries: list[PageEntry], fields: dict[int, list[FormField]]) -> list[dict[str, Any]]:
    """Puts each page's fields into its entry (`elements`, `markdown`, changed in place); returns the JSON's
    `fields` list."""
    listed: list[dict[str, Any]] = []
    for entry in entries:
        number = int(entry["page_number"])
        if entry.get("status") != "succeeded" or not fields.get(number):
            continue
        elements = entry_elements(entry)
        consistent = (entry.get("markdown") or "").strip() == page_markdown(elements).strip()
        start = max((int(e.id.rsplit("-e", 1)[1]) for e in elements if "-e" in e.id), default=0)
        for n, field in enumerate(fields[number], start + 1):
            element = Element(id=f"p{number}-e{n}", type=ElementType.FORM_FIELD, page=number, bbox=field.bbox,
                              text=" ".join(part for part in (field.label, field.value) if part),
                              markdown=field_markdown(field), field_name=field.name, field_type=field.kind,
                              value=field.value, checked=field.checked)
            insert_in_order(elements, element)
            listed.append({"element_id": element.id, "page": number, "name": field.name, "type": field.kind,
                           "value": field.value, "checked": field.checked, "label": field.label,
                           "bbox": list(field.bbox) if field.bbox else None, "source": "acroform"})
        entry["elements"] = [e.model_dump(mode="json") for e in elements]
        if consistent:
            body = page_markdown(elements)
            entry["markdown"] = body + "\n" if body else ""
    return listed


def document_form_fields(document: Document, entries: list[PageEntry], store: ObjectStore) -> list[dict[str, Any]]:
    """A PDF upload's form fields put into its page entries; the JSON's `fields` (empty for anything else)."""
    if document.media_type != PDF:
        return []
    numbers = [int(e["page_number"]) for e in entries if e.get("status") == "succeeded"]
    try:
        fields = read_form_fields(store.get(document.source_key), numbers)
    except Exception as exc:  # noqa: BLE001 - the form is extra: its pages are parsed either way
        log.warning("forms.unreadable", document_id=document.id, error=describe(exc))
        return []
    return add_form_fields(entries, fields)
