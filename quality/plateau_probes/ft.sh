#!/usr/bin/env bash
# [PRELN=1] [SEED=n] [LR=x] [EPOCHS=n] bash ft.sh NAME INIT_CKPT_OR_none CONFIG_JSON [extra flags]
D=/tmp/p54/qs/seed1-93627a99
SEED=${SEED:-1}; LR=${LR:-0.0003}; EPOCHS=${EPOCHS:-30.0}
name=$1 init=$2 cfg=$3; shift 3
out=/tmp/p54h/ft/$name; rm -rf $out; mkdir -p $out
initflag=""; [ "$init" != none ] && initflag="--init_checkpoint=$init"
cd /work/main
s=$(date +%s.%N)
TF_CPP_MIN_LOG_LEVEL=2 taskset -c 1 python3 /tmp/p54h/run_patched.py /work/main/run_classifier.py --task_name=generic --data_dir=$D/data/task --text_a_column=sentence --label_column=package --vocab_file=$D/vocab.txt --bert_config_file=$cfg $initflag --do_train --do_eval --max_seq_length=64 --train_batch_size=32 --learning_rate=$LR --num_train_epochs=$EPOCHS --iterations_per_loop=50 --output_dir=$out/run --seed=$SEED "$@" > $out/log.txt 2>&1
rc=$?
e=$(date +%s.%N)
python3 - <<PY
import json
r={"name":"$name","preln":"${PRELN:-0}","pool":"${POOL:-cls}","init":"$init","seed":$SEED,"lr":$LR,"epochs":$EPOCHS,"extra":"$*","rc":$rc,"seconds":round($e-$s,1)}
try:
  for l in open("$out/run/eval_results.txt"):
    k,_,v=l.partition(" = ")
    if k.strip() in ("eval_accuracy","eval_loss","macro_f1","global_step","loss"): r[k.strip()]=float(v)
except OSError: pass
print(json.dumps(r))
open("/tmp/p54h/ft.jsonl","a").write(json.dumps(r)+"\n")
PY
