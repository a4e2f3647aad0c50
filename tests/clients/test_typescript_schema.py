"""The TypeScript SDK is generated from the OpenAPI schema: the committed clients/typescript/openapi.json must be
what the app serves, and src/schema.ts what openapi-typescript makes of it (`make sdk-generate` refreshes both)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.harness import REPO
from tools.openapi import render

SDK = REPO / "clients" / "typescript"


def test_the_committed_openapi_schema_is_the_one_the_app_serves() -> None:
    assert (SDK / "openapi.json").read_text(encoding="utf-8") == render(), "stale: run make sdk-generate"


def test_the_generated_types_are_fresh(tmp_path: Path) -> None:
    generator = SDK / "node_modules" / ".bin" / "openapi-typescript"
    if shutil.which("node") is None or not generator.exists():
        pytest.skip("openapi-typescript is not installed (make sdk-ts)")
    out = tmp_path / "schema.ts"
    subprocess.run([str(generator), "openapi.json", "-o", str(out)], cwd=SDK, check=True, capture_output=True,
                   timeout=120)
    assert out.read_text() == (SDK / "src" / "schema.ts").read_text(), "stale: run make sdk-generate"
