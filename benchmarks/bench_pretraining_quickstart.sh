#!/usr/bin/env bash
# Pre-training throughput at the quickstart's shape (issue #54, part 3): the 'tiny' model
# (L=2, H=128, A=2, I=512) with the quickstart's vocabulary, seq 64, batch 16, on both cores as
# the quickstart runs it (two threads per implementation, nothing pinned):
#   1. one training step (fwd + bwd + AdamW; masked LM on the harness's 20 positions + NSP)
#      through ../shared/bench: HuggingFace BertForPreTraining (sdpa) vs bert_tf (graph, xla),
#      separate processes interleaved A B C / C B A by bench_compare.py;
#   2. run_pretraining.py on the quickstart's own records and config, 400 steps (log every 50):
#      fp32, bf16, fp32 + XLA, bf16 + XLA; the examples_per_sec of loops 2-8.
#   PY=~/bench-venv/bin/python bash benchmarks/bench_pretraining_quickstart.sh [rounds]
# Env: QS (a finished quickstart's output_dir, default quickstart_out: run `bash quickstart.sh`
#      first), PY (bench venv), PROJECT_PY (default python3), WORK (scratch, default: a new
#      temporary folder), STAGES (default "compare runner").
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
bench="$repo/../shared/bench"
QS="${QS:-$repo/quickstart_out}"
[[ -s "$QS/vocab.txt" ]] || { echo "no quickstart output in $QS: run bash quickstart.sh, or set QS" >&2; exit 2; }
PY="${PY:-$HOME/bench-venv/bin/python}"
PROJECT_PY="${PROJECT_PY:-python3}"
WORK="${WORK:-$(mktemp -d)}"
STAGES="${STAGES:-compare runner}"
rounds="${1:-2}"
out="$repo/benchmarks/results/pretraining_quickstart.jsonl"
vocab=$(wc -l < "$QS/vocab.txt")
model="--layers 2 --hidden 128 --heads 2 --intermediate 512 --vocab $vocab --seq 64 --batch 16"
# Steps of ~0.1 s: each of the 5 timed repeats runs steps for at least 2 s.
timing="--repeats 5 --min_seconds 2"
export TF_CPP_MIN_LOG_LEVEL=2
mkdir -p "$WORK" "$(dirname "$out")"

if [[ " $STAGES " == *" compare "* ]]; then
  cd "$bench"
  "$PY" bench_compare.py --rounds "$rounds" --json "$out" -- \
    "$PY bench_train.py --impl hf_torch --task pretrain --threads 2 $model $timing" \
    "$PY bench_train.py --impl project --project_dir $repo --task pretrain --variants graph --threads 2 $model $timing" \
    "$PY bench_train.py --impl project --project_dir $repo --task pretrain --variants xla --threads 2 $model $timing"
fi

if [[ " $STAGES " == *" runner "* ]]; then
  cd "$repo"
  for run in "fp32:" "bf16:--mixed_precision=bf16" "fp32_xla:--jit_compile" \
             "bf16_xla:--mixed_precision=bf16 --jit_compile"; do
    tag="${run%%:*}"; extra="${run#*:}"
    rm -rf "$WORK/run_$tag"
    # shellcheck disable=SC2086
    "$PROJECT_PY" run_pretraining.py --bert_config_file="$QS/bert_config.json" \
      --input_file="$QS/pretraining_data/train-*.tfrecord" --output_dir="$WORK/run_$tag" \
      --do_train --train_batch_size=16 --max_seq_length=64 --max_predictions_per_seq=10 \
      --num_train_steps=400 --num_warmup_steps=40 --learning_rate=1e-3 \
      --iterations_per_loop=50 --save_checkpoints_steps=400 --seed=1 $extra \
      > "$WORK/runner_$tag.log" 2>&1
    "$PROJECT_PY" - "$tag" "$extra" "$WORK/runner_$tag.log" "$out" <<'PY'
import json, re, statistics, subprocess, sys
from bert_tf.cpu_features import cpu_flags, cpu_model
tag, extra, log, out = sys.argv[1:]
rates = [float(r) for r in re.findall(r"step \d+/400 .*?examples_per_sec=([0-9.e+]+)",
                                      open(log).read())]
flags = cpu_flags()
row = {"script": "run_pretraining", "run": tag, "flags": extra, "batch": 16, "seq": 64,
       "threads": "TensorFlow's default on 2 cores", "examples_per_sec_per_loop": rates,
       "steady_median": statistics.median(rates[1:]),
       "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip(),
       "cpu": cpu_model(), "avx512_vnni": "avx512_vnni" in flags,
       "avx512_bf16": "avx512_bf16" in flags, "amx_bf16": "amx_bf16" in flags}
open(out, "a").write(json.dumps(row) + "\n")
print(f"run_pretraining {tag}: steady {row['steady_median']:.1f} ex/s, loops {rates}")
PY
  done
fi
