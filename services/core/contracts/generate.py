"""`make proto`: regenerate the committed Python code of `proto/pagemill/v1/*.proto` with grpcio-tools."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PROTO_DIR = ROOT / "proto"
OUT_DIR = ROOT / "services" / "core" / "contracts"


def generate(out_dir: Path = OUT_DIR) -> list[Path]:
    from grpc_tools import protoc

    protos = sorted(PROTO_DIR.glob("pagemill/v1/*.proto"))
    include = Path(protoc.__file__).parent / "_proto"
    args = ["protoc", f"-I{PROTO_DIR}", f"-I{include}", f"--python_out={out_dir}", f"--pyi_out={out_dir}",
            *map(str, protos)]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    return sorted(out_dir.glob("pagemill/v1/*_pb2.py*"))


if __name__ == "__main__":
    for path in generate():
        print(path.relative_to(ROOT))
    sys.exit(0)
