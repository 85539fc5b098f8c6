#!/usr/bin/env bash
# Pre-training throughput of the `mini` recipe's model (L=4, H=256, A=4, I=1024, vocab 8094,
# seq 128, batch 32; masked LM on 20 positions + NSP), one thread per implementation:
#   1. one training step (fwd + bwd + AdamW) through ../shared/bench: HuggingFace
#      BertForPreTraining (sdpa) vs bert_tf (graph, xla; fp32 -- bench_api.build_train_step has no
#      mixed-precision switch), separate processes interleaved A B C / C B A by bench_compare.py;
#   2. run_pretraining.py end to end, 150 steps (log every 25), fp32 and bf16 + XLA: the
#      examples_per_sec it logs after the first (tracing / compiling) loop.
# Data: a WordPiece vocabulary of 8,094 pieces and records from the shared inaugural corpus.
#   PY=~/bench-venv/bin/python bash benchmarks/bench_pretraining_mini.sh [rounds]
# EXTRA_RUNS="fp32_xla:--jit_compile" adds runner runs (tag:flags).
# Env: PY (bench venv), PROJECT_PY (the project's python, default python3), WORK (scratch dir,
#      default: a new temporary folder), STAGES (default "data compare runner").
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
bench="$repo/../shared/bench"
corpus="$repo/../shared/data/corpus/bert_format/inaugural.sentences.txt"
PY="${PY:-$HOME/bench-venv/bin/python}"
PROJECT_PY="${PROJECT_PY:-python3}"
WORK="${WORK:-$(mktemp -d)}"
STAGES="${STAGES:-data compare runner}"
rounds="${1:-3}"
out="$repo/benchmarks/results/pretraining_mini.jsonl"
model="--layers 4 --hidden 256 --heads 4 --intermediate 1024 --vocab 8094 --seq 128 --batch 32"
export TF_CPP_MIN_LOG_LEVEL=2
mkdir -p "$WORK" "$(dirname "$out")"

wait_quiet() {  # the machine is shared: never measure while a test run is going on
  while pgrep -f "pytest -q" >/dev/null; do echo "waiting for pytest ($(date -u +%T))" >&2; sleep 60; done
}

if [[ " $STAGES " == *" data "* ]]; then
  cd "$repo"
  [[ -s "$WORK/vocab.txt" ]] || "$PROJECT_PY" build_vocab.py --input_file="$corpus" \
      --output_file="$WORK/vocab.txt" --vocab_size=8094 --lower_thresh=1
  test "$(wc -l < "$WORK/vocab.txt")" -eq 8094
  [[ -s "$WORK/data/inaugural128.tfrecord" ]] || "$PROJECT_PY" create_pretraining_data.py \
      --input_file="$corpus" --output_file="$WORK/data/inaugural128.tfrecord" \
      --vocab_file="$WORK/vocab.txt" --do_lower_case=True --max_seq_length=128 \
      --max_predictions_per_seq=20 --num_workers=1
  cat > "$WORK/bert_config.json" <<'EOF'
{"vocab_size": 8094, "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
 "intermediate_size": 1024, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
 "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 512, "type_vocab_size": 2,
 "initializer_range": 0.02}
EOF
fi

if [[ " $STAGES " == *" compare "* ]]; then
  wait_quiet
  cd "$bench"
  "$PY" bench_compare.py --rounds "$rounds" --json "$out" -- \
    "$PY bench_train.py --impl hf_torch --task pretrain --threads 1 $model" \
    "$PY bench_train.py --impl project --project_dir $repo --task pretrain --variants graph --threads 1 $model" \
    "$PY bench_train.py --impl project --project_dir $repo --task pretrain --variants xla --threads 1 $model"
fi

if [[ " $STAGES " == *" runner "* ]]; then
  cd "$repo"
  for run in "fp32:" "bf16_xla:--mixed_precision=bf16 --jit_compile" ${EXTRA_RUNS:-}; do
    tag="${run%%:*}"; extra="${run#*:}"
    wait_quiet
    rm -rf "$WORK/run_$tag"
    # shellcheck disable=SC2086
    TF_NUM_INTRAOP_THREADS=1 TF_NUM_INTEROP_THREADS=1 "$PROJECT_PY" run_pretraining.py \
      --bert_config_file="$WORK/bert_config.json" --vocab_file="$WORK/vocab.txt" \
      --input_file="$WORK/data/inaugural128.tfrecord" --output_dir="$WORK/run_$tag" --do_train \
      --train_batch_size=32 --max_seq_length=128 --max_predictions_per_seq=20 \
      --num_train_steps=150 --num_warmup_steps=15 --learning_rate=1e-4 --iterations_per_loop=25 \
      $extra > "$WORK/runner_$tag.log" 2>&1
    echo "== run_pretraining.py $tag: examples_per_sec per 25-step loop (first one includes tracing)"
    grep -o "step [0-9]*/150 .*examples_per_sec=[0-9.e+]*" "$WORK/runner_$tag.log" \
      | sed -E 's/^step ([0-9]+)\/150 .*examples_per_sec=([0-9.e+]+)/\1 \2/'
  done
fi
