"""Ground-truth tables from a LaTeX source: each `tabular` environment as an HTML table (spans kept).

A one-column `tabular` (form or list layout) is skipped. Only what simple tables use is understood: `&`
cells, `\\\\` rows, `\\multicolumn{n}{..}{text}` (colspan),
`\\multirow{n}{..}{text}` (rowspan), rules and colours dropped, text-formatting macros reduced to their text.
"""

from __future__ import annotations

import html
import re

_TABULAR = re.compile(r"\\begin\{tabular\*?\}(?:\{[^{}]*\})?\{((?:[^{}]|\{[^{}]*\})*)\}(.*?)\\end\{tabular\*?\}",
                      re.DOTALL)
_DROP = re.compile(r"\\(?:toprule|midrule|bottomrule|hline|cline\{[^}]*\}|cmidrule(?:\([^)]*\))?\{[^}]*\}|"
                   r"rowcolor(?:\[[^\]]*\])?\{[^}]*\}|cellcolor(?:\[[^\]]*\])?\{[^}]*\}|centering|small|footnotesize)")
_MULTICOLUMN = re.compile(r"^\\multicolumn\{(\d+)\}\{[^}]*\}\{(.*)\}$", re.DOTALL)
_MULTIROW = re.compile(r"^\\multirow\{(\d+)\}\{[^}]*\}\{(.*)\}$", re.DOTALL)
_TWO_ARGS = re.compile(r"\\(?:backslashbox|slashbox)\{([^{}]*)\}\{([^{}]*)\}")
_ONE_ARG = re.compile(r"\\(?:textbf|textit|emph|texttt|textsc|textrm|mathrm|mathbf|text|textsuperscript|"
                      r"textsubscript|underline)\{([^{}]*)\}")
_COMMAND = re.compile(r"\\[a-zA-Z]+\*?")


def _cell_text(raw: str) -> str:
    text = _TWO_ARGS.sub(r"\1 \2", raw)
    for _ in range(3):
        text = _ONE_ARG.sub(r"\1", text)
    text = text.replace("\\&", "&").replace("\\%", "%").replace("\\$", "$").replace("\\_", "_").replace("~", " ")
    text = _COMMAND.sub("", text).replace("$", "").replace("{", "").replace("}", "")
    return " ".join(text.split())


def _split_unescaped(text: str, separator: str) -> list[str]:
    return [part for part in re.split(r"(?<!\\)" + re.escape(separator), text)]


def _column_count(spec: str) -> int:
    return len(re.findall(r"[lcrpmbXS]", re.sub(r"\{[^{}]*\}", "", spec)))


def tex_tables(source: str) -> list[str]:
    source = re.sub(r"(?<!\\)%.*", "", source)  # comments
    tables: list[str] = []
    for match in _TABULAR.finditer(source):
        if _column_count(match.group(1)) < 2:
            continue  # a one-column tabular lays out a form or a list; it is not a table
        body = _DROP.sub("", match.group(2))
        rows_html: list[str] = []
        for row in re.split(r"\\\\(?:\[[^\]]*\])?", body):
            if not row.strip():
                continue
            cells_html = []
            for raw in _split_unescaped(row, "&"):
                raw = raw.strip()
                attributes = ""
                column = _MULTICOLUMN.match(raw)
                if column:
                    attributes += f' colspan="{column.group(1)}"' if column.group(1) != "1" else ""
                    raw = column.group(2).strip()
                multirow = _MULTIROW.match(raw)
                if multirow:
                    attributes += f' rowspan="{multirow.group(1)}"' if multirow.group(1) != "1" else ""
                    raw = multirow.group(2).strip()
                cells_html.append(f"<td{attributes}>{html.escape(_cell_text(raw), quote=False)}</td>")
            rows_html.append("<tr>" + "".join(cells_html) + "</tr>")
        if rows_html:
            tables.append("<table>" + "".join(rows_html) + "</table>")
    return tables
