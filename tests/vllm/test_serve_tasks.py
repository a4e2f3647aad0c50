"""`pagemill serve` against the real vLLM test server: the three model tasks and multi-page requests end to end.

`serve` runs as a user starts it (embedded Redis, SQLite, its own gateway, workers, results and reconciler),
configured only through PAGEMILL_ variables that point its vllm engine at the tier's server. The answers are
random-weight noise; what is asserted is what the platform makes of them: an extraction that is valid against
the schema and names only elements the document has (vLLM structured outputs), a translation with every page,
a summary, requests that reached vLLM (its own counters), several pages per request split back into pages.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from pagemill_client import Client

from tests.harness import REPO
from tests.servers import free_port, wait_for
from tests.vllm_server import VllmServer, engine_env

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

STOP_EARLY = {"stop": ["e", "a", " ", "|"], "min_tokens": 8}
# What an extraction may hold, bounded so that even noise ends inside the token budget; `$defs` and `$ref`
# as users write them.
INVOICE = {
    "type": "object", "additionalProperties": False, "required": ["number", "paid", "currency", "lines"],
    "properties": {
        "number": {"type": "integer", "minimum": 1, "maximum": 99999},
        "paid": {"type": "boolean"},
        "currency": {"enum": ["EUR", "USD", "CHF"]},
        "lines": {"type": "array", "maxItems": 3, "items": {"$ref": "#/$defs/line"}},
    },
    "$defs": {"line": {"type": "object", "additionalProperties": False, "required": ["quantity"],
                       "properties": {"quantity": {"type": "integer", "minimum": 0, "maximum": 99},
                                      "code": {"type": "string", "maxLength": 8}}}},
}


class Served:
    def __init__(self, url: str, key: str) -> None:
        self.url, self.key = url, key

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.key}"}, timeout=60)

    def upload(self, path: Path, **fields: str) -> dict[str, Any]:
        with self.client() as client, path.open("rb") as handle:
            response = client.post("/v1/documents", files={"file": (path.name, handle)}, data=fields)
        assert response.status_code == 202, response.text
        body: dict[str, Any] = response.json()
        return body

    def wait_done(self, document_id: str, timeout: float = 300) -> dict[str, Any]:
        state: dict[str, Any] = {}

        def done() -> bool:
            nonlocal state
            with self.client() as client:
                state = client.get(f"/v1/documents/{document_id}", params={"wait": 5}).json()
            return state["status"] in ("succeeded", "partial", "failed", "cancelled")

        wait_for(done, timeout, f"document {document_id}")
        return state

    def result(self, document_id: str, fmt: str) -> httpx.Response:
        with self.client() as client:
            return client.get(f"/v1/documents/{document_id}/result", params={"format": fmt})


ServeFactory = Callable[..., Served]


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[ServeFactory]:
    processes: list[subprocess.Popen[bytes]] = []

    def start(vllm_server: VllmServer, engine: dict[str, Any] | None = None,
              tasks: dict[str, Any] | None = None) -> Served:
        port, data_dir = free_port(), tmp_path / f"serve-{len(processes)}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("PAGEMILL_") and k != "PROMETHEUS_MULTIPROC_DIR"}
        env.update(PYTHONPATH=str(REPO), **engine_env({**vllm_server.engine, **(engine or {})}),
                   **engine_env(tasks or {}, "PAGEMILL_TASKS__"))
        log = (tmp_path / f"serve-{len(processes)}.log").open("wb")
        process = subprocess.Popen([sys.executable, "-m", "services.cli", "serve", "--port", str(port),
                                    "--data-dir", str(data_dir), "--workers", "1"], cwd=tmp_path, env=env,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        processes.append(process)
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: httpx.get(f"{url}/readyz", timeout=2).status_code == 200, 120, "pagemill serve")
        return Served(url, (data_dir / "api_key").read_text().strip())

    yield start
    for process in processes:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def requests_done(server: VllmServer) -> float:
    return server.metrics().get("vllm:request_success_total", 0.0)


def element_ids(served: Served, document_id: str) -> set[str]:
    body = served.result(document_id, "json").json()
    return {e["id"] for page in body["pages"] for e in page.get("elements") or []}


def test_extract_translate_and_summarize_answer_through_pagemill_serve(
        serve: ServeFactory, vllm_server: VllmServer, corpus: Path, tmp_path: Path) -> None:
    served = serve(vllm_server, engine={"request_extra": STOP_EARLY}, tasks={"max_tokens": 1024})
    pdf = corpus / "dev/docling_multi_page/multi_page.pdf"
    before = requests_done(vllm_server)
    # fast mode: the pages are read by the cpu engine; the tasks go to vLLM all the same
    extract = served.upload(pdf, pages="1-2", mode="fast", task="extract", schema=json.dumps(INVOICE))
    translate = served.upload(pdf, pages="1-2", mode="fast", task="translate", target_language="German")
    summarize = served.upload(pdf, pages="1-3", mode="fast", task="summarize")
    states = {name: served.wait_done(doc["id"]) for name, doc in
              (("extract", extract), ("translate", translate), ("summarize", summarize))}
    assert {name: s["status"] for name, s in states.items()} == dict.fromkeys(states, "succeeded"), states
    assert states["extract"]["formats"][-1] == "extraction" and states["extract"]["task"] == "extract"
    assert states["translate"]["formats"][-1] == "translation"
    assert states["summarize"]["formats"][-1] == "summary"

    extraction = served.result(extract["id"], "extraction").json()
    jsonschema.validate(extraction["data"], INVOICE)  # valid against the schema, from random weights
    assert extraction["model"] == "tiny-vlm" and extraction["completion_tokens"] > 0
    assert set(extraction["element_ids"]) <= element_ids(served, extract["id"])

    translation = served.result(translate["id"], "translation")
    assert translation.headers["content-type"].startswith("text/markdown")
    assert translation.text.count("<!-- page 1 -->") == 1 and translation.text.count("<!-- page 2 -->") == 1
    assert len(served.result(summarize["id"], "summary").text.strip()) > 0

    # One request for the extraction, one per translated page, one for the summary: all answered by vLLM.
    assert requests_done(vllm_server) - before >= 4
    # A format the document's task did not make is not there; the parse formats always are.
    missing = served.result(extract["id"], "summary")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert "<!-- page 2 -->" in served.result(extract["id"], "markdown").text

    # The Python SDK's parse() with a task: it fetches Markdown and the task's answer.
    with Client(served.url, api_key=served.key) as sdk:
        summarized = sdk.parse(pdf, pages="1", mode="fast", task="summarize", timeout=300)
    assert summarized.status == "succeeded" and set(summarized.results) == {"markdown", "summary"}
    assert summarized.results["summary"].strip() and "<!-- page 1 -->" in summarized.results["markdown"]
    # `pagemill parse --server --task translate` (through the SDK): the translation beside the Markdown.
    out = tmp_path / "out"
    parsed = subprocess.run([sys.executable, "-m", "services.cli", "parse", str(pdf), "-o", str(out), "--server",
                             served.url, "--task", "translate", "--target-language", "German"], cwd=REPO,
                            env={**{k: v for k, v in os.environ.items() if not k.startswith("PAGEMILL_")},
                                 "PAGEMILL_API_KEY": served.key}, capture_output=True, text=True, timeout=600,
                            check=False)
    assert parsed.returncode == 0, parsed.stderr + parsed.stdout
    translated = (out / "multi_page.translation.md").read_text()
    assert all(translated.count(f"<!-- page {n} -->") == 1 for n in range(1, 6)), translated[:2000]
    assert all((out / "multi_page.md").read_text().count(f"<!-- page {n} -->") == 1 for n in range(1, 6))


def test_a_multi_page_preset_reads_two_pages_per_request_through_pagemill_serve(
        serve: ServeFactory, hunyuan_server: VllmServer, corpus: Path) -> None:
    """hunyuan_ocr (two pages per request) on four pages: two requests. The random weights are held to the
    marked answer form by a regex (vLLM structured outputs), so the split runs on what vLLM answered.
    One GPU thread, so no other thread takes a page of a group before the group is claimed."""
    marked = {"structured_outputs": {"regex": r"<!-- page 1 -->\n[a-z]{6,20}( [a-z]{2,12}){3,6}\.\n"
                                              r"<!-- page 2 -->\n[a-z]{6,20}( [a-z]{2,12}){3,6}\."}}
    served = serve(hunyuan_server, engine={"request_extra": marked, "max_tokens": 96, "max_in_flight": 1})
    before = hunyuan_server.metrics()
    created = served.upload(corpus / "dev/docling_multi_page/multi_page.pdf", pages="1-4", mode="accurate")
    assert served.wait_done(created["id"])["status"] == "succeeded"
    after = hunyuan_server.metrics()
    pages = served.result(created["id"], "json").json()["pages"]
    with served.client() as client:
        details = [client.get(f"/v1/documents/{created['id']}/pages/{n}").json()["details"] for n in (1, 2, 3, 4)]
    assert [d["group"]["split"] for d in details] == ["ok"] * 4, details
    assert [d["group"]["pages"] for d in details] == [[1, 2], [1, 2], [3, 4], [3, 4]]
    assert all(p["engine"] == "vllm" and not p["is_fallback"] and p["markdown"].strip() for p in pages), pages
    assert after["vllm:request_success_total"] - before.get("vllm:request_success_total", 0) == 2
    assert after["vllm:prompt_tokens_total"] - before.get("vllm:prompt_tokens_total", 0) == sum(
        p["prompt_tokens"] for p in pages)
