#!/usr/bin/env bash
# quickstart protocol: 8 epochs, lr 3e-4, eval every 50 steps, best on dev, + test accuracy
# [SEED=n] [LR=x] [EPOCHS=n] bash ftq.sh NAME INIT_OR_none CONFIG [extra]
D=/tmp/p54/qs/seed1-93627a99
SEED=${SEED:-1}; LR=${LR:-0.0003}; EPOCHS=${EPOCHS:-8.0}
name=$1 init=$2 cfg=$3; shift 3
out=/tmp/p54h/ftq/$name; rm -rf $out; mkdir -p $out
initflag=""; [ "$init" != none ] && initflag="--init_checkpoint=$init"
cd /work/main
s=$(date +%s.%N)
TF_CPP_MIN_LOG_LEVEL=2 taskset -c 1 python3 /tmp/p54h/run_patched.py /work/main/run_classifier.py --task_name=generic --data_dir=$D/data/task --text_a_column=sentence --label_column=package --vocab_file=$D/vocab.txt --bert_config_file=$cfg $initflag --do_train --do_eval --do_predict --max_seq_length=64 --train_batch_size=32 --learning_rate=$LR --num_train_epochs=$EPOCHS --eval_every_steps=50 --iterations_per_loop=50 --output_dir=$out/run --seed=$SEED "$@" > $out/log.txt 2>&1
rc=$?
e=$(date +%s.%N)
python3 - <<PY
import json, csv
r={"name":"$name","protocol":"quickstart","init":"$init","seed":$SEED,"lr":$LR,"epochs":$EPOCHS,"extra":"$*","rc":$rc,"seconds":round($e-$s,1)}
try:
  for l in open("$out/run/eval_results.txt"):
    k,_,v=l.partition(" = ")
    if k.strip() in ("eval_accuracy","global_step"): r[k.strip()]=float(v)
  gold=[row["package"] for row in csv.DictReader(open("$D/data/task/test.tsv"), delimiter="\t")]
  pred=[row["prediction"] for row in csv.DictReader(open("$out/run/test_predictions.tsv"), delimiter="\t")]
  r["test_accuracy"]=sum(g==p for g,p in zip(gold,pred))/len(gold); r["n_test"]=len(gold)
except Exception as ex: r["error"]=str(ex)
print(json.dumps(r))
open("/tmp/p54h/ftq.jsonl","a").write(json.dumps(r)+"\n")
PY
