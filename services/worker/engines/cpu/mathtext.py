"""Inline math from the text layer: glyphs set in math fonts become LaTeX, with sub- and superscripts read from
their size and height against the glyph they follow ("λ" + lowered small "g" + raised smaller "′" is
`\\lambda_{g^{\\prime}}`).

Only a closed vocabulary is written (letters, digits, a few ASCII operators and the symbols below), every script
is braced and each base gets at most one `_` and one `^`, so what comes out always parses; a glyph outside the
vocabulary leaves its word as plain text.
"""

from __future__ import annotations

from dataclasses import dataclass

MATH_FONT_PARTS = ("cmmi", "cmsy", "cmex", "cmbsy", "msam", "msbm", "math", "eufm", "rsfs", "symbol", "stixsiz")
# A glyph this much smaller than the one before it is a script of it.
SCRIPT_RATIO = 0.85

_SYMBOLS = {
    "α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "δ": r"\delta", "ϵ": r"\epsilon", "ε": r"\varepsilon",
    "ζ": r"\zeta", "η": r"\eta", "θ": r"\theta", "ϑ": r"\vartheta", "ι": r"\iota", "κ": r"\kappa",
    "λ": r"\lambda", "μ": r"\mu", "µ": r"\mu", "ν": r"\nu", "ξ": r"\xi", "π": r"\pi", "ϖ": r"\varpi", "ρ": r"\rho",
    "ϱ": r"\varrho", "σ": r"\sigma", "ς": r"\varsigma", "τ": r"\tau", "υ": r"\upsilon", "ϕ": r"\phi",
    "φ": r"\varphi", "χ": r"\chi", "ψ": r"\psi", "ω": r"\omega", "Γ": r"\Gamma", "Δ": r"\Delta", "∆": r"\Delta",
    "Θ": r"\Theta", "Λ": r"\Lambda", "Ξ": r"\Xi", "Π": r"\Pi", "Σ": r"\Sigma", "Υ": r"\Upsilon", "Φ": r"\Phi",
    "Ψ": r"\Psi", "Ω": r"\Omega",
    "∑": r"\sum", "∏": r"\prod", "∫": r"\int", "∮": r"\oint", "∈": r"\in", "∉": r"\notin", "∋": r"\ni",
    "×": r"\times", "·": r"\cdot", "⋅": r"\cdot", "∘": r"\circ", "±": r"\pm", "∓": r"\mp", "÷": r"\div",
    "≤": r"\leq", "≥": r"\geq", "≠": r"\neq", "≈": r"\approx", "∼": r"\sim", "≃": r"\simeq", "≅": r"\cong",
    "≡": r"\equiv", "∝": r"\propto", "≪": r"\ll", "≫": r"\gg", "→": r"\to", "←": r"\leftarrow",
    "↦": r"\mapsto", "⇒": r"\Rightarrow", "⇐": r"\Leftarrow", "⇔": r"\Leftrightarrow", "↔": r"\leftrightarrow",
    "∞": r"\infty", "∂": r"\partial", "∇": r"\nabla", "′": r"\prime", "″": r"\prime\prime", "∀": r"\forall",
    "∃": r"\exists", "∅": r"\emptyset", "⊂": r"\subset", "⊃": r"\supset", "⊆": r"\subseteq", "⊇": r"\supseteq",
    "∪": r"\cup", "∩": r"\cap", "∧": r"\wedge", "∨": r"\vee", "¬": r"\neg", "⊕": r"\oplus", "⊗": r"\otimes",
    "ℓ": r"\ell", "ℏ": r"\hbar", "…": r"\ldots", "⋯": r"\cdots", "⟨": r"\langle", "⟩": r"\rangle",
    "‖": r"\|", "∗": "*", "−": "-", "–": "-", "<": r"\lt", ">": r"\gt", "{": r"\{", "}": r"\}", "|": "|",
    "%": r"\%", "#": r"\#", "&": r"\&",
}
_PLAIN = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+=()[]/,.;:!'*")
_OPERATORS = set("=+-−<>≤≥≠≈∼≡∈∉×·⋅/()±→⇒⊂⊆∪∩")
_TRAILING = ".,;:"
_NAMED_OPERATORS = {"sin", "cos", "tan", "cot", "sec", "csc", "log", "ln", "exp", "lim", "max", "min", "sup", "inf",
                    "det", "dim", "ker", "deg", "gcd", "arg", "sinh", "cosh", "tanh", "arcsin", "arccos", "arctan",
                    "Pr", "hom", "lg"}


@dataclass(frozen=True, slots=True)
class Glyph:
    """One character as the math reader needs it: text, font size in points, vertical centre (y grows down),
    whether its font is a math font or an upright text font, and the alphabet a math font draws letters in
    ("" plain, "cal" calligraphic, "bb" blackboard bold)."""

    text: str
    points: float
    cy: float
    math_font: bool = False
    alphabet: str = ""
    upright: bool = False  # an upright text font: a run of such letters is an operator name ("Ann", "log")


