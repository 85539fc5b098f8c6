#!/usr/bin/env bash
# [PRELN=1] [INIT=x] [DATA=dir] [SEED=n] [EVERY=n] bash probe.sh NAME LR DROPOUT NSP BATCH STEPS [extra run_pretraining flags]
D=${DATA:-/tmp/p54/qs/seed1-93627a99/pretraining_data}
Q=/tmp/p54/qs/seed1-93627a99
SEED=${SEED:-1}; EVERY=${EVERY:-300}
name=$1 lr=$2 drop=$3 nsp=$4 bs=$5 steps=$6; shift 6
out=/tmp/p54h/probes/$name; rm -rf $out; mkdir -p $out
python3 - <<PY
import json, os; c=json.load(open("$Q/bert_config.json")); c["hidden_dropout_prob"]=$drop; c["attention_probs_dropout_prob"]=$drop
if os.environ.get("INIT"): c["initializer_range"]=float(os.environ["INIT"])
json.dump(c, open("$out/bert_config.json","w"))
PY
cd /work/main
s=$(date +%s.%N)
TF_CPP_MIN_LOG_LEVEL=2 taskset -c 1 python3 /tmp/p54h/run_patched.py /work/main/run_pretraining.py --bert_config_file=$out/bert_config.json \
  --input_file="$D/train-*.tfrecord" --eval_input_file=$D/heldout.tfrecord \
  --output_dir=$out/run --do_train --do_eval --max_seq_length=64 --max_predictions_per_seq=${MAXPRED:-10} \
  --train_batch_size=$bs --eval_batch_size=16 --num_train_steps=$steps --num_warmup_steps=${WARM:-$((steps/10))} \
  --learning_rate=$lr --iterations_per_loop=100 --save_checkpoints_steps=$steps --max_eval_steps=50 --seed=$SEED \
  --eval_every_steps=$EVERY --use_next_sentence=$nsp "$@" > $out/log.txt 2>&1
rc=$?
e=$(date +%s.%N)
python3 - <<PY
import json, glob
r={"name":"$name","preln":"${PRELN:-0}","init":"${INIT:-0.02}","lr":$lr,"dropout":$drop,"nsp":"$nsp","batch":$bs,"steps":$steps,"seed":$SEED,"data":"$D","warmup":"${WARM:-auto}","extra":"$*","rc":$rc,"seconds":round($e-$s,1)}
try:
  for l in open("$out/run/eval_results.txt"):
    k,_,v=l.partition(" = ")
    try: r[k.strip()]=float(v)
    except ValueError: pass
except OSError: pass
curve=[]
for f in glob.glob("$out/run/**/eval_history.jsonl", recursive=True):
  for l in open(f):
    d=json.loads(l); curve.append((d.get("global_step", d.get("step")), round(d.get("masked_lm_accuracy",-1),4)))
r["curve"]=curve
print(json.dumps(r))
open("/tmp/p54h/probes.jsonl","a").write(json.dumps(r)+"\n")
PY
