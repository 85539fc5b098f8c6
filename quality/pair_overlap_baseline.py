"""How much of MRPC and STS-B word overlap alone explains (issue #54's pair tasks).

A reference point for the pre-training recipes: the Jaccard overlap of the two sentences'
lower-cased word sets (bert_tf's BasicTokenizer), no learning beyond one threshold. For STS-B
the overlap is correlated with the gold score (GLUE's STS-B score: the mean of Pearson and
Spearman); for MRPC the threshold with the best train.tsv accuracy labels dev.tsv. One JSON line
per task and split to --results.

  python3 quality/pair_overlap_baseline.py
"""
import argparse
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import runlog  # noqa: E402
from bert_tf.data.classification import get_processor  # noqa: E402
from bert_tf.metrics.classification import accuracy, compute_metrics  # noqa: E402
from bert_tf.tokenization.basic import BasicTokenizer  # noqa: E402
from pretraining_pays import GLUE, cpu_info  # noqa: E402

RESULTS = os.path.join(REPO, "quality", "results", "pair_overlap_baseline.jsonl")


def overlaps(examples, tokenizer):
    """Jaccard overlap of each pair's word sets."""
    out = []
    for e in examples:
        a, b = set(tokenizer.tokenize(e.text_a)), set(tokenizer.tokenize(e.text_b))
        out.append(len(a & b) / max(1, len(a | b)))
    return out


def best_threshold(scores, labels):
    """The overlap threshold (predict 1 at or above it) with the best accuracy on these rows."""
    return max(sorted(set(scores)),
               key=lambda t: accuracy([int(s >= t) for s in scores], labels))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", default=RESULTS)
    args = parser.parse_args()
    tokenizer = BasicTokenizer(do_lower_case=True)
    meta = {"commit": runlog.commit(), **cpu_info(), "features": "jaccard of lower-cased word sets"}

    mrpc = get_processor("mrpc")
    train = mrpc.get_train_examples(os.path.join(GLUE, "MRPC"))
    dev = mrpc.get_dev_examples(os.path.join(GLUE, "MRPC"))
    train_labels = [int(e.label) for e in train]
    dev_labels = [int(e.label) for e in dev]
    threshold = best_threshold(overlaps(train, tokenizer), train_labels)
    metrics = compute_metrics("mrpc", [int(s >= threshold) for s in overlaps(dev, tokenizer)],
                              dev_labels)
    runlog.append_row(args.results, {
        "task": "MRPC", "split": "dev", "threshold_from": "train.tsv", "threshold": threshold,
        "dev_accuracy": metrics["eval_accuracy"], "dev_f1": metrics["f1"],
        "majority_accuracy": max(dev_labels.count(1), dev_labels.count(0)) / len(dev_labels),
        **meta})

    stsb = get_processor("sts-b")
    for split, examples in (("train", stsb.get_train_examples(os.path.join(GLUE, "STS-B"))),
                            ("dev", stsb.get_dev_examples(os.path.join(GLUE, "STS-B")))):
        metrics = compute_metrics("sts-b", overlaps(examples, tokenizer),
                                  [float(e.label) for e in examples])
        runlog.append_row(args.results, {"task": "STS-B", "split": split, **metrics, **meta})
    for row in runlog.read_rows(args.results)[-3:]:
        print({k: v for k, v in row.items() if k not in meta})


if __name__ == "__main__":
    main()
