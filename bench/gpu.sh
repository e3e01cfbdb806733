#!/usr/bin/env bash
# Issue 26's GPU figures in one command, on a machine with an NVIDIA GPU:
#   bash bench/gpu.sh                      # sets up, generates the default 10,000 split, measures
#   bash bench/gpu.sh --split DIR [...]    # measures existing split folders
# It prints one JSON (bench/gpu_bench.py says what is in it) and writes it to gpu-bench.json.
# PYTHON names an interpreter whose torch has CUDA (default: the set-up's .venv, after
# DEVELOPERS.md's "On a machine with an NVIDIA GPU" step 1).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${PYTHON:-}" ]]; then
    [[ -x .venv/bin/python ]] || make setup >&2
    PYTHON=.venv/bin/python
fi
"$PYTHON" -c "import torch; assert torch.cuda.is_available(), 'torch sees no GPU'" \
    || echo "gpu.sh: torch sees no GPU; only the CPU figures will be measured" >&2
PYTHONUNBUFFERED=1 "$PYTHON" bench/run.py gpu --out "${OUT_JSON:-gpu-bench.json}" "$@"
