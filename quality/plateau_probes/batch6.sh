cd /tmp/p54h
while pgrep -f "bash batch5.sh" >/dev/null; do sleep 3; done
P=/tmp/p54h/probes
for s in 1 2 3; do
  run=$P/post_d0/run; [ $s != 1 ] && run=$P/post_d0_s$s/run
  hyb=/tmp/p54h/hyb/post_d0_s${s}_emb; [ $s = 1 ] && hyb=/tmp/p54h/hyb/post_d0_emb
  SEED=$s bash ftq.sh q_random_s$s none $P/post_d0/bert_config.json
  SEED=$s bash ftq.sh q_embonly_s$s $hyb $P/post_d0/bert_config.json
  SEED=$s bash ftq.sh q_full_s$s $run $P/post_d0/bert_config.json
done
for s in 1 2 3; do
  run=$P/post_d0/run; [ $s != 1 ] && run=$P/post_d0_s$s/run
  PERMUTE=1 SEED=$s TF_CPP_MIN_LOG_LEVEL=2 taskset -c 1 python3 hybrid.py $run $P/post_d0/bert_config.json hyb/perm_s${s}_emb '^bert/embeddings/' > hyb/perm_s${s}_emb.log 2>&1
  SEED=$s LR=0.001 bash ft.sh permemb_s${s}_lr0.001 /tmp/p54h/hyb/perm_s${s}_emb $P/post_d0/bert_config.json
done
