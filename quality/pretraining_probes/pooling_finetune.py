#!/usr/bin/env python3
"""Does a mean-pooled head let a weakly pre-trained encoder beat random weights? (issue 54)

Fine-tunes the tiny encoder of a pretraining_pays.py work dir on SST-2-2k, from a checkpoint or
from random weights, with the [CLS] pooler head (as run_classifier) or a head on the mean of the
final layer's real-token vectors, and prints SST-2 dev accuracy as a JSON line. The recipe is
pretraining_pays.py's through run_classifier's defaults (seq 64, batch 32, 5 epochs, 10%
warm-up then linear decay, bert_tf's adamw_torch: weight decay 0.01, global clip 1.0; dropout
0.1), trained with Keras' fit for a quick probe.

  python3 quality/pretraining_probes/pooling_finetune.py --work_dir=/tmp/pp54/tapt \
      --init=random --pooling=mean --lr=1e-3 --seed=1 --jsonl /tmp/pooling.jsonl
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from frozen_features import meta, setup  # noqa: E402  (also puts the repo on sys.path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work_dir", required=True)
    p.add_argument("--init", required=True, help="checkpoint prefix, or 'random'")
    p.add_argument("--pooling", choices=["cls", "mean"], required=True)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seq_length", type=int, default=64)
    p.add_argument("--jsonl", required=True)
    args = p.parse_args()
    import numpy as np
    import keras
    import tensorflow as tf
    import runlog
    from bert_tf.model.sentence_pooling import pool_tokens
    from bert_tf.training.optimization import create_optimizer
    encoder, (x, y), (dx, dy) = setup(args.work_dir, args.init, args.seed, args.seq_length)

    class Model(keras.Model):
        def __init__(self):
            super().__init__()
            self.encoder = encoder
            self.dropout = keras.layers.Dropout(0.1)
            self.dense = keras.layers.Dense(2, kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=encoder.config.initializer_range))

        def call(self, ids, training=False):
            mask = tf.cast(ids > 0, tf.int32)
            out = self.encoder({"input_ids": ids, "input_mask": mask,
                                "segment_ids": tf.zeros_like(mask)}, training=training)
            h = (pool_tokens(out["sequence_output"], mask, "mean") if args.pooling == "mean"
                 else out["pooled_output"])
            return self.dense(self.dropout(h, training=training))

    model = Model()
    steps = args.epochs * int(np.ceil(len(x) / 32))
    model.compile(create_optimizer(args.lr, steps, int(0.1 * steps), "adamw_torch"),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=32, epochs=args.epochs, verbose=0, shuffle=True)
    accuracy = lambda a, b: float((model.predict(a, batch_size=128, verbose=0).argmax(1)  # noqa: E731
                                   == b).mean())
    line = {"init": args.init, "pooling": args.pooling, "lr": args.lr, "epochs": args.epochs,
            "seed": args.seed, "dev_accuracy": accuracy(dx, dy), "train_accuracy": accuracy(x, y),
            **meta()}
    print(json.dumps(line), flush=True)
    runlog.append_row(args.jsonl, line)


if __name__ == "__main__":
    main()
