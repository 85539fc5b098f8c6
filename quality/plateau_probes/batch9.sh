cd /tmp/p54h
while pgrep -f "bash batch8.sh" >/dev/null; do sleep 3; done
EVERY=500 bash probe.sh post_d0_3000 1e-3 0.0 true 16 3000
LR=0.001 bash ft.sh post_d0_3000_lr0.001 /tmp/p54h/probes/post_d0_3000/run /tmp/p54h/probes/post_d0/bert_config.json
TF_CPP_MIN_LOG_LEVEL=2 taskset -c 1 python3 hybrid.py /tmp/p54h/probes/post_d0_3000/run /tmp/p54h/probes/post_d0/bert_config.json hyb/post_d0_3000_emb '^bert/embeddings/' > hyb/post_d0_3000_emb.log 2>&1
LR=0.001 bash ft.sh embonly_post_d0_3000_lr0.001 /tmp/p54h/hyb/post_d0_3000_emb /tmp/p54h/probes/post_d0/bert_config.json
