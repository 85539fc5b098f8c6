#!/usr/bin/env python3
"""Does a mean-pooled head let a weakly pre-trained encoder beat random weights? (issue 54)

Fine-tunes the tiny encoder of a pretraining_pays.py work dir on SST-2-2k, from a checkpoint or
from random weights, with the [CLS] pooler head (as run_classifier) or a head on the mean of the
final layer's real-token vectors, and prints SST-2 dev accuracy as a JSON line. The recipe is
pretraining_pays.py's (seq 64, batch 32, 5 epochs, 10% warm-up then linear decay, AdamW with
weight decay 0.01, dropout 0.1), written with Keras' fit for a quick probe.

  python3 quality/pretraining_probes/pooling_finetune.py --work_dir=/tmp/pp54/tapt \
      --init=random --pooling=mean --lr=1e-3 --seed=1 --jsonl /tmp/pooling.jsonl
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [ROOT, os.path.dirname(os.path.abspath(__file__))]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from frozen_features import DEV, rows  # noqa: E402


def ids_of(tokenizer, texts, seq_length):
    import numpy as np
    out = np.zeros([len(texts), seq_length], np.int32)
    for i, t in enumerate(texts):
        ids = tokenizer.convert_tokens_to_ids(
            ["[CLS]"] + tokenizer.tokenize(t)[:seq_length - 2] + ["[SEP]"])
        out[i, :len(ids)] = ids
    return out


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
    from bert_tf import BertConfig
    from bert_tf.checkpoints import load_weights
    from bert_tf.model import BertEncoder
    from bert_tf.model.sentence_pooling import pool_tokens
    from bert_tf.tokenization.full import FullTokenizer
    keras.utils.set_random_seed(args.seed)
    config = BertConfig.from_json_file(os.path.join(args.work_dir, "bert_config.json"))
    encoder = BertEncoder(config)
    if args.init != "random":
        load_weights(encoder, args.init)
    tok = FullTokenizer(os.path.join(args.work_dir, "vocab.txt"), do_lower_case=True)
    train = rows(os.path.join(args.work_dir, "sst2_2k", "train.tsv"))
    dev = rows(DEV)
    x, dx = (ids_of(tok, [t for t, _ in r], args.seq_length) for r in (train, dev))
    y, dy = (np.array([l for _, l in r]) for r in (train, dev))
    dropout = keras.layers.Dropout(0.1)
    dense = keras.layers.Dense(2, kernel_initializer=keras.initializers.TruncatedNormal(
        stddev=config.initializer_range))

    class Model(keras.Model):
        def __init__(self):
            super().__init__()
            self.encoder, self.dropout, self.dense = encoder, dropout, dense   # tracked

        def call(self, ids, training=False):
            mask = tf.cast(ids > 0, tf.int32)
            out = self.encoder({"input_ids": ids, "input_mask": mask,
                                "segment_ids": tf.zeros_like(mask)}, training=training)
            h = (pool_tokens(out["sequence_output"], mask, "mean") if args.pooling == "mean"
                 else out["pooled_output"])
            return self.dense(self.dropout(h, training=training))

    model = Model()
    steps = args.epochs * int(np.ceil(len(x) / 32))
    warm = int(0.1 * steps)
    schedule = keras.optimizers.schedules.PolynomialDecay(args.lr, steps - warm, 0.0)

    class Warmup(keras.optimizers.schedules.LearningRateSchedule):
        def __call__(self, step):
            step = tf.cast(step, tf.float32)
            return tf.where(step < warm, args.lr * step / max(warm, 1), schedule(step - warm))

    opt = keras.optimizers.AdamW(Warmup(), weight_decay=0.01, epsilon=1e-8, clipnorm=1.0)
    model.compile(opt, keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(x, y, batch_size=32, epochs=args.epochs, verbose=0, shuffle=True)
    acc = float((model.predict(dx, batch_size=128, verbose=0).argmax(1) == dy).mean())
    train_acc = float((model.predict(x, batch_size=128, verbose=0).argmax(1) == y).mean())
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    flags = [f for f in ("avx512_vnni", "avx512_bf16", "avx2")
             if f in open("/proc/cpuinfo").read()]
    line = {"init": args.init, "pooling": args.pooling, "lr": args.lr, "epochs": args.epochs,
            "seed": args.seed, "dev_accuracy": acc, "train_accuracy": train_acc,
            "commit": commit, "cpu_flags": flags}
    print(json.dumps(line), flush=True)
    with open(args.jsonl, "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
