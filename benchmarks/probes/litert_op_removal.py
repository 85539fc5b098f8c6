"""Probe: what some operators of a LiteRT int8 export cost at batch 1, by removing them.

Timing-only copies of the export (their outputs are wrong), each edited in its flatbuffer:
  export                  the file as exported
  no_head_transposes      every 5-D TRANSPOSE (the heads split and merged, two per layer)
                          turned into a RESHAPE to the same shape at batch 1: their cost at most
  no_mask_add             the attention mask's ADD in every layer removed
  no_smoothing_restore    the residual MULs by the int8 smoothing factors removed
  softmax_not_delegated   SOFTMAX's beta set to 1 + 1e-7: XNNPACK leaves it to LiteRT's own
                          kernel, on one thread
Each copy runs in LiteRTRunner (2 threads) over the first --requests SST-2 dev sentences
(bert_tf's tokenizer of the export's vocab.txt), one at a time after one pass, --rounds passes,
in a process of its own; the copies take turns, --repeats times. p50 and mean ms per process.
  python benchmarks/probes/litert_op_removal.py --model DIR [--jsonl F]
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
SST2 = os.path.join(ROOT, "..", "shared", "data", "glue", "SST-2", "dev.tsv")
VARIANTS = ("export", "no_head_transposes", "no_mask_add", "no_smoothing_restore",
            "softmax_not_delegated")


def edited(src, dst, variant):
    """Writes the timing-only copy `variant` of the .tflite at src to dst; returns how many
    operators it changed."""
    import numpy as np
    from ai_edge_litert import schema_py_generated as schema
    from ai_edge_litert.tools import flatbuffer_utils
    model = flatbuffer_utils.read_model(src)
    graph = model.subgraphs[0]
    code = {v: k for k, v in vars(schema.BuiltinOperator).items() if isinstance(v, int)}

    def name(op):
        c = model.operatorCodes[op.opcodeIndex]
        return code[max(c.builtinCode, c.deprecatedBuiltinCode)]

    def shape(t):
        return list(graph.tensors[t].shape)

    def bypass(ops):                      # consumers of each op's output read its first input
        for op in ops:
            for other in graph.operators:
                other.inputs = [op.inputs[0] if t == op.outputs[0] else t for t in other.inputs]
        graph.operators = [op for op in graph.operators if all(op is not o for o in ops)]
        return len(ops)

    ops = graph.operators
    if variant == "no_mask_add":
        changed = bypass([op for op in ops if name(op) == "ADD" and len(shape(op.inputs[0])) == 5])
    elif variant == "no_smoothing_restore":
        changed = bypass([op for op in ops if name(op) == "MUL" and len(shape(op.inputs[1])) == 1
                          and shape(op.inputs[0])[-1] == shape(op.inputs[1])[0] > 1])
    elif variant == "softmax_not_delegated":
        softmaxes = [op for op in ops if name(op) == "SOFTMAX" and len(shape(op.inputs[0])) == 5]
        for op in softmaxes:
            op.builtinOptions.beta = 1.0000001
        changed = len(softmaxes)
    elif variant == "no_head_transposes":
        reshape = next(i for i, c in enumerate(model.operatorCodes)
                       if max(c.builtinCode, c.deprecatedBuiltinCode) ==
                       schema.BuiltinOperator.RESHAPE)
        changed = 0
        for op in ops:
            if name(op) != "TRANSPOSE" or len(shape(op.inputs[0])) != 5:
                continue
            perm = np.frombuffer(bytes(model.buffers[graph.tensors[op.inputs[1]].buffer].data),
                                 np.int32)
            signature = [int(d) for d in graph.tensors[op.inputs[0]].shapeSignature]
            batch_axis = signature.index(-1)             # the first dynamic axis; then length
            new_shape = [1 if p == batch_axis else signature[p] for p in perm]
            buffer = schema.BufferT()
            buffer.data = np.asarray(new_shape, np.int32).tobytes()
            model.buffers.append(buffer)
            tensor = schema.TensorT()
            tensor.shape, tensor.type = [len(new_shape)], schema.TensorType.INT32
            tensor.buffer, tensor.name = len(model.buffers) - 1, b"probe_shape_%d" % changed
            graph.tensors.append(tensor)
            op.opcodeIndex, op.inputs = reshape, [op.inputs[0], len(graph.tensors) - 1]
            op.builtinOptionsType = schema.BuiltinOptions.ReshapeOptions
            op.builtinOptions = schema.ReshapeOptionsT()
            op.builtinOptions.newShape = new_shape
            changed += 1
    else:
        changed = 0
    flatbuffer_utils.write_model(model, dst)
    return changed


def requests(args):
    from bert_tf.tokenization.full import FullTokenizer
    tokenizer = FullTokenizer(os.path.join(args.model, "vocab.txt"))
    special = tokenizer.special_ids
    with open(SST2, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:args.requests + 1]
    return [[special["[CLS]"], *tokenizer.encode(r[0])[:126], special["[SEP]"]] for r in rows]


def child(args):
    import numpy as np
    from bert_tf.prediction.litert_runner import LiteRTRunner
    runner = LiteRTRunner(args.child, num_threads=2)
    features = []
    for ids in requests(args):
        x = np.asarray(ids, np.int32)[None]
        features.append({"input_ids": x, "input_mask": np.ones_like(x),
                         "segment_ids": np.zeros_like(x)})
    for f in features:
        runner(**f)
    times = []
    for _ in range(args.rounds):
        for f in features:
            begin = time.perf_counter()
            runner(**f)
            times.append(1000 * (time.perf_counter() - begin))
    return {"p50_ms": round(float(np.median(times)), 3),
            "mean_ms": round(float(np.mean(times)), 3)}


def header(args):
    from bert_tf.cpu_features import cpu_flags, cpu_model, usable_cores
    flags = cpu_flags()
    with open(os.path.join(args.model, "export_info.json"), encoding="utf-8") as f:
        info = json.load(f)
    git = ["git", "-C", ROOT]
    return {"record": "header", "probe": "litert_op_removal", "cpu": cpu_model(),
            "flags": {f: f in flags for f in ("avx2", "avx512_vnni", "avx512_bf16", "amx_int8")},
            "cores": usable_cores(),
            "export": {k: v for k, v in info.items() if k in ("task", "format", "precision")},
            "requests": args.requests, "rounds": args.rounds,
            "commit": subprocess.run(git + ["rev-parse", "HEAD"], text=True,
                                     capture_output=True).stdout.strip(),
            "dirty": bool(subprocess.run(git + ["status", "--porcelain", "--untracked-files=no"],
                                         text=True, capture_output=True).stdout.strip())}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True, help="a LiteRT int8 version folder")
    parser.add_argument("--jsonl")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return
    lines = [header(args)]
    with tempfile.TemporaryDirectory(prefix="litert_op_removal_") as work:
        paths, changed = {}, {}
        for variant in VARIANTS:
            paths[variant] = os.path.join(work, variant + ".tflite")
            changed[variant] = edited(os.path.join(args.model, "model.tflite"), paths[variant],
                                      variant)
        for repeat in range(args.repeats):
            for variant in VARIANTS:
                cmd = [sys.executable, __file__, "--child", paths[variant], "--model",
                       args.model, "--requests", str(args.requests), "--rounds",
                       str(args.rounds)]
                out = subprocess.run(cmd, check=True, text=True, capture_output=True).stdout
                lines.append(dict(json.loads(out.splitlines()[-1]), variant=variant,
                                  operators_changed=changed[variant], repeat=repeat))
                print(json.dumps(lines[-1]), flush=True)
    if args.jsonl:
        with open(args.jsonl, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(line) + "\n" for line in lines)


if __name__ == "__main__":
    main()
