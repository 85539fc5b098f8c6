#!/usr/bin/env bash
# Encoder inference, base preset, sequence 128, batches 1/8/32: bert_tf (XLA) beside
# keras-hub's BertBackbone (XLA) and HuggingFace's PyTorch BertModel, one process per impl,
# interleaved A B / B A by ../shared/bench/bench_compare.py. Run on a quiet machine.
#   PY=~/bench-venv/bin/python bash benchmarks/bench_encoder.sh [rounds]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
bench="$repo/../shared/bench"
PY="${PY:-$HOME/bench-venv/bin/python}"
rounds="${1:-2}"
out="$repo/benchmarks/results/encoder_base.jsonl"
mkdir -p "$(dirname "$out")"
cd "$bench"
"$PY" bench_compare.py --rounds "$rounds" --json "$out" -- \
  "$PY bench_encoder.py --impl keras_hub --variants xla --batches 1,8,32 --ceiling_gflops 179" \
  "$PY bench_encoder.py --impl project --project_dir $repo --variants xla --batches 1,8,32 --ceiling_gflops 179" \
  "$PY bench_encoder.py --impl hf_torch --batches 1,8,32 --ceiling_gflops 179"
