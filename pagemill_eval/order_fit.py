"""Fit and judge the table-order penalty on saved eval outputs: confidence − weight × `table_order_share`.

`table_order_share` is the share of a page's words in tables at least `tuning.TABLE_ORDER_MIN_DISORDER` disordered
(`pagecolumns.table_order_disorder`: for a text-layer table of two page columns or more, the share of its producer's
jumps from one run of text to the next, in content order, that the table's reading does not read on): page columns
the producer wrote down, one after the other, read across as one table's rows with sections too long for
`table_flow_share` to see. It needs the text layer's runs and the words' boxes, so it is read as the engine recorded
it, with the penalty the engine took off (`table_order_penalty`) added back; the fit is `flow_fit`'s
(`one_penalty.Recorded`).

    python -m pagemill_eval.order_fit gen28=gen28.json:out/gen28 lt28=lt28.json:out/lt28 ... \\
        [--judge debian53=deb53.json:out/deb53]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pagemill_eval import one_penalty
from services.worker.engines.cpu.tuning import TABLE_ORDER_PENALTY

RECORDED = one_penalty.Recorded("table_order_share", "table_order_penalty", TABLE_ORDER_PENALTY)


def main(argv: Sequence[str]) -> int:
    return RECORDED.main(argv, "python -m pagemill_eval.order_fit",
                         "Fit and judge the table-order penalty on saved eval outputs.")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
