#!/usr/bin/env bash
# mkdata.sh NAME PROB MAXPRED [extra]  -> /tmp/p54h/data/NAME/{train-0,train-1,heldout}.tfrecord ; heldout always prob 0.15
Q=/tmp/p54/qs/seed1-93627a99
name=$1 prob=$2 mp=$3; shift 3
o=/tmp/p54h/data/$name; rm -rf $o; mkdir -p $o; cd /work/main
common="--vocab_file=$Q/vocab.txt --do_lower_case=True --max_seq_length=${SEQ:-64} --max_predictions_per_seq=$mp --random_seed=12345 --shard_size_mb=0.5 --num_workers=1"
TF_CPP_MIN_LOG_LEVEL=2 taskset -c 1 python3 create_pretraining_data.py --input_file=$Q/data/pretrain.txt --output_file=$o/train-0.tfrecord,$o/train-1.tfrecord --dupe_factor=${DUPE:-3} --masked_lm_prob=$prob $common "$@" > $o/log.txt 2>&1
TF_CPP_MIN_LOG_LEVEL=2 taskset -c 1 python3 create_pretraining_data.py --input_file=$Q/data/heldout.txt --output_file=$o/heldout.tfrecord --dupe_factor=1 --masked_lm_prob=0.15 $common "$@" >> $o/log.txt 2>&1
echo "$name done $(ls $o)"
