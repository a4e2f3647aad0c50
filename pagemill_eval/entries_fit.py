"""Fit and judge the beside-entries penalty on saved eval outputs: confidence − weight × `beside_entries_share`.

`beside_entries_share` is the share of a page read without a producer's order (by OCR) whose words sit in text
blocks that stand beside another line for line, one of one-word lines beside one of sentences
(`beside.entry_readings`): a reference card's descriptions read as a paragraph beside a paragraph of their syntax, a
form's labels beside their values. It needs the words' boxes, so it is read as the engine recorded it, with the
penalty the engine took off (`beside_entries_penalty`) added back; the fit is `flow_fit`'s (`one_penalty.Recorded`).

    python -m pagemill_eval.entries_fit gen28=gen28.json:out/gen28 wl28=wl28.json:out/wl28 ... [--scan] \\
        [--judge debian56=deb56.json:out/deb56]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pagemill_eval import one_penalty
from services.worker.engines.cpu.tuning import BESIDE_ENTRIES_PENALTY

RECORDED = one_penalty.Recorded("beside_entries_share", "beside_entries_penalty", BESIDE_ENTRIES_PENALTY)


def main(argv: Sequence[str]) -> int:
    return RECORDED.main(argv, "python -m pagemill_eval.entries_fit",
                         "Fit and judge the beside-entries penalty on saved eval outputs.")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
