"""Where a batch-1 request to an int8 export goes: the speed of bert_tf's int8 projection
(bert_tf.model.int8._int8_matmul: per-row quantization, oneDNN's int8 matmul, the row scales
and the bias) at one request's token count, beside float32 and bfloat16 matmuls of the same
shape, with 1 or 2 intra-op threads (issue 29).

  python3 benchmarks/probes/int8_batch1.py --threads 1 --jsonl out.jsonl
  python3 benchmarks/probes/int8_batch1.py --threads 2 --jsonl out.jsonl

Each figure is the median over 15 calls of a graph running the projection --repeats times
(so a call's own overhead is spread), divided by --repeats. The shapes are BERT-base's:
query/key/value fused [768, 2304], attention output [768, 768], intermediate [768, 3072],
output [3072, 768]; --tokens 53 is an MRPC dev pair's mean length.
"""

import argparse
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from bert_tf.cpu_features import cpu_model  # noqa: E402

SHAPES = {"query_key_value": (768, 2304), "attention_output": (768, 768),
          "intermediate": (768, 3072), "output": (3072, 768)}


def median_ms(fn, x, repeats):
    fn(x).numpy()
    fn(x).numpy()
    times = []
    for _ in range(15):
        start = time.perf_counter()
        fn(x).numpy()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2] / repeats * 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2, help="intra- and inter-op threads")
    parser.add_argument("--tokens", type=int, default=53)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--jsonl", default=None, help="append the JSON lines here")
    args = parser.parse_args()

    import numpy as np
    import tensorflow as tf

    from bert_tf.model import int8
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    rng = np.random.default_rng(0)
    for name, (k, n) in SHAPES.items():
        x = tf.constant(rng.standard_normal((args.tokens, k)).astype(np.float32))
        kernel = rng.standard_normal((k, n)).astype(np.float32)
        quantized, scales = int8.quantize_kernel(kernel)
        quantized, kernel_max = tf.constant(quantized), tf.constant(scales * 127.0)
        bias = tf.zeros([n])
        w32 = tf.constant(kernel)
        w16 = tf.cast(w32, tf.bfloat16)

        # Each repeat reads a different input (x + i) so none is folded away, and keeps one
        # value of its output so the sum at the end depends on every matmul.
        @tf.function
        def int8_projection(x):
            return tf.add_n([int8._int8_matmul(x + float(i), quantized, kernel_max, bias)[0, 0]
                             for i in range(args.repeats)])

        @tf.function
        def float32_matmul(x):
            return tf.add_n([tf.matmul(x + float(i), w32)[0, 0] for i in range(args.repeats)])

        @tf.function
        def bfloat16_matmul(x):
            x = tf.cast(x, tf.bfloat16)
            return tf.add_n([tf.cast(tf.matmul(x + float(i), w16)[0, 0], tf.float32)
                             for i in range(args.repeats)])

        row = {"commit": head, "cpu": cpu_model(),
               "threads": args.threads, "tokens": args.tokens, "projection": name,
               "shape": [k, n], "tensorflow": tf.__version__}
        for label, fn in (("int8", int8_projection), ("fp32", float32_matmul),
                          ("bf16", bfloat16_matmul)):
            ms = median_ms(fn, x, args.repeats)
            row[f"{label}_us"] = round(ms * 1000, 1)
            row[f"{label}_gops"] = round(2 * args.tokens * k * n / ms / 1e6, 1)
        print(json.dumps(row), flush=True)
        if args.jsonl:
            with open(args.jsonl, "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
