"""SQL statements per document and per page of the control plane, by step: the end-to-end run of
`make bench-control` (fake engine, 4 uploaders) with every process counting its statements (and its BEGIN and
COMMIT round trips) through a SQLAlchemy event hook (`bench/statements_hook/sitecustomize.py`), each statement
named by the step of a page's way on its stack.

Run: `python -m bench.control_statements --documents 40 --pages 25` (`--shapes` lists each step's statements).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.control_plane import fake_platform, local_servers, wait_all
from pagemill_eval.sections import write_section
from tests.harness import CORPUS, REPO, Platform
from tests.pdfs import repeat_pages

HOOK = Path(__file__).resolve().parent / "statements_hook"
WARM_TASKS_TIMEOUT_S = 60.0


def count_run(platform: Platform, workdir: Path, folder: Path, documents: int, pages: int,
              uploaders: int = 4) -> tuple[collections.Counter[tuple[str, str]], collections.Counter[tuple[str, str]]]:
    """(step, verb) and (step, statement shape) counts of the uploads and their documents, warm-up excluded."""
    source = workdir / f"statements-{pages}.pdf"
    source.write_bytes(repeat_pages(CORPUS / "dev" / "docling_multi_page" / "multi_page.pdf", pages))
    platform.start(concurrency=2)
    platform.wait_done(platform.upload(source, cache="false")["id"])  # warm: imports, connections, tokenizer
    # A chunk may still be writing after its document ended (its progress statement, when the other chunk ended
    # the last page meanwhile): the mark waits until every task of the warm document has returned, i.e. every
    # message is acknowledged (acks_late), so what the files hold up to here is the warm-up's alone.
    deadline = time.monotonic() + WARM_TASKS_TIMEOUT_S
    while (left := platform.messages_waiting()) > 0:
        if time.monotonic() > deadline:
            raise AssertionError(f"{left} messages of the warm document still unacknowledged after "
                                 f"{WARM_TASKS_TIMEOUT_S:.0f} s")
        time.sleep(0.01)
    # the processes keep their files open: what they wrote up to here is the warm-up's, skipped when read
    warm = {path.name: path.stat().st_size for path in folder.glob("*.tsv")}
    body = source.read_bytes()
    with platform.client(timeout=120) as shared:

        def upload(_: int) -> str:
            response = shared.post("/v1/documents", files={"file": (source.name, body)}, data={"cache": "false"})
            assert response.status_code == 202, response.text
            return str(response.json()["id"])

        with ThreadPoolExecutor(uploaders) as pool:
            ids = list(pool.map(upload, range(documents)))
        wait_all(platform, ids)
    verbs: collections.Counter[tuple[str, str]] = collections.Counter()
    shapes: collections.Counter[tuple[str, str]] = collections.Counter()
    for path in folder.glob("*.tsv"):
        with path.open("rb") as file:
            file.seek(warm.get(path.name, 0))
            text = file.read().decode()
        for line in text.splitlines():
            step, verb, shape = line.split("\t")
            verbs[(step, verb)] += 1
            shapes[(step, shape)] += 1
    return verbs, shapes


def table(label: str, verbs: collections.Counter[tuple[str, str]], shapes: collections.Counter[tuple[str, str]],
          documents: int, pages: int, with_shapes: bool) -> list[str]:
    by_step: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for (step, verb), count in verbs.items():
        by_step[step][verb] += count
    total = sum(verbs.values())
    lines = [f"**{label}**: {documents} documents of {pages} pages; {total / documents:.1f} statements per document "
             f"({total / (documents * pages):.2f} per page), BEGIN and COMMIT round trips included", "",
             "| step | per document | per page | of which |", "|---|---|---|---|"]
    for step, counts in sorted(by_step.items(), key=lambda item: -sum(item[1].values())):
        n = sum(counts.values())
        kinds = ", ".join(f"{verb} {count / documents:.1f}" for verb, count in counts.most_common())
        lines.append(f"| {step} | {n / documents:.1f} | {n / (documents * pages):.2f} | {kinds} |")
    if with_shapes:
        lines += ["", "| step | statement | per document |", "|---|---|---|"]
        for (step, shape), count in sorted(shapes.items(), key=lambda item: (item[0][0], -item[1])):
            lines.append(f"| {step} | `{shape}` | {count / documents:.2f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--documents", type=int, default=40)
    parser.add_argument("--pages", type=int, default=25)
    parser.add_argument("--databases", default="postgresql,sqlite")
    parser.add_argument("--shapes", action="store_true", help="list each step's statements")
    parser.add_argument("--write", type=Path, default=None, help="update this Markdown file's statements section")
    args = parser.parse_args()
    sections: list[str] = []
    with tempfile.TemporaryDirectory(prefix="pagemill-statements-") as tmp:
        workdir = Path(tmp)
        with local_servers(workdir) as (redis_url, pg_server):
            for label in args.databases.split(","):
                folder = workdir / label / "statements"
                folder.mkdir(parents=True)
                hook = {"PAGEMILL_BENCH_STATEMENTS": str(folder), "PYTHONPATH": f"{HOOK}{os.pathsep}{REPO}"}
                with fake_platform(label, workdir, redis_url, pg_server, hook) as platform:
                    verbs, shapes = count_run(platform, workdir / label, folder, args.documents, args.pages)
                sections += table(label, verbs, shapes, args.documents, args.pages, args.shapes) + [""]
    text = "\n".join([
        "### Statements per document, by step (`python -m bench.control_statements`)", "",
        f"Command: `python -m bench.control_statements --documents {args.documents} --pages {args.pages}`; "
        f"measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. The end-to-end run of `make bench-control` "
        "(fake engine, 4 uploaders, `?wait=` polls), every process counting its SQL statements and its BEGIN and "
        "COMMIT round trips by the step on its stack (a SQLAlchemy event hook loaded for the bench alone).", "",
        *sections])
    print(text)
    if args.write:
        write_section(args.write, text, "control-statements")


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
