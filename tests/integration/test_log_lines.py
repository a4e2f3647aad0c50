"""Log lines of processes sharing one stderr stay whole: Celery's pool children write JSON lines to the same pipe,
under PYTHONUNBUFFERED as in the images, and a log reader parses every line (found by test-deploy, whose replica
test lost two `page.parsed` lines that two children logged at the same moment)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

LINES = 3000  # per process: with the line and its newline written apart, 2 x 3000 gave ~70 mixed lines here

CHILD = """
import sys
from services.core.logging import configure_logging, get_logger
configure_logging(json=True)
log = get_logger("lines")
for i in range(int(sys.argv[1])):
    log.info("page.parsed", index=i, process=sys.argv[2], payload="x" * 200)
"""


def test_two_processes_on_one_stderr_write_whole_json_lines() -> None:
    read_end, write_end = os.pipe()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    root = Path(__file__).resolve().parents[2]
    children = [subprocess.Popen([sys.executable, "-c", CHILD, str(LINES), str(n)], stderr=write_end, env=env,
                                 cwd=root) for n in range(2)]
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        lines = pipe.read().decode().splitlines()
    assert [child.wait(timeout=120) for child in children] == [0, 0]
    mixed = []
    seen = set()
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            mixed.append(line[:200])
            continue
        seen.add((event["process"], event["index"]))
    assert not mixed, f"{len(mixed)} of {len(lines)} lines are not one JSON object: {mixed[:3]}"
    assert len(seen) == 2 * LINES, "every event on a line of its own"
