"""Fit and judge the section-break penalty on saved eval outputs: confidence − weight × `table_flow_share`.

`table_flow_share` (`pagecolumns.table_flow_share`) is the share of a page's words sitting in a table two of whose
page columns (wide column strips, or runs of narrow ones set alike, as an index's; strips or runs set alike in a
table with fewer than two of those, `tuning.TABLE_FLOW_MIN_ALIKE_WIDTH`) break into sections at different
heights (a blank line in one where the other writes a line, both ways, at least `tuning.TABLE_FLOW_MIN_BREAKS`
times; once on a page read by OCR, `TABLE_FLOW_MIN_BREAKS_UNORDERED`): page columns with their own headings, a
reference card or an index, read across as one table's rows with nothing around them for `table_gutter_share` to
see. It needs the words' boxes, so it is read as the engine recorded it, with the penalty the engine took off
(`table_flow_penalty`) added back; the fit is `gutter_fit`'s
(`one_penalty.Recorded`).

    python -m pagemill_eval.flow_fit gen28=gen28.json:out/gen28 gen30=gen30.json:out/gen30 \\
        [--judge debian45=deb45.json:out/deb45]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pagemill_eval import one_penalty
from services.worker.engines.cpu.tuning import TABLE_FLOW_PENALTY

RECORDED = one_penalty.Recorded("table_flow_share", "table_flow_penalty", TABLE_FLOW_PENALTY)


def main(argv: Sequence[str]) -> int:
    return RECORDED.main(argv, "python -m pagemill_eval.flow_fit",
                         "Fit and judge the section-break penalty on saved eval outputs.")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
