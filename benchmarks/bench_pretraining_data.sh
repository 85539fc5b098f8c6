#!/usr/bin/env bash
# create_pretraining_data.py: instances/s and peak RSS on the shared corpus, through the shared
# harness (../shared/bench/bench_pretraining_data.sh, /usr/bin/time -v), with
# max_seq_length=128, max_predictions_per_seq=20, dupe_factor=5 (the harness defaults).
#
#   benchmarks/bench_pretraining_data.sh [REPEATS] [TAGS]
#
# 1x = the four bert_format corpus files repeated 5 times (47.9 MB), 4x = 20 times (191.6 MB).
# Rows go to stdout (markdown) and JSON lines to $JSON (default
# benchmarks/results/pretraining_data.jsonl, beside the page that shows them).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH="$ROOT/../shared/bench"
CORPUS="$ROOT/../shared/data/corpus/bert_format"
REPEATS="${1:-1}"
TAGS="${2:-1x 4x}"
JSON="${JSON:-$ROOT/benchmarks/results/pretraining_data.jsonl}"
SCRATCH="$(mktemp -d)"
FILES=("$CORPUS/wikitext2_raw_valid_test.sentences.txt" "$CORPUS/gutenberg_prose.sentences.txt"
       "$CORPUS/state_union.sentences.txt" "$CORPUS/inaugural.sentences.txt")
export TF_CPP_MIN_LOG_LEVEL=2
for tag in $TAGS; do
  copies=$(( ${tag%x} * 5 ))
  inputs=()
  for ((i = 0; i < copies; i++)); do inputs+=("${FILES[@]}"); done
  "$BENCH/bench_pretraining_data.sh" --impl project \
      --project_cmd "python3 $ROOT/create_pretraining_data.py" \
      --vocab "$ROOT/../shared/data/reference/vocab.txt" --repeats "$REPEATS" --tag "$tag" \
      --out "$SCRATCH" --json "$JSON" -- "${inputs[@]}"
done
