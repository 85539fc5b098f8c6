cd /tmp/p54h
while pgrep -f "bash batch2.sh" >/dev/null; do sleep 3; done
P=/tmp/p54h/probes
for lr in 0.0003 0.001; do
  POOL=mean LR=$lr bash ft.sh mean_random_lr$lr none $P/post_d0/bert_config.json
  POOL=mean LR=$lr bash ft.sh mean_post_d0_lr$lr $P/post_d0/run $P/post_d0/bert_config.json
done
EVERY=0 bash probe.sh tput_b16_xla 1e-3 0.0 true 16 600 --jit_compile
EVERY=0 bash probe.sh tput_b64 1e-3 0.0 true 64 600
EVERY=0 bash probe.sh tput_b64_xla 1e-3 0.0 true 64 600 --jit_compile
