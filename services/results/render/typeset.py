"""KaTeX for `document.html`: formulas rendered to HTML at assembly (node), the CSS inlined with its fonts.

Why at assembly and inlined: `document.html` is one standalone file. It is opened from the API, from a
presigned S3 link or straight from a folder, offline, with a Content-Security-Policy that forbids every
script — so the math cannot be typeset in the reader's browser and cannot link assets on a server. KaTeX runs
in node once per document (`katex/render.mjs`, the npm package `katex` pinned in `katex/package-lock.json`,
installed by `make katex`), and only the fonts the rendered formulas use go in, as woff2 `data:` URLs.
The gateway serves the same files at `/assets/katex/` for clients that typeset `elements[].latex` themselves.
Without node or the package, formulas are shown as their LaTeX source (logged), never as a broken page.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

from services.core.errors import describe
from services.core.logging import get_logger

log = get_logger(__name__)

KATEX_PROJECT = Path(__file__).with_name("katex")
KATEX_DIST = KATEX_PROJECT / "node_modules" / "katex" / "dist"
TIMEOUT_S = 60.0
CACHE_SIZE = 4096
_rendered: dict[tuple[str, bool], str | None] = {}
_FONT_FACE = re.compile(r"@font-face\{[^}]*\}")
_FAMILY = re.compile(r"font-family:\s*(KaTeX_\w+)")
_WOFF2 = re.compile(r"url\((fonts/[\w-]+\.woff2)\)")
_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
_CLASS = re.compile(r"\.([\w-]+)")
_USED_CLASS = re.compile(r'class="([^"]*)"')


def available() -> bool:
    return shutil.which("node") is not None and (KATEX_DIST / "katex.min.css").is_file()


def render_all(formulas: list[tuple[str, bool]]) -> list[str | None]:
    """The HTML of each (latex, display) formula, None where KaTeX could not render it or is missing.

    Results are remembered (a bounded cache), so the LaTeX renderer's check after the HTML costs no node run."""
    wanted = list(dict.fromkeys(f for f in formulas if f not in _rendered))
    if wanted:
        if not available():
            log.warning("katex.unavailable", formulas=len(wanted), hint="make katex")
            return [None] * len(formulas)
        try:
            done = subprocess.run(["node", str(KATEX_PROJECT / "render.mjs")], cwd=KATEX_PROJECT, check=True,
                                  input=json.dumps(wanted), capture_output=True, text=True, encoding="utf-8",
                                  timeout=TIMEOUT_S)
            replies = json.loads(done.stdout)
        except (subprocess.SubprocessError, OSError, ValueError) as exc:
            log.warning("katex.failed", formulas=len(wanted), error=describe(exc))
            return [None] * len(formulas)
        failed = sum(1 for reply in replies if reply["error"])
        if failed:
            log.info("katex.unrendered", formulas=len(wanted), failed=failed)
        if len(_rendered) + len(wanted) > CACHE_SIZE:
            _rendered.clear()
        _rendered.update((f, None if r["error"] else str(r["html"])) for f, r in zip(wanted, replies, strict=True))
    return [_rendered.get(f) for f in formulas]


@lru_cache(maxsize=1)
def _css_parts() -> tuple[str, tuple[tuple[str, str], ...], tuple[tuple[frozenset[str], str], ...]]:
    """(the CSS without @font-face, [(family, @font-face with a data: URL)], [(classes, family) of each rule])."""
    css = (KATEX_DIST / "katex.min.css").read_text(encoding="utf-8")
    faces = []
    for face in _FONT_FACE.findall(css):
        family, woff2 = _FAMILY.search(face), _WOFF2.search(face)
        if not family or not woff2:
            continue
        data = base64.b64encode((KATEX_DIST / woff2.group(1)).read_bytes()).decode()
        src = f'src:url(data:font/woff2;base64,{data}) format("woff2")'
        faces.append((family.group(1), re.sub(r"src:[^;}]*", src, face)))
    rest = _FONT_FACE.sub("", css)
    rules = tuple((frozenset(_CLASS.findall(selector)) - {"katex"}, family.group(1))
                  for selector, body in _RULE.findall(rest) if (family := _FAMILY.search(body)))
    return rest, tuple(faces), rules


def inline_css(rendered_html: str) -> str:
    """KaTeX's stylesheet with the fonts `rendered_html` needs embedded (empty when it holds no formula)."""
    if "katex" not in rendered_html or not available():
        return ""
    rest, faces, rules = _css_parts()
    used = {name for attr in _USED_CLASS.findall(rendered_html) for name in attr.split()}
    families = {"KaTeX_Main", "KaTeX_Math"} | {family for classes, family in rules if classes and classes <= used}
    return "".join(face for family, face in faces if family in families) + rest
