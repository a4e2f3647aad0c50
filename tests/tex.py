"""document.tex compiled as a reader compiles it (XeLaTeX or LuaLaTeX, with or without the Noto fonts), and the
text and fonts of the PDF it makes."""

from __future__ import annotations

import os
import shutil
import subprocess
import unicodedata
from pathlib import Path

import pytest

ENGINES = ("xelatex", "lualatex")  # what Overleaf offers for fontspec documents


def engine_path(engine: str) -> str:
    """The engine's path; the test skips, naming the make target, when TeX Live lacks it."""
    path = shutil.which(engine)
    if path is None:
        pytest.skip(f"no {engine} on PATH: `make tex-tools` installs Debian's TeX Live and Noto fonts")
    return path


def compile_tex(folder: Path, engine: str = "xelatex", *,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`engine` on folder/document.tex, again while longtable asks for a rerun (column widths settle on pass 2)."""
    command = [engine_path(engine), "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", "document.tex"]
    for _ in range(3):
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=900, check=False, env=env)
        if done.returncode != 0 or "Rerun LaTeX" not in (folder / "document.log").read_text(errors="replace"):
            break
    return done


def tex_errors(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stdout.splitlines() if line.startswith("!")][:3]


def pdf_text(path: Path) -> str:
    import pypdf

    reader = pypdf.PdfReader(path)
    return unicodedata.normalize("NFKC", " ".join(page.extract_text() or "" for page in reader.pages))


def pdf_fonts(path: Path) -> set[str]:
    """The fonts the PDF's pages use, without the subset prefix and XeTeX's encoding suffix (`LMRoman10-Regular`, not
    `ABCDEF+LMRoman10-Regular-Identity-H`)."""
    import pypdf

    fonts = set()
    for page in pypdf.PdfReader(path).pages:
        for font in (page["/Resources"].get_object().get("/Font") or {}).values():
            fonts.add(str(font.get_object()["/BaseFont"]).lstrip("/").split("+")[-1].removesuffix("-Identity-H"))
    return fonts


def without_noto(folder: Path) -> dict[str, str]:
    """The environment of a machine without fonts-noto-core and fonts-noto-cjk: fontconfig (how XeTeX finds a
    font by name) rejects every Noto file, and luaotfload (LuaTeX's) blacklists them in `folder` — where the
    compile runs, so kpathsea finds `luaotfload-blacklist.cnf` — and builds its font names afresh there."""
    if shutil.which("fc-list") is None:
        pytest.skip("no fc-list (fontconfig): cannot hide the Noto fonts")
    listed = subprocess.run(["fc-list", "--format", "%{file}\n"], capture_output=True, text=True, check=True)
    noto = sorted({line for line in listed.stdout.splitlines() if Path(line).name.startswith("Noto")})
    (folder / "luaotfload-blacklist.cnf").write_text("".join(f"{path}\n" for path in noto))
    (folder / "fonts.conf").write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">\n<fontconfig>\n'
        '  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>\n'
        "  <selectfont><rejectfont><glob>*/Noto*</glob></rejectfont></selectfont>\n</fontconfig>\n")
    return {**os.environ, "FONTCONFIG_FILE": str(folder / "fonts.conf"), "TEXMFCACHE": str(folder / "texmf-cache")}
