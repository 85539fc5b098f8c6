"""Probe (issue 81): where a batch-1 request to a LiteRT int8 export spends its time.

  python3 benchmarks/probes/litert_batch1.py --export <litert int8 version folder> \
      [--float_export <litert fp32 version folder>] --jsonl out.jsonl

- shape: each of 200 SST-2 dev sentences (bert_tf's tokenizer) run twice in a row: the first
  call follows a request of another length (LiteRT re-plans for the new shape), the second
  repeats the shape;
- length: one request of n tokens repeated, n = 8..48;
- int4 (with --float_export and ai-edge-quantizer installed): the fp32 export quantized by
  ai-edge-quantizer's dynamic_wi8_afp32 and dynamic_wi4_afp32 recipes, beside --export,
  called in turns on the same sentences.
One JSON line per part, with the CPU flags.
"""

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from bert_tf.tokenization import FullTokenizer  # noqa: E402


def cpu_flags():
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        flags = next(line for line in f if line.startswith("flags")).split()
    return [f for f in ("avx2", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
            if f in flags]


def features(tokenizer, text):
    ids = tokenizer.convert_tokens_to_ids(["[CLS]"] + tokenizer.tokenize(text)[:126] + ["[SEP]"])
    return {"input_ids": np.array([ids], np.int32), "input_mask": np.ones((1, len(ids)), np.int32),
            "segment_ids": np.zeros((1, len(ids)), np.int32)}


def runner(path):
    from ai_edge_litert.interpreter import Interpreter
    return Interpreter(model_path=path, num_threads=2).get_signature_runner("serving_default")


def timed(run, feats):
    begin = time.perf_counter()
    run(**feats)
    return 1000 * (time.perf_counter() - begin)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--export", required=True)
    parser.add_argument("--float_export")
    parser.add_argument("--jsonl", required=True)
    args = parser.parse_args()
    tokenizer = FullTokenizer(os.path.join(args.export, "vocab.txt"), do_lower_case=True)
    with open(os.path.join(ROOT, "..", "shared", "data", "glue", "SST-2", "dev.tsv"),
              encoding="utf-8") as f:
        texts = [line.split("\t")[0] for line in f.read().splitlines()[1:201]]
    requests = [features(tokenizer, t) for t in texts]
    run = runner(os.path.join(args.export, "model.tflite"))
    common = {"export": os.path.abspath(args.export), "cpu_flags": cpu_flags(), "threads": 2}
    lines = []
    new, same = [], []
    for feats in requests:
        new.append(timed(run, feats))
        same.append(timed(run, feats))
    lines.append(dict(common, part="shape", requests=len(requests),
                      median_tokens=float(np.median([r["input_ids"].shape[1] for r in requests])),
                      new_shape_p50_ms=float(np.median(new)),
                      same_shape_p50_ms=float(np.median(same))))
    by_length = {}
    for n in range(8, 49):
        feats = {k: v[:, :1].repeat(n, axis=1) for k, v in requests[0].items()}
        timed(run, feats)
        by_length[n] = float(np.median([timed(run, feats) for _ in range(60)]))
    lines.append(dict(common, part="length", p50_ms_by_tokens=by_length))
    if args.float_export:
        lines.append(dict(common, part="int4", **int4(args.float_export, run, requests)))
    with open(args.jsonl, "a", encoding="utf-8") as f:
        f.write("".join(json.dumps(line) + "\n" for line in lines))
    print("".join(json.dumps(line) + "\n" for line in lines))


def int4(float_export, ours, requests):
    from ai_edge_quantizer import quantizer, recipe
    runs = {"export": ours}
    with tempfile.TemporaryDirectory() as work:
        for name in ("dynamic_wi8_afp32", "dynamic_wi4_afp32"):
            q = quantizer.Quantizer(os.path.join(float_export, "model.tflite"))
            q.load_quantization_recipe(getattr(recipe, name)())
            path = os.path.join(work, name + ".tflite")
            q.quantize().export_model(path, overwrite=True)
            runs[name] = runner(path)
        logits = {n: [r(**f)["logits"] for f in requests] for n, r in runs.items()}
        times = {n: [] for n in runs}
        for _ in range(3):
            for feats in requests:
                for name, run in runs.items():
                    times[name].append(timed(run, feats))
    return {"p50_ms": {n: float(np.median(t)) for n, t in times.items()},
            "labels_changed_vs_export": {
                n: int(sum((a.argmax(-1) != b.argmax(-1)).any()
                           for a, b in zip(logits[n], logits["export"]))) for n in runs}}


if __name__ == "__main__":
    main()
