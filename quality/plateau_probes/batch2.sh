cd /tmp/p54h
P=/tmp/p54h/probes
for m in m30p26 m40p26; do
  DATA=/tmp/p54h/data/$m MAXPRED=26 bash probe.sh post_d0_$m 1e-3 0.0 true 16 1500
done
for m in m30p26 m40p26; do
  for lr in 0.0003 0.001; do LR=$lr bash ft.sh post_d0_${m}_lr$lr $P/post_d0_$m/run $P/post_d0_$m/bert_config.json; done
done
