cd /tmp/p54h
P=/tmp/p54h/probes
LR=0.0003 bash ft.sh random_lr3e-4 none $P/post_d0/bert_config.json
LR=0.0001 bash ft.sh random_lr1e-4 none $P/post_d0/bert_config.json
LR=0.001 bash ft.sh random_lr1e-3 none $P/post_d0/bert_config.json
LR=0.0001 bash ft.sh post_d0_lr1e-4 $P/post_d0/run $P/post_d0/bert_config.json
LR=0.001 bash ft.sh post_d0_lr1e-3 $P/post_d0/run $P/post_d0/bert_config.json
bash mkdata.sh m15p26 0.15 26
bash mkdata.sh m30p26 0.30 26
bash mkdata.sh m40p26 0.40 26
