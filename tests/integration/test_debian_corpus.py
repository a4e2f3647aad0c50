"""The Debian corpus script on a real package built with dpkg-deb: every distinct shipped PDF, once, recorded."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pagemill_eval.calibset import write_set
from pagemill_eval.corpus import read_manifest
from pagemill_eval.debian_corpus import fetch, write_corpus
from tests.pdfs import SENTENCE, make_pdf

pytestmark = pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb is Debian's")


def _deb(tmp_path: Path) -> Path:
    """A package shipping a manual, the same manual gzipped (Debian's habit), a symbolic link to it, a second
    document and a file that is no PDF."""
    root = tmp_path / "pkg"
    docs = root / "usr/share/doc/pm-test-doc"
    docs.mkdir(parents=True)
    (root / "DEBIAN").mkdir()
    (root / "DEBIAN/control").write_text("Package: pm-test-doc\nVersion: 1:2.0-1\nArchitecture: all\n"
                                         "Maintainer: nobody <nobody@example.org>\nDescription: test\n")
    manual = make_pdf(lines=[f"{n} manual {SENTENCE}" for n in range(1, 9)])
    (docs / "manual.pdf").write_bytes(manual)
    (docs / "copy.pdf.gz").write_bytes(gzip.compress(manual))
    (docs / "link.pdf").symlink_to("manual.pdf")
    (docs / "card.pdf").write_bytes(make_pdf(lines=[f"{n} card {SENTENCE}" for n in range(1, 9)]))
    (docs / "README").write_text("not a pdf\n")
    out = tmp_path / "debs"
    out.mkdir()
    subprocess.run(["dpkg-deb", "--root-owner-group", "-b", str(root), str(out / "pm-test-doc_1%3a2.0-1_all.deb")],
                   check=True, capture_output=True)
    return out


def test_every_distinct_pdf_once_with_its_provenance(tmp_path: Path) -> None:
    debs = _deb(tmp_path)
    deb = fetch("pm-test-doc=1:2.0-1", debs)  # already there: found by name and version, nothing downloaded
    rows = write_corpus([deb], tmp_path / "corpus")

    assert [row["file"] for row in rows] == ["debian_pm_test_doc_card/card.pdf",
                                             "debian_pm_test_doc_copy/copy.pdf"]  # the manual is copy's twin
    cases = read_manifest(tmp_path / "corpus")
    assert [c.kinds for c in cases] == [("digital",), ("digital",)]
    assert all(c.input_path.read_bytes().startswith(b"%PDF") for c in cases)
    provenance = json.loads((tmp_path / "corpus/provenance.json").read_text())
    assert {p["package"] for p in provenance} == {"pm-test-doc"}
    assert {p["version"] for p in provenance} == {"1:2.0-1"}
    assert [p["path"] for p in provenance] == ["usr/share/doc/pm-test-doc/card.pdf",
                                               "usr/share/doc/pm-test-doc/copy.pdf.gz"]
    assert [p["derived"] for p in provenance] == [False, True]

    generated = write_set([tmp_path / "corpus"], tmp_path / "calib", seed=1, kinds_per_page=2)
    assert len(generated) == 4 and all(c.source.corpus == "corpus" for c in generated)
    assert "card" in (tmp_path / "calib" / generated[0].case_id / f"{generated[0].case_id}.txt").read_text()


def test_a_package_without_its_version_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        fetch("pm-test-doc", _deb(tmp_path))  # reproducible means an exact version, never "the newest"
