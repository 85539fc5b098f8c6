#!/usr/bin/env python3
"""How much SST-2 signal do an encoder's frozen features hold? (issue 54 probe)

Encodes SST-2-2k train and the SST-2 dev sentences with a checkpoint's encoder (or the same
architecture from random weights, --init=random), pools each layer's token vectors ([CLS] or
the mean over real tokens, [CLS]/[SEP] included) and the pooler output, fits a logistic
regression on train per feature set (full-batch Adam, L2, fixed epochs), and prints dev
accuracy as one JSON line per feature set.

  python3 quality/pretraining_probes/frozen_features.py --work_dir=/tmp/pp54/tapt \
      --init=/tmp/pp54/tapt/keep/ckpt-16000 --jsonl quality/pretraining_probes/frozen.jsonl
"""
import argparse
import csv
import json
import os
import platform
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "quality")]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
DEV = os.path.join(os.path.dirname(ROOT), "shared", "data", "glue", "SST-2", "dev.tsv")


def rows(path):
    with open(path, encoding="utf-8") as f:
        reader = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        return [(r["sentence"], int(r["label"])) for r in reader]


def setup(work_dir, init, seed, seq_length):
    """(encoder, (train ids, labels), (dev ids, labels)): the work dir's config with `init`'s
    weights (or random ones), and SST-2-2k train / SST-2 dev as [CLS] text [SEP] ids."""
    import numpy as np
    import keras
    from bert_tf import BertConfig
    from bert_tf.checkpoints import load_weights
    from bert_tf.model import BertEncoder
    from portable_exports import features
    keras.utils.set_random_seed(seed)
    encoder = BertEncoder(BertConfig.from_json_file(os.path.join(work_dir, "bert_config.json")))
    if init != "random":
        load_weights(encoder, init)
    vocab = os.path.join(work_dir, "vocab.txt")
    data = []
    for split in (rows(os.path.join(work_dir, "sst2_2k", "train.tsv")), rows(DEV)):
        ids = features(vocab, [t for t, _ in split], seq_length)["input_ids"]
        data.append((ids, np.array([label for _, label in split])))
    return encoder, data[0], data[1]


def meta():
    """The commit and the CPU of a result line."""
    import runlog
    from pretraining_pays import cpu_info
    return {"commit": runlog.commit(), **cpu_info(), "machine": platform.machine()}


def encode(encoder, input_ids, batch=64):
    """{name: [N, H]}: [CLS] and mean-pooled vectors of the embedding output and every block,
    and the pooler output."""
    import numpy as np
    from bert_tf.model.sentence_pooling import pool_tokens
    feats = {}
    for i in range(0, len(input_ids), batch):
        ids = input_ids[i:i + batch]
        mask = (ids > 0).astype(np.int32)
        out = encoder({"input_ids": ids, "input_mask": mask,
                       "segment_ids": np.zeros_like(mask)}, training=False)
        for j, h in enumerate([out["embedding_output"]] + list(out["encoder_outputs"])):
            for mode in ("cls", "mean"):
                feats.setdefault(f"layer{j}_{mode}", []).append(
                    np.asarray(pool_tokens(h, mask, mode)))
        feats.setdefault("pooler", []).append(np.asarray(out["pooled_output"], np.float32))
    return {k: np.concatenate(v) for k, v in feats.items()}


def logistic(train_x, train_y, dev_x, dev_y, epochs=300, l2=1e-3, lr=0.05):
    """(dev, train) accuracy of an L2-regularised logistic regression on standardised
    features, trained full-batch with Adam."""
    import keras
    mu, sd = train_x.mean(0), train_x.std(0) + 1e-6
    model = keras.Sequential([keras.layers.Dense(
        1, kernel_initializer="zeros", kernel_regularizer=keras.regularizers.L2(l2))])
    model.compile(keras.optimizers.Adam(lr), keras.losses.BinaryCrossentropy(from_logits=True))
    model.fit((train_x - mu) / sd, train_y, batch_size=len(train_x), epochs=epochs, verbose=0)
    accuracy = lambda x, y: float(((model.predict((x - mu) / sd, verbose=0)[:, 0] > 0)  # noqa: E731
                                   == y).mean())
    return accuracy(dev_x, dev_y), accuracy(train_x, train_y)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work_dir", required=True, help="pretraining_pays.py work dir "
                   "(bert_config.json, vocab.txt, sst2_2k/train.tsv)")
    p.add_argument("--init", required=True, help="checkpoint prefix, or 'random'")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seq_length", type=int, default=64)
    p.add_argument("--jsonl", required=True)
    args = p.parse_args()
    import runlog
    encoder, (x, y), (dx, dy) = setup(args.work_dir, args.init, args.seed, args.seq_length)
    tx, vx = encode(encoder, x), encode(encoder, dx)
    for name in tx:
        acc, train_acc = logistic(tx[name], y, vx[name], dy)
        line = {"init": args.init, "seed": args.seed, "features": name, "dev_accuracy": acc,
                "train_accuracy": train_acc, "train": len(y), "dev": len(dy), **meta()}
        print(json.dumps(line), flush=True)
        runlog.append_row(args.jsonl, line)


if __name__ == "__main__":
    main()
