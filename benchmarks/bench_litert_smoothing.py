#!/usr/bin/env python3
"""What does activation smoothing cost a LiteRT int8 export per request? (issue 51)

Two LiteRT exports of one model, with and without smoothing (export_savedmodel.py
--format=litert --precision=int8, and the same with --int8_smoothing=0), loaded side by side in
one process (ai-edge-litert, XNNPACK, as many threads as cores) and timed at batch 1 on the
same token ids, alternating A B / B A: the difference is the 2 multiplies per block that the
smoothing adds, without the run-to-run noise of separate processes.

  python3 benchmarks/bench_litert_smoothing.py --smoothed S/1/model.tflite \
      --plain P/1/model.tflite --jsonl benchmarks/results/litert_smoothing_minilm.jsonl

Each line records the two files' sizes, not their paths.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--smoothed", required=True)
    p.add_argument("--plain", required=True)
    p.add_argument("--lengths", default="16,48,128", help="tokens per request")
    p.add_argument("--requests", type=int, default=400, help="timed calls per export and length")
    p.add_argument("--jsonl", required=True)
    args = p.parse_args()
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter
    threads = len(os.sched_getaffinity(0))
    runners, ops = {}, {}
    for name in ("plain", "smoothed"):
        interpreter = Interpreter(model_path=getattr(args, name), num_threads=threads)
        runners[name] = interpreter.get_signature_runner("serving_default")
        names = [d["op_name"] for d in interpreter._get_ops_details()]
        ops[name] = {"ops": len(names), "MUL": names.count("MUL")}
    flags = open("/proc/cpuinfo").read()
    common = {"commit": subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"],
                                       capture_output=True, text=True).stdout.strip(),
              "cpu_flags": [f for f in ("avx512_vnni", "avx512_bf16", "amx_int8", "avx2")
                            if f" {f}" in flags], "threads": threads,
              "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "ops": ops,
              "file_bytes": {name: os.path.getsize(getattr(args, name))
                             for name in ("plain", "smoothed")}}
    rng = np.random.default_rng(0)
    with open(args.jsonl, "a", encoding="utf-8") as out:
        for length in [int(n) for n in args.lengths.split(",")]:
            features = {"input_ids": rng.integers(1000, 20000, (1, length)).astype(np.int32),
                        "input_mask": np.ones((1, length), np.int32),
                        "segment_ids": np.zeros((1, length), np.int32)}
            for run in runners.values():
                for _ in range(50):
                    run(**features)
            seconds = {name: [] for name in runners}
            for i in range(args.requests):
                for name in (("plain", "smoothed") if i % 2 else ("smoothed", "plain")):
                    start = time.perf_counter()
                    runners[name](**features)
                    seconds[name].append(time.perf_counter() - start)
            line = dict(common, tokens=length, requests=args.requests, **{
                f"{name}_p50_ms": round(1e3 * float(np.median(s)), 4)
                for name, s in seconds.items()}, **{
                f"{name}_p10_ms": round(1e3 * float(np.percentile(s, 10)), 4)
                for name, s in seconds.items()})
            line["smoothed_over_plain_p50"] = round(line["smoothed_p50_ms"] /
                                                    line["plain_p50_ms"], 4)
            print(json.dumps(line), flush=True)
            out.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    sys.exit(main())
