cd /tmp/p54h
while pgrep -f "bash batch7.sh" >/dev/null; do sleep 3; done
P=/tmp/p54h/probes; C=/tmp/p54/qs/seed1-93627a99/bert_config.json
for s in 1 2 3; do
  run=$P/post_d0/run; [ $s != 1 ] && run=$P/post_d0_s$s/run
  hyb=/tmp/p54h/hyb/post_d0_s${s}_emb; [ $s = 1 ] && hyb=/tmp/p54h/hyb/post_d0_emb
  SEED=$s EPOCHS=30.0 bash ftq.sh q30_random_s$s none $C
  SEED=$s EPOCHS=30.0 bash ftq.sh q30_embonly_s$s $hyb $C
  SEED=$s EPOCHS=30.0 bash ftq.sh q30_full_s$s $run $C
done
