#!/usr/bin/env bash
# QUICKSTART=<quickstart output> WORK=<folder> [CPU=n] bash run_all.sh SEED [LR]: for one seed, the quickstart's pre-training (LR, default 1e-3) and
# its starting weights (10 steps at lr 1e-9), fine-tuned whole, from random weights, and as
# hybrids: the pre-trained model with the starting query/key kernels, and the starting model
# with only the pre-trained query/key kernels. Then the first block's attention statistics.
set -e
here=$(cd "$(dirname "$0")" && pwd); W=${WORK:?a folder for the probes}
seed=$1 lr=${2:-1e-3}
bash "$here/pretrain.sh" "start-s$seed" 10 1e-9 "$seed"
bash "$here/pretrain.sh" "lr$lr-s$seed" 1500 "$lr" "$seed"
cd "$here/../.."
python3 "$here/hybrid.py" "$W/lr$lr-s$seed/pretrain" "$W/start-s$seed/pretrain" \
  "$W/lr$lr-s$seed-startqk" layers_qk
python3 "$here/hybrid.py" "$W/start-s$seed/pretrain" "$W/lr$lr-s$seed/pretrain" \
  "$W/start-s$seed-lr$lr-qk" layers_qk
bash "$here/finetune.sh" random none "$seed"
bash "$here/finetune.sh" "pretrained-lr$lr" "$W/lr$lr-s$seed/pretrain" "$seed"
bash "$here/finetune.sh" "pretrained-lr$lr-with-starting-qk" "$W/lr$lr-s$seed-startqk" "$seed"
bash "$here/finetune.sh" "starting-with-pretrained-lr$lr-qk" "$W/start-s$seed-lr$lr-qk" "$seed"
taskset -c "${CPU:-1}" python3 "$here/attention_sink.py" "$W/start-s$seed/pretrain" \
  "$W/lr$lr-s$seed/pretrain" | tee -a "$here/attention.jsonl"
