cd /tmp/p54h
while pgrep -f "bash batch6.sh" >/dev/null; do sleep 3; done
P=/tmp/p54h/probes
for s in 1 2 3; do
  SEED=$s INIT=0.05 bash probe.sh i05_s$s 1e-3 0.0 true 16 1500
  SEED=$s TF_CPP_MIN_LOG_LEVEL=2 taskset -c 1 python3 hybrid.py $P/i05_s$s/run $P/post_d0/bert_config.json hyb/i05_s${s}_emb '^bert/embeddings/' > hyb/i05_s${s}_emb.log 2>&1
  for lr in 0.001 0.0003; do SEED=$s LR=$lr bash ft.sh embonly_i05_s${s}_lr$lr /tmp/p54h/hyb/i05_s${s}_emb $P/post_d0/bert_config.json; done
done
for s in 1 2 3; do
  SEED=$s DATA=/tmp/p54h/data/m40p26 MAXPRED=26 bash probe.sh m40_s$s 1e-3 0.0 true 16 1500
  SEED=$s TF_CPP_MIN_LOG_LEVEL=2 taskset -c 1 python3 hybrid.py $P/m40_s$s/run $P/post_d0/bert_config.json hyb/m40_s${s}_emb '^bert/embeddings/' > hyb/m40_s${s}_emb.log 2>&1
  for lr in 0.001 0.0003; do SEED=$s LR=$lr bash ft.sh embonly_m40_s${s}_lr$lr /tmp/p54h/hyb/m40_s${s}_emb $P/post_d0/bert_config.json; done
done
