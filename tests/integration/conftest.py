"""Fixtures the integration tests share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from pagemill_eval.calibset import MANIFEST_FIELDS
from services.core.settings import Settings
from services.worker.engines.cpu import CpuEngine
from tests.harness import redis_database
from tests.pdfs import make_pdf


@pytest.fixture
def broker(redis_server: str) -> Iterator[tuple[str, redis.Redis]]:
    """A Redis database of its own on the session's server (flushed before and after): its URL and a client."""
    url = redis_database(redis_server)
    client = redis.Redis.from_url(url)
    yield url, client
    client.flushdb()
    client.close()


@pytest.fixture(scope="module")
def engine() -> CpuEngine:
    """The cpu engine on default settings (a test module that needs another engine defines its own)."""
    return CpuEngine(Settings())


@pytest.fixture()
def wordy_corpus(tmp_path: Path) -> Path:
    """Two born-digital pages of 50 lines of made-up words (1,000 distinct, ten initials): enough for an index
    or a card's columns."""
    syllables = ("ka", "lo", "mi", "ne", "pu", "ra", "si", "tu", "ve", "zo")
    vocabulary = [a + b + c for a in syllables for b in syllables for c in syllables]
    root = tmp_path / "wordy"
    rows = []
    for number, name in enumerate(("first", "second")):
        (root / name).mkdir(parents=True)
        lines = [" ".join(vocabulary[(7 * (line * 10 + n) + 500 * number) % 1000] for n in range(10))
                 for line in range(50)]
        (root / name / f"{name}.pdf").write_bytes(make_pdf(lines=lines, size=8.0))
        rows.append(f"{name}/{name}.pdf\t-\t-\t-\tMIT\tdigital\t1\t-\t[GT:none]\n")
    (root / "MANIFEST.tsv").write_text("\t".join(MANIFEST_FIELDS) + "\n" + "".join(rows), encoding="utf-8")
    return root
