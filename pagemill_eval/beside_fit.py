"""Fit and judge the beside-order penalty on saved eval outputs: confidence − weight × `beside_order_share`.

`beside_order_share` is the share of a page's words in text blocks that stand beside another line for line and are
read in another order than the text layer's producer wrote them (`beside.beside_readings`: the producer's jumps
between their runs that cross from one block to another beyond what a reading block by block makes, at least
`tuning.BESIDE_ORDER_MIN_DISORDER` of them): a reference card's descriptions read as a paragraph beside a `code`
block of their syntax. It needs the text layer's runs and the words' boxes, so it is read as the engine recorded it,
with the penalty the engine took off (`beside_order_penalty`) added back; the fit is `flow_fit`'s
(`one_penalty.Recorded`).

    python -m pagemill_eval.beside_fit gen28=gen28.json:out/gen28 wl28=wl28.json:out/wl28 ... \\
        [--judge debian55=deb55.json:out/deb55]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pagemill_eval import one_penalty
from services.worker.engines.cpu.tuning import BESIDE_ORDER_PENALTY

RECORDED = one_penalty.Recorded("beside_order_share", "beside_order_penalty", BESIDE_ORDER_PENALTY)


def main(argv: Sequence[str]) -> int:
    return RECORDED.main(argv, "python -m pagemill_eval.beside_fit",
                         "Fit and judge the beside-order penalty on saved eval outputs.")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
