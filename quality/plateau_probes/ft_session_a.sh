#!/usr/bin/env bash
# ft.sh name init_ckpt_or_none config_json [extra flags]
D=/tmp/p54/qs/seed1-93627a99
cd /work/main
name=$1 init=$2 cfg=$3; shift 3
out=/tmp/p54/ft/$name; rm -rf $out; mkdir -p $out
initflag=""; [ "$init" != none ] && initflag="--init_checkpoint=$init"
s=$(date +%s)
TF_CPP_MIN_LOG_LEVEL=2 taskset -c 1 python3 run_classifier.py --task_name=generic --data_dir=$D/data/task --text_a_column=sentence --label_column=package --vocab_file=$D/vocab.txt --bert_config_file=$cfg $initflag --do_train --do_eval --max_seq_length=64 --train_batch_size=32 --learning_rate=0.0003 --num_train_epochs=30.0 --iterations_per_loop=50 --output_dir=$out/run --seed=1 "$@" > $out/log.txt 2>&1
e=$(date +%s)
python3 - <<PY
import json
r={"name":"$name","init":"$init","extra":"$*","seconds":$e-$s}
for l in open("$out/run/eval_results.txt"):
    k,_,v=l.partition(" = ")
    try: r[k.strip()]=float(v)
    except ValueError: pass
print(json.dumps(r))
open("/tmp/p54/ft.jsonl","a").write(json.dumps(r)+"\n")
PY
