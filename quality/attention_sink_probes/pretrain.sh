#!/usr/bin/env bash
# QUICKSTART=dir WORK=dir [INIT=checkpoint] [RUNNER=script] bash pretrain.sh NAME STEPS LR SEED
# run_pretraining.py as the quickstart's stage 6 runs it (its records, config, batch 16, 10%
# warm-up), with the given steps and learning rate, pinned to core ${CPU:-1}; from INIT's
# weights when given (position_init.py), else the runner's own random initialisation.
# RUNNER: run_pretraining.py (default) or a probe that wraps it (frozen_qk_pretrain.py).
# WARMUP_PCT: warm-up steps in percent of STEPS (default 10); CONFIG: another bert_config.json.
Q=${QUICKSTART:?a quickstart output folder}; W=${WORK:?a folder for the probes}
name=$1 steps=$2 lr=$3 seed=$4
out=$W/$name; rm -rf "$out"; mkdir -p "$out"
cp "${CONFIG:-$Q/bert_config.json}" "$out/bert_config.json"
initflag=(); [ -n "${INIT:-}" ] && initflag=(--init_checkpoint="$INIT")
cd "$(dirname "$0")/../.."
TF_CPP_MIN_LOG_LEVEL=2 taskset -c "${CPU:-1}" python3 "${RUNNER:-run_pretraining.py}" \
  --bert_config_file="$out/bert_config.json" --input_file="$Q/pretraining_data/train-*.tfrecord" \
  --eval_input_file="$Q/pretraining_data/heldout.tfrecord" --output_dir="$out/pretrain" \
  --do_train --do_eval --max_seq_length=64 --max_predictions_per_seq=10 --train_batch_size=16 \
  --eval_batch_size=16 --num_train_steps="$steps" \
  --num_warmup_steps=$((steps * ${WARMUP_PCT:-10} / 100)) \
  --learning_rate="$lr" --iterations_per_loop=100 --save_checkpoints_steps="$steps" \
  --max_eval_steps=50 --seed="$seed" "${initflag[@]}" > "$out/pretrain.log" 2>&1
cp "$out/bert_config.json" "$out/pretrain/"
grep masked_lm_accuracy "$out/pretrain/eval_results.txt"
