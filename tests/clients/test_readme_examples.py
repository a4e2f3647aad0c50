"""The README's SDK quick start and docs/sdks.md's webhook receiver, run as a new user would against a real platform."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import HTTPServer
from pathlib import Path

import pytest

from tests.harness import REPO, Platform, wait_until

pytestmark = pytest.mark.slow
# Where each snippet lives: the quick start on the README's first screen, the rest in docs/.
DOCUMENTS = [REPO / "README.md", REPO / "docs" / "sdks.md"]


def snippet(marker: str, language: str = "python") -> str:
    found = [match.group(1) for path in DOCUMENTS
             for match in re.finditer(rf"<!-- {marker} -->\n```{language}\n(.*?)```", path.read_text("utf-8"), re.S)]
    assert len(found) == 1, f"{marker}: {len(found)} snippets in {[p.name for p in DOCUMENTS]}, want exactly one"
    return found[0]


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, redis_server: str) -> Iterator[Platform]:
    workdir = tmp_path_factory.mktemp("readme")
    platform = Platform(workdir=workdir, database_url=f"sqlite:///{workdir / 'pagemill.db'}",
                        redis_base_url=redis_server, engine="fake")
    platform.start(concurrency=2)
    yield platform
    platform.stop()


@pytest.fixture
def user_dir(platform: Platform, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """What the quick start expects: the key `pagemill serve` saves, and a report.pdf."""
    (tmp_path / ".pagemill").mkdir()
    (tmp_path / ".pagemill" / "api_key").write_text(f"{platform.api_key}\n")
    shutil.copy(corpus / "dev" / "docling_multi_page" / "multi_page.pdf", tmp_path / "report.pdf")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_python_quick_start_parses_a_file(platform: Platform, user_dir: Path) -> None:
    code = snippet("python-quickstart").replace("http://127.0.0.1:8000", platform.url)
    assert len(code.strip().splitlines()) <= 5
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README quick start", "exec"), {})
    printed = out.getvalue()
    assert "Progress(" in printed and "pages_done=5" in printed
    assert "succeeded <!-- page 1 -->" in printed and "## Page 5" in printed


def test_the_typescript_quick_start_parses_a_file(platform: Platform, user_dir: Path) -> None:
    sdk = REPO / "clients" / "typescript"
    if shutil.which("node") is None or not (sdk / "dist" / "index.js").exists():
        pytest.skip("the TypeScript SDK is not built: make sdk-ts")
    match = re.search(r"```js\n(.*?)```", (REPO / "docs" / "sdks.md").read_text("utf-8"), re.S)
    assert match, "docs/sdks.md lost its TypeScript quick start"
    (user_dir / "node_modules").mkdir()
    (user_dir / "node_modules" / "pagemill-client").symlink_to(sdk)
    (user_dir / "quickstart.mjs").write_text(match.group(1).replace("http://127.0.0.1:8000", platform.url))
    result = subprocess.run(["node", "quickstart.mjs"], cwd=user_dir, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PAGEMILL_API_KEY": platform.api_key or ""}, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("succeeded") and "## Page 5" in result.stdout


def test_the_webhook_receiver_example_accepts_a_real_delivery(platform: Platform, user_dir: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from pagemill_client import Client

    with platform.client() as http:
        secret = http.get("/v1/tenant").json()["webhook_secret"]
    monkeypatch.setenv("WEBHOOK_SECRET", secret)
    code, serve = snippet("receiver-snippet").rsplit("\n\n\n", 1)
    assert serve.startswith("HTTPServer(")
    namespace: dict[str, object] = {}
    exec(compile(code, "docs/sdks.md receiver", "exec"), namespace)
    server = HTTPServer(("127.0.0.1", 0), namespace["Receiver"])  # type: ignore[arg-type]
    printed = io.StringIO()

    def serve_forever() -> None:
        with contextlib.redirect_stdout(printed):
            server.serve_forever()

    threading.Thread(target=serve_forever, daemon=True).start()
    try:
        with Client(platform.url, platform.api_key) as client:
            created = client.submit("report.pdf", pages="1",
                                    webhook_url=f"http://127.0.0.1:{server.server_address[1]}/hooks")
            client.wait(created.id, timeout=60)
        wait_until(lambda: f"document.succeeded {created.id} succeeded" in printed.getvalue(), 60, "the receiver")
        with platform.client() as http:
            deliveries = http.get(f"/v1/webhooks/{created.webhook_id}/deliveries").json()["data"]
        assert deliveries and all(d["status"] == "succeeded" for d in deliveries), deliveries
    finally:
        server.shutdown()
        server.server_close()
