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
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
DEV = os.path.join(os.path.dirname(ROOT), "shared", "data", "glue", "SST-2", "dev.tsv")


def rows(path):
    with open(path, encoding="utf-8") as f:
        reader = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        return [(r["sentence"], int(r["label"])) for r in reader]


def encode(encoder, tokenizer, texts, seq_length, batch=64):
    import numpy as np
    import tensorflow as tf
    feats = {}
    for i in range(0, len(texts), batch):
        ids = [tokenizer.convert_tokens_to_ids(["[CLS]"] + tokenizer.tokenize(t)[:seq_length - 2]
                                               + ["[SEP]"]) for t in texts[i:i + batch]]
        width = max(map(len, ids))
        input_ids = np.array([x + [0] * (width - len(x)) for x in ids], np.int32)
        mask = (input_ids != 0).astype(np.int32)
        out = encoder({"input_ids": input_ids, "input_mask": mask,
                       "segment_ids": np.zeros_like(mask)}, training=False)
        m = tf.cast(mask[..., None], tf.float32)
        layers = [out["embedding_output"]] + list(out["encoder_outputs"]) \
            if "embedding_output" in out else list(out["encoder_outputs"])
        for j, h in enumerate(layers):
            h = tf.cast(h, tf.float32)
            feats.setdefault(f"layer{j}_cls", []).append(h[:, 0].numpy())
            feats.setdefault(f"layer{j}_mean", []).append(
                (tf.reduce_sum(h * m, 1) / tf.reduce_sum(m, 1)).numpy())
        feats.setdefault("pooler", []).append(tf.cast(out["pooled_output"], tf.float32).numpy())
    return {k: np.concatenate(v) for k, v in feats.items()}


def logistic(train_x, train_y, dev_x, dev_y, epochs=300, l2=1e-3, lr=0.05):
    import numpy as np
    import tensorflow as tf
    mu, sd = train_x.mean(0), train_x.std(0) + 1e-6
    x, dx = (train_x - mu) / sd, (dev_x - mu) / sd
    w = tf.Variable(tf.zeros([x.shape[1], 1])); b = tf.Variable(tf.zeros([1]))
    opt = tf.keras.optimizers.Adam(lr)
    xt, yt = tf.constant(x, tf.float32), tf.constant(train_y[:, None], tf.float32)
    for _ in range(epochs):
        with tf.GradientTape() as tape:
            logits = xt @ w + b
            loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(yt, logits)) \
                + l2 * tf.reduce_sum(w * w)
        opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))
    pred = (dx @ w.numpy() + b.numpy())[:, 0] > 0
    train_acc = float((((x @ w.numpy() + b.numpy())[:, 0] > 0) == train_y).mean())
    return float((pred == dev_y).mean()), train_acc


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work_dir", required=True, help="pretraining_pays.py work dir "
                   "(bert_config.json, vocab.txt, sst2_2k/train.tsv)")
    p.add_argument("--init", required=True, help="checkpoint prefix, or 'random'")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seq_length", type=int, default=64)
    p.add_argument("--jsonl", required=True)
    args = p.parse_args()
    import numpy as np
    import keras
    from bert_tf import BertConfig
    from bert_tf.model import BertEncoder
    from bert_tf.checkpoints import load_weights
    from bert_tf.tokenization.full import FullTokenizer
    keras.utils.set_random_seed(args.seed)
    config = BertConfig.from_json_file(os.path.join(args.work_dir, "bert_config.json"))
    encoder = BertEncoder(config)
    if args.init != "random":
        load_weights(encoder, args.init)
    tok = FullTokenizer(os.path.join(args.work_dir, "vocab.txt"), do_lower_case=True)
    train = rows(os.path.join(args.work_dir, "sst2_2k", "train.tsv"))
    dev = rows(DEV)
    tx = encode(encoder, tok, [t for t, _ in train], args.seq_length)
    dx = encode(encoder, tok, [t for t, _ in dev], args.seq_length)
    ty, dy = np.array([l for _, l in train]), np.array([l for _, l in dev])
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    flags = [f for f in ("avx512_vnni", "avx512_bf16", "avx2")
             if f in open("/proc/cpuinfo").read()]
    with open(args.jsonl, "a", encoding="utf-8") as f:
        for name in tx:
            acc, train_acc = logistic(tx[name], ty, dx[name], dy)
            line = {"init": args.init, "seed": args.seed, "features": name,
                    "dev_accuracy": acc, "train_accuracy": train_acc, "train": len(ty),
                    "dev": len(dy), "commit": commit, "cpu_flags": flags,
                    "machine": platform.machine()}
            print(json.dumps(line), flush=True)
            f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
