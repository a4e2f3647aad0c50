"""LaTeX equations compared after rendering, for the olmOCR-bench `math` rule.

olmOCR-bench renders both equations with KaTeX in a headless browser and passes when (1) the reference's
MathML is contained in the hypothesis's MathML, or (2) every rendered reference symbol finds a hypothesis
symbol with the same text and the same up/down/left/right neighbours on screen. Here KaTeX runs in node
(`katex/render.mjs`, installed by `make install`), which gives (1), also looking for the parts of an
equation KaTeX wrapped in one top-level <mrow> inside the hypothesis (a case (2) would accept); (2) needs a
browser's layout and is not done otherwise, so a math rule can fail where olmOCR-bench would pass.
Without node or KaTeX, a Python fallback compares normalized LaTeX token streams (reference tokens as a
contiguous run of the hypothesis's tokens); results then say `renderer: "python-fallback"`.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
from functools import lru_cache
from pathlib import Path

KATEX_DIR = Path(__file__).with_name("katex")
_SEMANTICS = re.compile(r"<semantics>(.*)</semantics>", re.DOTALL)
_ANNOTATION = re.compile(r"<annotation\b.*?</annotation>", re.DOTALL)
_SPACE = re.compile(r"\s+")
_LATEX_TOKEN = re.compile(r"\\[a-zA-Z]+|\\.|[^\s{}]")
_SPACING_COMMANDS = {"\\,", "\\;", "\\:", "\\!", "\\ ", "\\quad", "\\qquad", "\\left", "\\right", "\\displaystyle",
                     "\\textstyle", "\\limits", "\\nolimits"}


class KatexRenderer:
    """One long-lived node process rendering LaTeX to MathML; thread-safe, restarted if it dies."""

    def __init__(self, katex_dir: Path = KATEX_DIR) -> None:
        self.katex_dir = katex_dir
        self._process: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()

    @staticmethod
    def available(katex_dir: Path = KATEX_DIR) -> bool:
        return shutil.which("node") is not None and (katex_dir / "node_modules" / "katex").is_dir()

    def mathml(self, latex: str) -> str | None:
        """The MathML of an equation, or None when KaTeX cannot render it."""
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._process = subprocess.Popen(
                    ["node", str(self.katex_dir / "render.mjs")], cwd=self.katex_dir, text=True,
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, encoding="utf-8")
            assert self._process.stdin and self._process.stdout
            self._process.stdin.write(json.dumps(latex) + "\n")
            self._process.stdin.flush()
            reply = json.loads(self._process.stdout.readline() or '{"mathml": "", "error": "node exited"}')
        if reply.get("error"):
            return None
        return str(reply["mathml"])

    def close(self) -> None:
        with self._lock:
            if self._process is not None and self._process.poll() is None:
                self._process.stdin.close()  # type: ignore[union-attr]
                self._process.wait(timeout=10)
            self._process = None


def mathml_core(mathml: str) -> str:
    """What olmOCR-bench compares: the <semantics> content without its TeX annotation, whitespace removed."""
    match = _SEMANTICS.search(mathml)
    inner = _ANNOTATION.sub("", match.group(1)) if match else mathml
    return _SPACE.sub("", inner)


def latex_tokens(latex: str) -> list[str]:
    return [t for t in _LATEX_TOKEN.findall(latex) if t not in _SPACING_COMMANDS]


def _contains_run(haystack: list[str], needle: list[str]) -> bool:
    if not needle:
        return True
    width = len(needle)
    return any(haystack[k:k + width] == needle for k in range(len(haystack) - width + 1))


class MathComparer:
    """Decides whether a hypothesis equation renders like a reference one."""

    def __init__(self, renderer: KatexRenderer | None) -> None:
        self.renderer = renderer

    @property
    def name(self) -> str:
        return "katex-mathml" if self.renderer else "python-fallback"

    def renders(self, latex: str) -> bool:
        if self.renderer is None:
            return bool(latex_tokens(latex))
        return self._mathml(latex) is not None

    def same(self, reference: str, hypothesis: str) -> bool:
        if self.renderer is None:
            return _contains_run(latex_tokens(hypothesis), latex_tokens(reference))
        wanted, got = self._mathml(reference), self._mathml(hypothesis)
        if wanted is None or got is None:
            return False
        core, within = mathml_core(wanted), mathml_core(got)
        if core in within:
            return True
        # KaTeX wraps a multi-part equation in one <mrow>; its parts can still sit inside a longer equation.
        if core.startswith("<mrow>") and core.endswith("</mrow>"):
            return core[len("<mrow>"):-len("</mrow>")] in within
        return False

    def _mathml(self, latex: str) -> str | None:
        assert self.renderer is not None
        return _cached_mathml(self.renderer, latex)


@lru_cache(maxsize=4096)
def _cached_mathml(renderer: KatexRenderer, latex: str) -> str | None:
    return renderer.mathml(latex)


def default_comparer() -> MathComparer:
    return MathComparer(_shared_renderer() if KatexRenderer.available() else None)


@lru_cache(maxsize=1)
def _shared_renderer() -> KatexRenderer:
    return KatexRenderer()
