cd /tmp/p54h
while pgrep -f "bash batch3.sh" >/dev/null; do sleep 3; done
P=/tmp/p54h/probes
mkdir -p hyb
TF_CPP_MIN_LOG_LEVEL=2 taskset -c 1 python3 hybrid.py $P/post_d0/run $P/post_d0/bert_config.json hyb/post_d0_emb '^bert/embeddings/' > hyb/post_d0_emb.log 2>&1
for lr in 0.0003 0.001; do LR=$lr bash ft.sh embonly_post_d0_lr$lr /tmp/p54h/hyb/post_d0_emb $P/post_d0/bert_config.json; done
bash probe.sh post_d0_b8 1e-3 0.0 true 8 3000
PRELN=2 bash probe.sh pre2_d0_lr3e-3 3e-3 0.0 true 16 1500
