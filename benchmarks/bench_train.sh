#!/usr/bin/env bash
# One training step (fwd + bwd + AdamW), base preset, sequence 128, batch 16: classification and
# pre-training (MLM on 20 positions + NSP), bert_tf beside keras-hub and HuggingFace PyTorch.
# One variant per process so peak RSS is per implementation. Run on a quiet machine.
#   PY=~/bench-venv/bin/python bash benchmarks/bench_train.sh [rounds]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
bench="$repo/../shared/bench"
PY="${PY:-$HOME/bench-venv/bin/python}"
rounds="${1:-2}"
out="$repo/benchmarks/results/train_base.jsonl"
mkdir -p "$(dirname "$out")"
cd "$bench"
for task in classify pretrain; do
  "$PY" bench_compare.py --rounds "$rounds" --json "$out" -- \
    "$PY bench_train.py --impl hf_torch --task $task --batch 16" \
    "$PY bench_train.py --impl keras_hub --task $task --variants xla --batch 16" \
    "$PY bench_train.py --impl project --project_dir $repo --task $task --variants xla --batch 16"
done
