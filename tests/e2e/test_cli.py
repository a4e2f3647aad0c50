"""The `pagemill` command as a user runs it: `serve` on embedded defaults, `parse` in-process and remote.
The `admin` commands are checked in process against the API: tests/api/test_admin_cli.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.harness import REPO
from tests.servers import free_port, wait_for
from tests.textmatch import word_recall, words

pytestmark = pytest.mark.slow


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAGEMILL_") and k != "PROMETHEUS_MULTIPROC_DIR"}
    env.update(extra)
    return env


@pytest.fixture
def served(tmp_path: Path) -> tuple[str, Path]:
    """`pagemill serve` with nothing configured: embedded Redis, SQLite and a local folder."""
    port = free_port()
    data_dir = tmp_path / "data"
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen([sys.executable, "-m", "services.cli", "serve", "--port", str(port), "--data-dir",
                                str(data_dir)], cwd=tmp_path, env=clean_env(PYTHONPATH=str(REPO)),
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: httpx.get(f"{url}/readyz", timeout=2).status_code == 200, 90, "pagemill serve")
        yield url, data_dir
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def test_serve_on_embedded_defaults_then_parse_against_it(served: tuple[str, Path], corpus: Path,
                                                           tmp_path: Path) -> None:
    url, data_dir = served
    case = corpus / "dev" / "docling_multi_page"
    out = tmp_path / "out"
    # `serve` on embedded defaults made a local tenant and saved its key for the README's curl example
    api_key = (data_dir / "api_key").read_text().strip()
    assert api_key.startswith("pm_") and (data_dir / "api_key").stat().st_mode & 0o077 == 0
    assert httpx.get(f"{url}/v1/documents", timeout=10).status_code == 401
    result = subprocess.run([sys.executable, "-m", "services.cli", "parse", str(case / "multi_page.pdf"),
                             "-o", str(out), "--server", url, "--format", "all"], cwd=REPO,
                            env=clean_env(PAGEMILL_API_KEY=api_key), capture_output=True, text=True, timeout=300,
                            check=False)
    assert result.returncode == 0, result.stderr + result.stdout
    assert "multi_page.pdf: succeeded" in result.stdout
    markdown = (out / "multi_page.md").read_text()
    assert word_recall((case / "multi_page.md").read_text(), markdown) >= 0.9
    # every format, from `pagemill serve` itself
    assert (out / "multi_page.html").read_text().count('<section class="page" data-page=') == 5
    assert "\\begin{document}" in (out / "multi_page.tex").read_text()
    assert json.loads((out / "multi_page.json").read_text())["formats"] == ["markdown", "html", "latex", "json",
                                                                          "chunks"]
    chunks = json.loads((out / "multi_page.chunks.json").read_text())["chunks"]
    assert chunks and {p for c in chunks for p in c["pages"]} == {1, 2, 3, 4, 5}
    assert (data_dir / "pagemill.db").exists() and (data_dir / "objects" / "documents").is_dir()


def test_parse_in_process_writes_markdown_and_reports_bad_files(corpus: Path, tmp_path: Path) -> None:
    good = corpus / "dev" / "tesseract_phototest" / "phototest.png"
    bad = corpus / "bad" / "encrypted_pypdf_r6-user-password" / "r6-user-password.pdf"
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "services.cli", "parse", str(good), str(bad), "-o", str(out),
                             "--format", "markdown,html,chunks"],
                            cwd=REPO, env=clean_env(), capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 1  # one file could not be parsed
    assert "r6-user-password.pdf: encrypted_pdf" in result.stderr
    truth = (corpus / "dev" / "tesseract_phototest" / "phototest.txt").read_text()
    assert word_recall(truth, (out / "phototest.md").read_text()) >= 0.9
    assert word_recall(truth, (out / "phototest.html").read_text()) >= 0.9
    assert json.loads((out / "phototest.chunks.json").read_text())["tokenizer"] == "cl100k_base"
    assert not (out / "r6-user-password.md").exists() and not (out / "phototest.tex").exists()
    wrong = subprocess.run([sys.executable, "-m", "services.cli", "parse", str(good), "-o", str(out), "--format",
                            "docx"], cwd=REPO, env=clean_env(), capture_output=True, text=True, timeout=60, check=False)
    assert wrong.returncode == 2 and "choose from markdown, html, latex, json, chunks or all" in wrong.stderr
    # a model task needs a server (with a vLLM engine): in process it is refused before anything is read
    tasked = subprocess.run([sys.executable, "-m", "services.cli", "parse", str(good), "-o", str(out), "--task",
                             "summarize"], cwd=REPO, env=clean_env(), capture_output=True, text=True, timeout=60,
                            check=False)
    assert tasked.returncode == 2 and "--task needs --server" in tasked.stderr


def test_parse_in_process_reads_word_and_web_documents_natively(corpus: Path, tmp_path: Path) -> None:
    """No server and no LibreOffice needed: a DOCX and an HTML page are read from their own structure."""
    office = corpus / "office"
    if not office.is_dir():
        pytest.skip("no corpus/office")
    sources = [office / "docx_word_tables" / "word_tables.docx", office / "html_table_06" / "table_06.html"]
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "services.cli", "parse", *map(str, sources), "-o", str(out),
                             "--format", "markdown,json"], cwd=REPO, env=clean_env(), capture_output=True,
                            text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    for source in sources:
        truth = source.with_name(source.name + ".md").read_text()
        # distinct words: the reference repeats a merged cell's text in each cell it covers, the output spans it
        wanted, found = set(words(truth)), set(words((out / f"{source.stem}.md").read_text()))
        assert len(wanted & found) / len(wanted) >= 0.98, sorted(wanted - found)
        [page] = json.loads((out / f"{source.stem}.json").read_text())["pages"]
        assert page["engine"] == "native" and all(e.get("bbox") is None for e in page["elements"])
    assert '<td colspan="2">Merged Cell 1.1 1.2</td>' in (out / "word_tables.md").read_text()
