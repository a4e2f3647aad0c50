"""document.tex compiled as a reader compiles it, and the text of the PDF it makes."""

from __future__ import annotations

import shutil
import subprocess
import unicodedata
from pathlib import Path

import pytest


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
