cd /tmp/p54h
while pgrep -f "bash batch9.sh" >/dev/null; do sleep 3; done
P=/tmp/p54h/probes
TF_CPP_MIN_LOG_LEVEL=2 taskset -c 1 python3 allmask.py
DATA=/tmp/p54h/data/allmask bash probe.sh allmask_d0 1e-3 0.0 true 16 1500
LR=0.001 bash ft.sh allmask_d0_lr0.001 $P/allmask_d0/run $P/post_d0/bert_config.json
TF_CPP_MIN_LOG_LEVEL=2 taskset -c 1 python3 hybrid.py $P/allmask_d0/run $P/post_d0/bert_config.json hyb/allmask_d0_emb '^bert/embeddings/' > hyb/allmask_d0_emb.log 2>&1
LR=0.001 bash ft.sh embonly_allmask_d0_lr0.001 /tmp/p54h/hyb/allmask_d0_emb $P/post_d0/bert_config.json
