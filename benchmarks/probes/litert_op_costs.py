"""Probe: where a MiniLM-sized LiteRT int8 request spends its time on this CPU, 1 and 2 threads.

Three synthetic graphs of MiniLM's shapes (hidden 384, intermediate 1536, 6 layers), converted
by TensorFlow's LiteRT converter and run by ai-edge-litert (XNNPACK), each timed alone (p50 of
500 calls after 50) at several token counts:
  fc         the 24 projections, int8 weights (dynamic range, as `--precision=int8`)
  layernorm  13 LayerNorms as the LiteRT export writes them (9 operators each)
  affine     13 x * gamma + beta (2 operators each)
  attention  6 attentions as the export computes them from the fused [S, 3H] projection:
             one reshape and TRANSPOSE into heads, SPLIT, two BATCH_MATMULs, mask and
             SOFTMAX, TRANSPOSE back (each layer's input is the previous output, tiled 3x)
  gelu       6 exact GELUs on [S, 1536]
--model adds the whole export (a litert version folder) at the same lengths.
  python benchmarks/probes/litert_op_costs.py [--model DIR] [--jsonl F]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
H, I, LAYERS, NORMS = 384, 1536, 6, 13
LENGTHS = (9, 16, 17, 25, 33)


def build(kind, path):
    import numpy as np
    import tensorflow as tf
    rng = np.random.default_rng(0)

    def const(*shape, scale=0.05, offset=0.0):
        return tf.constant(rng.normal(size=shape) * scale + offset, tf.float32)
    if kind == "attention":
        return _convert(_attention, path, quantize=False)
    if kind == "gelu":
        return _convert(_gelu, path, quantize=False)
    if kind == "fc":
        weights = [(const(H, 3 * H), const(H, H), const(H, I), const(I, H))
                   for _ in range(LAYERS)]
    else:
        weights = [(const(H, scale=0.1, offset=1.0), const(H, scale=0.1)) for _ in range(NORMS)]

    @tf.function(input_signature=[tf.TensorSpec([None, H], tf.float32)])
    def graph(x):
        for w in weights:
            if kind == "fc":
                x = x + tf.matmul(tf.matmul(x, w[0])[:, :H], w[1])
                x = x + tf.matmul(tf.nn.relu(tf.matmul(x, w[2])), w[3])
            elif kind == "layernorm":
                centred = x - tf.reduce_mean(x, axis=[-1], keepdims=True)
                variance = tf.reduce_mean(centred * centred, axis=[-1], keepdims=True)
                x = centred * (tf.math.rsqrt(variance + 1e-12) * w[0]) + w[1]
            else:
                x = x * w[0] + w[1]
        return x
    _convert(graph, path, quantize=kind == "fc")


def _attention():
    import tensorflow as tf
    heads, size = 12, H // 12

    @tf.function(input_signature=[tf.TensorSpec([None, 3 * H], tf.float32)])
    def graph(x):
        bias = tf.zeros([1, 1, 1, 1, 1])
        for _ in range(LAYERS):
            qkv = tf.transpose(tf.reshape(x, (1, -1, 3, heads, size)), (2, 0, 3, 1, 4))
            q, k, v = tf.split(qkv, 3, axis=0)
            probs = tf.nn.softmax(tf.matmul(q, k, transpose_b=True) + bias, axis=-1)
            context = tf.reshape(tf.transpose(tf.matmul(probs, v), (0, 1, 3, 2, 4)), (-1, H))
            x = tf.concat([context] * 3, axis=-1)
        return context
    return graph


def _gelu():
    import tensorflow as tf

    @tf.function(input_signature=[tf.TensorSpec([None, H], tf.float32)])
    def graph(x):
        y = tf.tile(x, [1, I // H])
        for _ in range(LAYERS):
            y = tf.nn.gelu(y, approximate=False)
        return y
    return graph


def _convert(graph, path, quantize):
    import tensorflow as tf
    if not hasattr(graph, "get_concrete_function"):
        graph = graph()
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [graph.get_concrete_function()], graph)
    if quantize:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    with open(path, "wb") as f:
        f.write(converter.convert())


def time_graph(path, threads, length):
    """p50 ms of one call at `length` rows (the synthetic graphs) or tokens (an export)."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter
    interpreter = Interpreter(model_path=path, num_threads=threads)
    if path.endswith("model.tflite"):
        runner = interpreter.get_signature_runner("serving_default")
        ids = np.full((1, length), 1000, np.int32)
        inputs = {"input_ids": ids, "input_mask": np.ones_like(ids),
                  "segment_ids": np.zeros_like(ids)}

        def call():
            runner(**inputs)
    else:
        detail = interpreter.get_input_details()[0]
        index, width = detail["index"], int(detail["shape_signature"][-1])
        interpreter.resize_tensor_input(index, [length, width])
        interpreter.allocate_tensors()
        x = np.random.default_rng(0).normal(size=(length, width)).astype(np.float32)

        def call():
            interpreter.set_tensor(index, x)
            interpreter.invoke()
    for _ in range(50):
        call()
    times = []
    for _ in range(500):
        begin = time.perf_counter()
        call()
        times.append(1000 * (time.perf_counter() - begin))
    return round(float(np.median(times)), 4), len(interpreter._get_ops_details())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model")
    parser.add_argument("--jsonl")
    parser.add_argument("--child", nargs=3, metavar=("PATH", "THREADS", "LENGTH"))
    args = parser.parse_args()
    if args.child:
        p50, operators = time_graph(args.child[0], int(args.child[1]), int(args.child[2]))
        print(json.dumps({"p50_ms": p50, "operators": operators}))
        return
    from bert_tf.cpu_features import cpu_flags, cpu_model
    flags = cpu_flags()
    lines = [{"record": "header", "probe": "litert_op_costs", "cpu": cpu_model(),
              "flags": {f: f in flags for f in ("avx2", "avx512_vnni", "avx512_bf16",
                                                 "amx_int8")},
              "cores": len(os.sched_getaffinity(0)),
              "commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, text=True,
                                       capture_output=True).stdout.strip()}]
    with tempfile.TemporaryDirectory() as work:
        graphs = {}
        for kind in ("fc", "layernorm", "affine", "attention", "gelu"):
            graphs[kind] = os.path.join(work, f"{kind}.tflite")
            build(kind, graphs[kind])
        if args.model:
            graphs["export"] = os.path.join(args.model, "model.tflite")
        for kind, path in graphs.items():
            for threads in (1, 2):
                for length in LENGTHS:
                    out = subprocess.run([sys.executable, __file__, "--child", path,
                                          str(threads), str(length)], check=True, text=True,
                                         capture_output=True).stdout
                    lines.append(dict(json.loads(out.splitlines()[-1]), graph=kind,
                                      threads=threads, length=length))
                    print(json.dumps(lines[-1]), flush=True)
    if args.jsonl:
        with open(args.jsonl, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(line) + "\n" for line in lines)


if __name__ == "__main__":
    main()
