#!/usr/bin/env bash
# name lr dropout nsp batch steps [extra]
D=/tmp/p54/qs/seed1-93627a99
cd /work/main
run() {
  name=$1 lr=$2 drop=$3 nsp=$4 bs=$5 steps=$6; shift 6
  out=/tmp/p54/probes/$name; rm -rf $out; mkdir -p $out
  python3 - <<PY
import json; c=json.load(open("$D/bert_config.json")); c["hidden_dropout_prob"]=$drop; c["attention_probs_dropout_prob"]=$drop
import os
if os.environ.get("INIT"): c["initializer_range"]=float(os.environ["INIT"])
json.dump(c, open("$out/bert_config.json","w"))
PY
  s=$(date +%s)
  TF_CPP_MIN_LOG_LEVEL=2 taskset -c 1 python3 run_pretraining.py --bert_config_file=$out/bert_config.json \
    --input_file="$D/pretraining_data/train-*.tfrecord" --eval_input_file=$D/pretraining_data/heldout.tfrecord \
    --output_dir=$out/run --do_train --do_eval --max_seq_length=64 --max_predictions_per_seq=10 \
    --train_batch_size=$bs --eval_batch_size=16 --num_train_steps=$steps --num_warmup_steps=$((steps/10)) \
    --learning_rate=$lr --iterations_per_loop=100 --save_checkpoints_steps=$steps --max_eval_steps=50 --seed=1 \
    --use_next_sentence=$nsp "$@" > $out/log.txt 2>&1
  e=$(date +%s)
  python3 - <<PY
import json
r={"name":"$name","lr":$lr,"dropout":$drop,"nsp":"$nsp","batch":$bs,"steps":$steps,"extra":"$* init=${INIT:-}","seconds":$e-$s}
for l in open("$out/run/eval_results.txt"):
    k,_,v=l.partition(" = "); r[k.strip()]=float(v)
print(json.dumps(r))
open("/tmp/p54/probes.jsonl","a").write(json.dumps(r)+"\n")
PY
}
"$@"