def is_math_font(name: str) -> bool:
    lowered = name.lower()
    return any(part in lowered for part in MATH_FONT_PARTS)


def alphabet_of(font_name: str) -> str:
    lowered = font_name.lower()
    if "cmsy" in lowered or "cmbsy" in lowered or "rsfs" in lowered:
        return "cal"
    if "msbm" in lowered:
        return "bb"
    return ""


def _symbol(glyph: Glyph) -> str | None:
    text = glyph.text
    if text in _SYMBOLS:
        return _SYMBOLS[text]
    if text not in _PLAIN:
        return None
    if glyph.alphabet == "cal" and text.isupper():
        return rf"\mathcal{{{text}}}"
    if glyph.alphabet == "bb" and text.isupper():
        return rf"\mathbb{{{text}}}"
    return text


def _operator_name(glyphs: list[Glyph], index: int) -> tuple[str, int] | None:
    """An upright run of two or more letters at the same size starting at `index`, as LaTeX and its length."""
    end = index
    while end < len(glyphs) and glyphs[end].upright and glyphs[end].text.isascii() and glyphs[end].text.isalpha() \
            and glyphs[end].points >= SCRIPT_RATIO * glyphs[index].points:
        end += 1
    if end - index < 2:
        return None
    name = "".join(g.text for g in glyphs[index:end])
    return (f"\\{name}" if name in _NAMED_OPERATORS else f"\\operatorname{{{name}}}"), end - index


def _render(glyphs: list[Glyph]) -> str | None:
    """Glyphs in reading order, the first at the base level, to LaTeX; None when a glyph is outside the
    vocabulary."""
    out: list[str] = []
    index = 0
    while index < len(glyphs):
        named = _operator_name(glyphs, index)
        base = glyphs[index + named[1] - 1] if named else glyphs[index]
        symbol = named[0] if named else _symbol(base)
        if named:
            index += named[1] - 1
        if symbol is None:
            return None
        command_before = bool(out) and out[-1][:1] == "\\" and out[-1][-1:].isalpha()
        out.append(" " + symbol if command_before and symbol[:1].isalpha() else symbol)  # "\in R", not "\inR"
        index += 1
        end = index
        while end < len(glyphs) and glyphs[end].points < SCRIPT_RATIO * base.points:
            end += 1
        scripts, index = glyphs[index:end], end
        if not scripts:
            continue
        level = max(g.points for g in scripts)
        lower: list[Glyph] = []
        upper: list[Glyph] = []
        side = lower
        for glyph in scripts:
            if glyph.points >= SCRIPT_RATIO * level:  # a first-level script: above or below the base?
                side = upper if glyph.cy < base.cy else lower
            side.append(glyph)
        for mark, part in (("_", lower), ("^", upper)):
            if part:
                inner = _render(part)
                if inner is None:
                    return None
                out.append(f"{mark}{{{inner}}}")
    return "".join(out)


def word_latex(glyphs: list[Glyph]) -> tuple[str, str] | None:
    """A word holding math-font glyphs as (LaTeX, trailing punctuation kept as text), or None when the word is
    not math (no math-font glyph, only punctuation) or uses a glyph the vocabulary lacks."""
    scripted = any(b.points < SCRIPT_RATIO * a.points for a, b in zip(glyphs, glyphs[1:], strict=False))
    if not any(g.math_font for g in glyphs) and not (scripted and any(not g.upright for g in glyphs)):
        return None
    tail = ""
    body = list(glyphs)
    while body and body[-1].text in _TRAILING and body[-1].points >= SCRIPT_RATIO * max(g.points for g in body):
        tail = body.pop().text + tail
    if not body or all(g.text in _TRAILING or g.text in "()[]" for g in body):
        return None
    latex = _render(body)
    return (latex, tail) if latex else None


def operator_latex(text: str) -> str | None:
    """A word of operators only ("=", "<", "∈") between two math words, as LaTeX."""
    if not text or not all(ch in _OPERATORS for ch in text):
        return None
    return "".join(_SYMBOLS.get(ch, ch) for ch in text)


def sized_delimiters(latex: str) -> str:
    """Parentheses and brackets at the base level written as \\left( ... \\right), the way Mathpix-style LaTeX
    sets them (KaTeX draws both alike); left as they are unless they pair up, so the result always parses."""
    depth = 0
    stack: list[int] = []
    pairs: dict[int, int] = {}
    for position, char in enumerate(latex):
        if char == "{" and not latex[:position].endswith("\\"):
            depth += 1
        elif char == "}" and not latex[:position].endswith("\\"):
            depth -= 1
        elif depth == 0 and char in "([" and not latex[:position].endswith("\\"):
            stack.append(position)
        elif depth == 0 and char in ")]" and not latex[:position].endswith("\\"):
            if not stack or latex[stack[-1]] != "([)]"["([)]".index(char) - 2]:
                return latex
            pairs[stack.pop()] = position
    if stack:
        return latex
    marks = {start: "\\left" for start in pairs} | {stop: "\\right" for stop in pairs.values()}
    return "".join(marks.get(position, "") + char for position, char in enumerate(latex))
