"""One page of a corpus file through an engine, as the worker would hand it over; a generated card to hand it."""

from __future__ import annotations

from pathlib import Path

from pagemill_eval.calibset import write_set
from services.core.pdf import PDF, split_pdf
from services.worker.engines.base import Engine, PageInput, PageOutput

IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".webp": "image/webp", ".tif": "image/tiff"}


def parse_file(engine: Engine, path: Path, page: int = 1) -> PageOutput:
    """Page `page` (1-based) of a PDF, or the image, parsed by `engine`."""
    data = path.read_bytes()
    if path.suffix == ".pdf":
        return engine.parse(PageInput("test", page - 1, PDF, next(split_pdf(data, [page]))))
    return engine.parse(PageInput("test", 0, IMAGE_TYPES[path.suffix], data))


def generated_card(corpus: Path, out: Path, degradation: str, *, seed: int, tabs: bool = False,
                   long_sections: bool = False, wordy: bool = False) -> Path:
    """The PDF of the reference card `pagemill calibrate-set` writes under `out` from `corpus`'s pages (`--cards`,
    `seed`, one kind a page; `--card-tabs`, `--card-long-sections`, `--card-wordy` as asked) in `degradation`
    (`cards`: born digital; `cards_scan`: its rendering)."""
    cases = write_set([corpus], out, seed=seed, kinds_per_page=1, cards=2, card_tabs=tabs,
                      card_long_sections=long_sections, card_wordy=wordy)
    [card] = [c for c in cases if c.degradation == degradation]
    return out / card.case_id / f"{card.case_id}.pdf"
