#!/usr/bin/env python3
"""How much pair-task signal do an encoder's frozen features hold? (issue 54 probe)

Encodes MRPC and STS-B train / dev pairs (run_classifier's preprocessing) with a pre-training checkpoint (or the same architecture from random weights,
--init=random), and fits a ridge regression from train.tsv to the label on the pooler output,
on the mean of the last block's real tokens, and on both. Prints dev.tsv scores as JSON lines:
STS-B the mean of Pearson and Spearman, MRPC the accuracy of the prediction thresholded at 0.5.
With a checkpoint it also scores the next-sentence head as it stands (P(IsNext)), untrained on
either task.

  python3 quality/pretraining_probes/pair_features.py --work_dir=/work/p55/run \
      --init=/work/p55/run/keep/ckpt-19000 --jsonl quality/pretraining_probes/pair_features.jsonl
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "quality"), os.path.dirname(os.path.abspath(__file__))]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
GLUE = os.path.join(os.path.dirname(ROOT), "shared", "data", "glue")


def pair_inputs(vocab_file, examples, seq_length):
    """(run_classifier's inputs for text pairs, float labels): the same in-graph preprocessing."""
    from bert_tf.data.classification.pipeline import (ExampleColumns, make_preprocessor,
                                                      tokenize_in_memory)
    features = tokenize_in_memory(ExampleColumns(examples, is_regression=True),
                                  make_preprocessor(vocab_file, True, seq_length))
    labels = features.pop("label_ids").astype("float64")
    features.pop("example_index")
    return features, labels


def encode(model, inputs, batch=256):
    """(features {name: [N, H]}, P(IsNext) [N]) of a BertPretrainer."""
    import numpy as np
    from bert_tf.model.sentence_pooling import pool_tokens
    pooled, mean, is_next = [], [], []
    for i in range(0, len(inputs["input_ids"]), batch):
        part = {k: v[i:i + batch] for k, v in inputs.items()}
        out = model.encoder(part, training=False)
        pooled.append(np.asarray(out["pooled_output"], np.float32))
        mean.append(np.asarray(pool_tokens(out["sequence_output"], part["input_mask"], "mean")))
        logits = np.asarray(model.nsp_head(out["pooled_output"]), np.float64)
        is_next.append(np.exp(logits[:, 0]) / np.exp(logits).sum(1))
    pooled, mean = np.concatenate(pooled), np.concatenate(mean)
    return ({"pooler": pooled, "mean": mean, "pooler+mean": np.hstack([pooled, mean])},
            np.concatenate(is_next))


def ridge(train_x, train_y, test_x, l2):
    """Ridge regression on standardised features: predictions for test_x."""
    import numpy as np
    mu, sd = train_x.mean(0), train_x.std(0) + 1e-6
    x, t = (train_x - mu) / sd, (test_x - mu) / sd
    w = np.linalg.solve(x.T @ x + l2 * np.eye(x.shape[1]), x.T @ (train_y - train_y.mean()))
    return t @ w + train_y.mean()


def task_score(task, predictions, labels):
    """GLUE's score of one task, in %: STS-B the mean of Pearson and Spearman, MRPC accuracy at
    a 0.5 threshold (predictions of a 0/1 label)."""
    from bert_tf.metrics.classification import accuracy, compute_metrics
    if task == "STS-B":
        return 100 * compute_metrics("sts-b", list(predictions), list(labels))["corr"]
    return 100 * accuracy([int(p >= 0.5) for p in predictions], [int(y) for y in labels])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work_dir", required=True,
                   help="pretraining_pays.py work dir (bert_config.json, vocab.txt)")
    p.add_argument("--init", required=True, help="checkpoint prefix, or 'random'")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seq_length", type=int, default=128)
    p.add_argument("--l2", default="1,100")
    p.add_argument("--jsonl", required=True)
    args = p.parse_args()
    import numpy as np
    import keras
    import tensorflow as tf
    import runlog
    from frozen_features import meta
    from bert_tf import BertConfig
    from bert_tf.checkpoints.native import checkpoint_root
    from bert_tf.data.classification import get_processor
    from bert_tf.model import BertEncoder, BertPretrainer
    keras.utils.set_random_seed(args.seed)
    model = BertPretrainer(BertEncoder(
        BertConfig.from_json_file(os.path.join(args.work_dir, "bert_config.json"))))
    if args.init != "random":
        tf.train.Checkpoint(model=checkpoint_root(model)).read(args.init).expect_partial()
    vocab_file = os.path.join(args.work_dir, "vocab.txt")
    common = {"init": args.init, "seed": args.seed, "seq_length": args.seq_length, **meta()}
    for task in ("STS-B", "MRPC"):
        processor = get_processor(task.lower())
        data = {}
        for split in ("train", "dev"):
            examples = getattr(processor, f"get_{split}_examples")(os.path.join(GLUE, task))
            inputs, labels = pair_inputs(vocab_file, examples, args.seq_length)
            data[split] = (*encode(model, inputs), labels)
        (train_x, _, train_y), (dev_x, dev_next, dev_y) = data["train"], data["dev"]
        lines = [{"task": task, "features": name, "probe": f"ridge l2={l2}", "dev_score":
                  task_score(task, ridge(train_x[name], train_y, dev_x[name], float(l2)), dev_y)}
                 for name in train_x for l2 in args.l2.split(",")]
        if args.init != "random":
            score = (task_score(task, dev_next, dev_y) if task == "STS-B"
                     else 100 * float(np.corrcoef(dev_next, dev_y)[0, 1]))
            lines.append({"task": task, "features": "next-sentence head, P(IsNext)",
                          "probe": "none (STS-B: corr; MRPC: Pearson with the label)",
                          "dev_score": score})
        for line in lines:
            line = {**line, **common}
            print(json.dumps(line), flush=True)
            runlog.append_row(args.jsonl, line)


if __name__ == "__main__":
    main()
