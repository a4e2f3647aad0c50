"""`pagemill eval` over dev and wide at once, with a peer's saved outputs beside it: one column per corpus and
parser, the pooled confidence AUROC, and a JSON of every report."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from services.cli import main


def test_two_corpora_and_a_peer_are_reported_side_by_side(corpus: Path, tmp_path: Path) -> None:
    saved = tmp_path / "peer"
    cases = ["--cases", "pypdf_*", "--cases", "icdar2013_eu-00*"]
    first = CliRunner().invoke(main, ["eval", str(corpus / "dev"), str(corpus / "wide"), "--engine", "fake", *cases,
                                      "--save-outputs", str(saved), "-q"])
    assert first.exit_code == 0, first.output
    assert sorted(p.name for p in saved.iterdir()) == ["dev", "wide"]  # one folder per corpus
    out = tmp_path / "report.json"
    result = CliRunner().invoke(main, ["eval", str(corpus / "dev"), str(corpus / "wide"), "--engine", "fake",
                                       *cases, "--beside", f"peer={saved}/{{corpus}}", "--json", str(out), "-q"])
    assert result.exit_code == 0, result.output
    header = next(line for line in result.output.splitlines() if "dev/pagemill-fake" in line)
    assert header.split() == ["dev/pagemill-fake", "dev/peer", "wide/pagemill-fake", "wide/peer"]
    assert "conf. AUROC" in result.output and "empty pages" in result.output
    report = json.loads(out.read_text(encoding="utf-8"))
    assert [(Path(r["meta"]["corpus"]).name, r["meta"]["parser"]) for r in report["reports"]] == [
        ("dev", "pagemill-fake"), ("dev", "peer"), ("wide", "pagemill-fake"), ("wide", "peer")]
    # The peer's outputs are the fake engine's, saved: scored alike.
    assert report["reports"][0]["overall"]["teds"] == report["reports"][1]["overall"]["teds"]
    assert set(report["calibration_pooled"]) == {"pagemill-fake", "peer"}
    pooled = report["calibration_pooled"]
    assert pooled["peer"]["samples"] == pooled["pagemill-fake"]["samples"] > 0  # saved with their confidences
