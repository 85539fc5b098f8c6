cd /tmp/p54h
while pgrep -f "bash batch4.sh" >/dev/null; do sleep 3; done
P=/tmp/p54h/probes
TF_CPP_MIN_LOG_LEVEL=2 taskset -c 1 python3 hybrid.py $P/post_d0/run $P/post_d0/bert_config.json hyb/post_d0_emb_l0 '^bert/embeddings/|^bert/encoder/layer_0/' > hyb/post_d0_emb_l0.log 2>&1
for lr in 0.0003 0.001; do LR=$lr bash ft.sh embl0_post_d0_lr$lr /tmp/p54h/hyb/post_d0_emb_l0 $P/post_d0/bert_config.json; done
for s in 2 3; do
  SEED=$s bash probe.sh post_d0_s$s 1e-3 0.0 true 16 1500
  SEED=$s TF_CPP_MIN_LOG_LEVEL=2 taskset -c 1 python3 hybrid.py $P/post_d0_s$s/run $P/post_d0/bert_config.json hyb/post_d0_s${s}_emb '^bert/embeddings/' > hyb/post_d0_s${s}_emb.log 2>&1
  for lr in 0.0003 0.001; do
    SEED=$s LR=$lr bash ft.sh random_s${s}_lr$lr none $P/post_d0/bert_config.json
    SEED=$s LR=$lr bash ft.sh embonly_post_d0_s${s}_lr$lr /tmp/p54h/hyb/post_d0_s${s}_emb $P/post_d0/bert_config.json
  done
done
