"""Writes the gateway's OpenAPI schema (what `create_app().openapi()` serves) to a file: the TypeScript SDK is
generated from it (`make sdk-generate`); tests/clients/test_typescript_schema.py fails when it is stale."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from services.core.settings import Settings
from services.gateway.app import create_app


def openapi_schema() -> dict[str, Any]:
    # No server is contacted: the schema needs only the app's routes.
    return create_app(Settings(redis_url="redis://127.0.0.1:1/0", database_url="sqlite://")).openapi()


def render() -> str:
    return json.dumps(openapi_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> None:
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "clients/typescript/openapi.json")
    target.write_text(render(), encoding="utf-8")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
