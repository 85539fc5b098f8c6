#!/usr/bin/env bash
# QUICKSTART=dir WORK=dir [FTLR=3e-4] [CONFIG=bert_config.json] [TASK_DIR=dir]
#   bash finetune.sh NAME INIT_OR_none SEED
# run_classifier.py on the quickstart's task (150 training sentences, train_per_label=50) as
# quality/quickstart_pretraining.py's runs (30 epochs, batch 32, seq 64, eval every 50 steps),
# from INIT (a checkpoint) or random weights; appends a JSON line to results.jsonl. TASK_DIR:
# the same-package pair task of same_package_pairs.py instead.
Q=${QUICKSTART:?a quickstart output folder}; W=${WORK:?a folder for the probes}
here=$(cd "$(dirname "$0")" && pwd)
name=$1 init=$2 seed=$3
out=$W/ft/$name-s$seed; rm -rf "$out"; mkdir -p "$out"
initflag=(); [ "$init" != none ] && initflag=(--init_checkpoint="$init")
columns=(--text_a_column=sentence --label_column=package)
[ -n "${TASK_DIR:-}" ] && columns=(--text_a_column=sentence_a --text_b_column=sentence_b \
  --label_column=same)
cd "$here/../.."
TF_CPP_MIN_LOG_LEVEL=2 taskset -c "${CPU:-1}" python3 run_classifier.py --task_name=generic \
  --data_dir="${TASK_DIR:-$Q/data/task}" "${columns[@]}" \
  --vocab_file="$Q/vocab.txt" --bert_config_file="${CONFIG:-$Q/bert_config.json}" "${initflag[@]}" \
  --do_train --do_eval --max_seq_length=64 --train_batch_size=32 --learning_rate="${FTLR:-3e-4}" \
  --num_train_epochs=30 --eval_every_steps=50 --iterations_per_loop=50 --output_dir="$out" \
  --seed="$seed" > "$out/log.txt" 2>&1
python3 - "$name" "$init" "$seed" "${FTLR:-3e-4}" "$out" <<'PY' | tee -a "$here/results.jsonl"
import json, subprocess, sys
from bert_tf.cpu_features import cpu_flags, cpu_model
name, init, seed, lr, out = sys.argv[1:]
values = dict(l.split(" = ") for l in open(f"{out}/eval_results.txt").read().splitlines())
flags = cpu_flags()
print(json.dumps({"probe": name, "init": init, "seed": int(seed), "finetune_lr": float(lr),
                  "dev_accuracy": round(float(values["eval_accuracy"]), 4),
                  "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                           capture_output=True, text=True).stdout.strip(),
                  "cpu": cpu_model(), "avx512_vnni": "avx512_vnni" in flags,
                  "avx512_bf16": "avx512_bf16" in flags}))
PY
