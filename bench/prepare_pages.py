"""`python -m bench.prepare_pages`: how fast a GPU worker prepares pages for the model, in its threads or a pool.

The pages a GPU worker sends to vLLM need the cpu engine's reading and a PNG (services/worker/pipeline/prepare.py).
This runs the same digital dev pages through `run_page` with a stand-in model that answers at once, from as many
threads as a GPU worker runs (2 x max_in_flight), with the pages prepared in those threads (0 processes) or by a
`Preparer` of 1, 2… processes: pages/s of preparation alone, what vLLM's request slots could be fed at most.
Rounds alternate the ways to cancel a shared machine's noise; each way's pool is started and warmed first.
"""

from __future__ import annotations

import argparse
import os
import platform as host
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from bench.control_plane import cpu_seconds
from bench.gpu_path import choose_pages
from pagemill_eval.sections import write_section
from services.core.pdf import PDFIUM_LOCK, copy_page, open_pdf, png_bytes, png_up_filtered, render_pdf_page
from services.core.settings import Settings
from services.worker.engines.base import PageInput, PageOutput
from services.worker.engines.vllm.presets import Preset, get_preset
from services.worker.pipeline.page import run_page
from services.worker.pipeline.prepare import Preparer
from tests.harness import CORPUS


@dataclass
class AnsweringModel:
    """A generative engine that answers every page at once with its anchor's first line (no server)."""

    preset: Preset = field(default_factory=lambda: get_preset("generic"))
    name: str = "vllm"
    model: str = "instant"
    needs_text_layer: bool = True
    needs_image: bool = True
    needs_anchor: bool = True
    generative: bool = True
    render_longest_side: int = 1288

    def parse(self, page: PageInput, *, temperature: float = 0.0) -> PageOutput:
        assert page.image is not None
        first = next((line for line in (page.anchor or "").splitlines() if line.strip()), "page")
        return PageOutput(markdown=first + "\n", engine=self.name, model=self.model, completion_tokens=1)

    def check_health(self) -> None:
        return None


def pages_of(corpus: Path, count: int, per_document: int) -> list[PageInput]:
    pages = []
    for source in choose_pages(corpus, count, per_document):
        with PDFIUM_LOCK:
            document = open_pdf(source.path.read_bytes())
            singles = [copy_page(document, number) for number in range(1, source.pages + 1)]
            document.close()
        pages += [PageInput(source.case_id, index, "application/pdf", data) for index, data in enumerate(singles)]
    return pages


def png_levels(pages: list[PageInput], longest_side: int) -> str:
    """CPU and size of the model's PNG as the pipeline writes it (`png_up_filtered`, zlib level 1) and as Pillow
    does at level 1 and at its default 6: the same pixels every way."""
    ways = {"up": lambda image: png_up_filtered(image, compress_level=1),
            1: lambda image: png_bytes(image, compress_level=1), 6: lambda image: png_bytes(image, compress_level=6)}
    spent = {way: [0.0, 0] for way in ways}
    for page in pages:
        image = render_pdf_page(page.data, longest_side=longest_side)
        for way, totals in spent.items():
            started = time.process_time()
            totals[1] += len(ways[way](image))
            totals[0] += time.process_time() - started
    (cpu_up, size_up), (cpu1, size1), (cpu6, size6) = spent["up"], spent[1], spent[6]
    return (f"The same pages' PNG at {longest_side} px: the pipeline's (`png_up_filtered`: PNG's Up filter on every "
            f"row, zlib level 1) {1000 * cpu_up / len(pages):.1f} ms of CPU and {size_up / len(pages) / 1024:.0f} KiB "
            f"a page; Pillow's at zlib level 1 {1000 * cpu1 / len(pages):.1f} ms and {size1 / len(pages) / 1024:.0f} "
            f"KiB, at its default 6 {1000 * cpu6 / len(pages):.1f} ms and {size6 / len(pages) / 1024:.0f} KiB.")


def one_round(pages: list[PageInput], settings: Settings, preparer: Preparer | None, threads: int) -> float:
    model = AnsweringModel()
    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        outcomes = list(pool.map(lambda page: run_page(model, page, settings, preparer=preparer), pages))
    elapsed = time.perf_counter() - started
    assert all(not o.is_fallback for o in outcomes)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=CORPUS / "dev")
    parser.add_argument("--pages", type=int, default=24)
    parser.add_argument("--per-document", type=int, default=4)
    parser.add_argument("--max-in-flight", type=int, default=8)
    parser.add_argument("--processes", default="0,1,2", help="comma-separated ways: 0 = in the threads")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write", type=Path, default=None, help="update this Markdown file's prepare-pages section")
    args = parser.parse_args()
    settings = Settings(engine={"kind": "vllm", "max_in_flight": args.max_in_flight})
    pages = pages_of(args.corpus, args.pages, args.per_document)
    threads = 2 * args.max_in_flight
    ways = [int(w) for w in args.processes.split(",")]
    preparers = {w: Preparer(settings, w) if w else None for w in ways}
    seconds = {w: 0.0 for w in ways}
    cpu = {w: 0.0 for w in ways}
    try:
        for way in ways:  # warm-up: pools spawned, the cpu engine's models loaded
            one_round(pages, settings, preparers[way], threads)
        for _ in range(args.rounds):
            for way in ways:
                before = cpu_seconds(os.getpid())
                seconds[way] += one_round(pages, settings, preparers[way], threads)
                cpu[way] += cpu_seconds(os.getpid()) - before
                print(way, f"{seconds[way]:.1f} s", flush=True)
    finally:
        for preparer in preparers.values():
            if preparer is not None:
                preparer.close()
    done = len(pages) * args.rounds
    rows = ["| preparing processes | pages | s | pages/s | CPU ms per page | vs in threads |",
            "|---|---|---|---|---|---|"]
    base = done / seconds[0] if 0 in seconds else None
    for way in ways:
        rate = done / seconds[way]
        rows.append(f"| {way or '0 (in the threads)'} | {done} | {seconds[way]:.1f} | {rate:.2f} | "
                    f"{1000 * cpu[way] / done:.0f} | {f'{rate / base:.2f}' if base else ''} |")
    command = (f"python -m bench.prepare_pages --pages {args.pages} --per-document {args.per_document} "
               f"--max-in-flight {args.max_in_flight} --processes {args.processes} --rounds {args.rounds}")
    text = "\n".join([
        "### Preparing pages for the model: in the GPU worker's threads or in processes", "",
        f"Command: `{command}`  ",
        f"Machine: {os.cpu_count()} cores, {host.machine()}, Python {host.python_version()}, 1-minute load "
        f"{os.getloadavg()[0]:.1f} at the end; measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
        f"{len(pages)} digital dev pages through `run_page` from {threads} threads (a GPU worker of max_in_flight "
        f"{args.max_in_flight}), a stand-in model that answers at once: the rate pages can be fed to vLLM at most. "
        "CPU: this process and its pool's, per page.", "", *rows, "", png_levels(pages, 1288)])
    print(text)
    if args.write:
        write_section(args.write, text, name="prepare-pages")


if __name__ == "__main__":
    main()
