"""Spreadsheets read natively: every sheet a table of its cell values, exactly as stored.

Rendered pages of a 10,000-row sheet are tiny print; the sheet itself is the better source of its cells.
"""

from __future__ import annotations

import html
import io
import zipfile
from dataclasses import dataclass
from typing import Any

from services.core.errors import CorruptDocument


@dataclass(frozen=True, slots=True)
class Sheet:
    name: str
    rows: list[list[str]]
    truncated: bool = False

    @property
    def html(self) -> str:
        body = "".join("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
                       for row in self.rows)
        return f"<table>{body}</table>"

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "rows": len(self.rows), "columns": max((len(r) for r in self.rows), default=0),
                "truncated": self.truncated, "cells": self.rows, "html": self.html}


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def read_xlsx(data: bytes, *, max_cells: int) -> list[Sheet]:
    """Every sheet's used range, trailing empty rows and columns dropped; at most `max_cells` cells in all."""
    import openpyxl

    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except (zipfile.BadZipFile, OSError, KeyError, ValueError) as exc:
        raise CorruptDocument(f"the workbook cannot be read ({exc})") from exc
    sheets: list[Sheet] = []
    budget = max_cells
    try:
        for worksheet in book.worksheets:
            rows: list[list[str]] = []
            truncated = False
            for values in worksheet.iter_rows(values_only=True):
                row = [_text(v) for v in values]
                while row and not row[-1]:
                    row.pop()
                if budget - len(row) < 0:
                    truncated = True
                    break
                budget -= len(row)
                rows.append(row)
            while rows and not rows[-1]:
                rows.pop()
            width = max((len(r) for r in rows), default=0)
            sheets.append(Sheet(worksheet.title, [r + [""] * (width - len(r)) for r in rows], truncated))
            if truncated:
                break
    finally:
        book.close()
    return sheets
