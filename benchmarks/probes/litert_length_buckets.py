"""Probe: does padding single requests to a multiple of 8 tokens, one interpreter per padded
length (bert_tf.prediction.litert_runner), make a LiteRT export faster at batch 1?

Each setting runs in a process of its own (so no other interpreter evicts its weights), over
the first 200 SST-2 dev sentences three times after one warm-up pass; settings alternate.
  python benchmarks/probes/litert_length_buckets.py --model <litert version folder> [--jsonl F]
"""

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
SST2 = os.path.join(ROOT, "..", "shared", "data", "glue", "SST-2", "dev.tsv")


def measure(folder, buckets):
    import numpy as np

    from bert_tf.prediction.litert_runner import LiteRTRunner
    from bert_tf.tokenization import FullTokenizer
    tokenizer = FullTokenizer(os.path.join(folder, "vocab.txt"), do_lower_case=True)
    with open(SST2, encoding="utf-8") as f:
        texts = [line.split("\t")[0] for line in f.read().splitlines()[1:201]]
    requests = []
    for text in texts:
        ids = tokenizer.convert_tokens_to_ids(["[CLS]"] + tokenizer.tokenize(text)[:126] +
                                              ["[SEP]"])
        requests.append({"input_ids": np.array([ids], np.int32),
                         "input_mask": np.ones((1, len(ids)), np.int32),
                         "segment_ids": np.zeros((1, len(ids)), np.int32)})
    run = LiteRTRunner(os.path.join(folder, "model.tflite"), 128,
                       memory_budget=(1 << 30) if buckets else 0)
    for request in requests:
        run(request)
    times = []
    for _ in range(3):
        for request in requests:
            begin = time.perf_counter()
            run(request)
            times.append(1000 * (time.perf_counter() - begin))
    return {"p50_ms": round(float(np.median(times)), 3), "mean_ms": round(float(np.mean(times)), 3),
            "padded_lengths": run.padded_lengths, "requests": len(times)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--jsonl")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", choices=["single", "buckets"])
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.model, args.child == "buckets")))
        return
    from bert_tf.cpu_features import cpu_flags, cpu_model
    flags = cpu_flags()
    header = {"record": "header", "probe": "litert_length_buckets", "cpu": cpu_model(),
              "flags": {f: f in flags for f in ("avx2", "avx512_vnni", "avx512_bf16",
                                                 "amx_int8")},
              "cores": len(os.sched_getaffinity(0)), "model": os.path.abspath(args.model),
              "commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, text=True,
                                       capture_output=True).stdout.strip()}
    lines = [header]
    for round_ in range(args.rounds):
        for setting in ("single", "buckets") if round_ % 2 == 0 else ("buckets", "single"):
            out = subprocess.run([sys.executable, __file__, "--model", args.model, "--child",
                                  setting], capture_output=True, text=True, check=True).stdout
            lines.append(dict(json.loads(out.splitlines()[-1]), setting=setting, round=round_))
            print(json.dumps(lines[-1]), flush=True)
    if args.jsonl:
        with open(args.jsonl, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(line) + "\n" for line in lines)


if __name__ == "__main__":
    main()
