"""Batch-1 latency of one SavedModel export at given intra- and inter-op thread counts: its
serving_default signature called on the first 40 MRPC dev pairs one by one, 3 passes after a
warm-up pass; p50 and p90 in ms (issue 29: which thread setting serves one request fastest).

  python3 benchmarks/probes/export_batch1.py EXPORT_DIR/1 --intra 2 --inter 2 --jsonl out.jsonl
"""

import argparse
import csv
import json
import os
import subprocess
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MRPC_DEV = os.path.join(ROOT, "..", "shared", "data", "glue", "MRPC", "dev.tsv")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("export", help="a SavedModel version folder (EXPORT_DIR/1)")
    parser.add_argument("--intra", type=int, default=2)
    parser.add_argument("--inter", type=int, default=2)
    parser.add_argument("--jsonl", default=None, help="append the JSON line here")
    args = parser.parse_args()

    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer's ops)
    tf.config.threading.set_intra_op_parallelism_threads(args.intra)
    tf.config.threading.set_inter_op_parallelism_threads(args.inter)
    signature = tf.saved_model.load(args.export).signatures["serving_default"]
    with open(MRPC_DEV, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:41]
    requests = [(tf.constant([r[3]]), tf.constant([r[4]])) for r in rows]
    for a, b in requests:
        signature(text_a=a, text_b=b)
    times = []
    for _ in range(3):
        for a, b in requests:
            start = time.perf_counter()
            next(iter(signature(text_a=a, text_b=b).values())).numpy()
            times.append(time.perf_counter() - start)
    times.sort()
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    row = {"commit": head, "export": os.path.abspath(args.export), "intra": args.intra,
           "inter": args.inter,
           "requests": len(times), "p50_ms": round(1000 * times[len(times) // 2], 2),
           "p90_ms": round(1000 * times[int(0.9 * len(times))], 2)}
    print(json.dumps(row), flush=True)
    if args.jsonl:
        with open(args.jsonl, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
