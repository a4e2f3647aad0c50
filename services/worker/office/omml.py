"""Office Math (OMML, a DOCX's `m:oMath`) as LaTeX: fractions, scripts, n-ary operators, delimiters, functions.

A rendered equation comes back from a PDF as glyphs; the document states its structure, so the formula is
written from it. Constructs without a LaTeX counterpart here give their content's LaTeX, never nothing.
"""

from __future__ import annotations

from xml.etree import ElementTree

M = "{http://schemas.openxmlformats.org/officeDocument/2006/math}"
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"

# Characters with a LaTeX command of their own (the rest are written as they are).
_SYMBOLS = {
    "π": r"\pi", "α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "δ": r"\delta", "θ": r"\theta", "λ": r"\lambda",
    "μ": r"\mu", "σ": r"\sigma", "ω": r"\omega", "Δ": r"\Delta", "Σ": r"\Sigma", "Ω": r"\Omega", "∞": r"\infty",
    "×": r"\times", "·": r"\cdot", "±": r"\pm", "≤": r"\leq", "≥": r"\geq", "≠": r"\neq", "≈": r"\approx",
    "→": r"\rightarrow", "∂": r"\partial", "∇": r"\nabla", "∈": r"\in", "…": r"\ldots", "⋯": r"\cdots",
}
_NARY = {"∑": r"\sum", "∏": r"\prod", "∫": r"\int", "∬": r"\iint", "∮": r"\oint", "⋃": r"\bigcup", "⋂": r"\bigcap"}
_FUNCTIONS = frozenset({"sin", "cos", "tan", "log", "ln", "exp", "lim", "max", "min", "sup", "inf", "det"})


def _text(value: str) -> str:
    out = []
    for char in value:
        symbol = _SYMBOLS.get(char)
        out.append(f"{symbol} " if symbol else char)
    return "".join(out)


def _prop(node: ElementTree.Element | None, props: str, name: str, default: str) -> str:
    if node is None:
        return default
    found = node.find(f"{M}{props}/{M}{name}")
    return found.get(f"{M}val", default) if found is not None else default


def _part(node: ElementTree.Element, name: str) -> str:
    child = node.find(f"{M}{name}")
    return latex_of(child) if child is not None else ""


def latex_of(node: ElementTree.Element) -> str:
    """The LaTeX of an OMML element and what it holds."""
    tag = node.tag.removeprefix(M)
    if node.tag == f"{_W}r" or tag == "r":
        return "".join(_text(t.text or "") for t in node.iter() if t.tag in (f"{M}t", f"{_W}t"))
    if tag == "f":
        return rf"\frac{{{_part(node, 'num')}}}{{{_part(node, 'den')}}}"
    if tag == "sSup":
        return f"{_part(node, 'e')}^{{{_part(node, 'sup')}}}"
    if tag == "sSub":
        return f"{_part(node, 'e')}_{{{_part(node, 'sub')}}}"
    if tag == "sSubSup":
        return f"{_part(node, 'e')}_{{{_part(node, 'sub')}}}^{{{_part(node, 'sup')}}}"
    if tag == "sPre":
        return f"{{}}_{{{_part(node, 'sub')}}}^{{{_part(node, 'sup')}}}{_part(node, 'e')}"
    if tag == "rad":
        degree = _part(node, "deg")
        return rf"\sqrt[{degree}]{{{_part(node, 'e')}}}" if degree else rf"\sqrt{{{_part(node, 'e')}}}"
    if tag == "nary":
        char = _prop(node, "naryPr", "chr", "∫")
        sub, sup = _part(node, "sub"), _part(node, "sup")
        limits = (f"_{{{sub}}}" if sub else "") + (f"^{{{sup}}}" if sup else "")
        return f"{_NARY.get(char, _text(char))}{limits} {_part(node, 'e')}"
    if tag == "d":
        begin, end = _prop(node, "dPr", "begChr", "("), _prop(node, "dPr", "endChr", ")")
        inner = ",".join(latex_of(e) for e in node.iterfind(f"{M}e"))
        return rf"\left{_fence(begin, '.')}{inner}\right{_fence(end, '.')}"
    if tag == "func":
        name = _part(node, "fName").strip()
        command = f"\\{name}" if name in _FUNCTIONS else name
        return f"{command}({_part(node, 'e')})" if node.find(f"{M}e/{M}d") is None else \
            f"{command}{_part(node, 'e')}"
    if tag == "limLow":
        return f"{_part(node, 'e')}_{{{_part(node, 'lim')}}}"
    if tag == "limUpp":
        return f"{_part(node, 'e')}^{{{_part(node, 'lim')}}}"
    if tag == "bar":
        return rf"\overline{{{_part(node, 'e')}}}"
    if tag == "acc":
        return rf"\hat{{{_part(node, 'e')}}}"
    if tag == "eqArr":
        return r" \\ ".join(latex_of(e) for e in node.iterfind(f"{M}e"))
    if tag.endswith("Pr"):
        return ""  # properties: what the constructs above read, not content
    return "".join(latex_of(child) for child in node)


def _fence(char: str, empty: str) -> str:
    if not char:
        return empty
    return {"{": r"\{", "}": r"\}", "|": "|", "‖": r"\|", "⟨": r"\langle", "⟩": r"\rangle"}.get(char, char)


def omml_latex(node: ElementTree.Element) -> str:
    """The LaTeX of an `m:oMath` or `m:oMathPara`, its spaces tidied."""
    return " ".join(latex_of(node).split())
