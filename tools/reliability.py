"""Writes the fault table of docs/reliability.md from the report `make test-faults` leaves (FAULTS_REPORT).

    make test-faults && python -m tools.reliability .pagemill/faults-report.json --write docs/reliability.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pagemill_eval.sections import write_section

# The order the table reads in: the platform's own processes first, then the servers underneath.
ORDER = ("pool worker", "whole worker", "reconciler", "gateway", "FLUSHDB", "Redis restarted", "PostgreSQL",
         "S3 API")


def _rank(fault: str) -> int:
    return next((i for i, word in enumerate(ORDER) if word in fault), len(ORDER))


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def table(report: dict[str, dict[str, Any]]) -> str:
    lines = ["| fault | documents | pages | lost | duplicated | pages run twice | first page after (s) | "
             "all final after (s) | also measured |",
             "|---|---|---|---|---|---|---|---|---|"]
    for fault in sorted(report, key=lambda name: (_rank(name), name)):
        row = report[fault]
        extra = ", ".join(f"{key} {value}" for key, value in sorted(row.get("extra", {}).items()))
        if row.get("notes"):
            extra = f"{row['notes']}; {extra}" if extra else row["notes"]
        lines.append(f"| {fault} | {row['documents']} | {row['pages']} | {row['lost']} | {row['duplicated']} | "
                     f"{row['rerun']} | {_seconds(row.get('resume_s'))} | {_seconds(row.get('recover_s'))} | "
                     f"{extra} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("report", type=Path)
    parser.add_argument("--write", type=Path, help="replace the `faults` section of this Markdown file")
    args = parser.parse_args()
    text = table(json.loads(args.report.read_text()))
    if args.write:
        write_section(args.write, text, "faults")
    else:
        print(text)


if __name__ == "__main__":
    main()
