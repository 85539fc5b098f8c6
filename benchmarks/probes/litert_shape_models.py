"""Probe: what a new request length costs a LiteRT export, and what LiteRTRunner saves of it.

Two settings on a LiteRT export (a version folder), each in a process of its own, 2 threads:
  alternate  two requests of --lengths tokens in turns, 200 calls after 200 (p50 ms):
             one Interpreter, resized at every call (it plans every operator again);
             one Interpreter per length (no re-planning, each its own packed weights);
             one Interpreter, one length only (the floor)
  requests   the first --requests SST-2 dev sentences (bert_tf's tokenizer of the export's
             vocab.txt, [CLS] ... [SEP]) one at a time in file order, after one pass, --rounds
             passes (p50 and mean ms, and the process's proportional set size, PSS MB):
             interpreter  one Interpreter, ai-edge-litert's signature runner
             runner       bert_tf's LiteRTRunner: a compiled model per shape, one weight cache
             per_shape    one Interpreter per shape, each its own packed weights
  python benchmarks/probes/litert_shape_models.py --model DIR [--jsonl F]
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
SST2 = os.path.join(ROOT, "..", "shared", "data", "glue", "SST-2", "dev.tsv")


def pss_mb():
    with open("/proc/self/smaps_rollup") as f:
        return round(int(next(line for line in f if line.startswith("Pss:")).split()[1]) / 1024)


def interpreter(path):
    from ai_edge_litert.interpreter import Interpreter
    return Interpreter(model_path=path, num_threads=2).get_signature_runner("serving_default")


def call(run, ids):
    import numpy as np
    x = np.asarray(ids, np.int32)[None]
    return run(input_ids=x, input_mask=np.ones_like(x), segment_ids=np.zeros_like(x))


def requests(args):
    from bert_tf.tokenization.full import FullTokenizer
    tokenizer = FullTokenizer(os.path.join(args.model, "vocab.txt"))
    special = tokenizer.special_ids
    with open(SST2, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:args.requests + 1]
    return [[special["[CLS]"], *tokenizer.encode(r[0])[:126], special["[SEP]"]] for r in rows]


def child(args):
    import numpy as np
    path = os.path.join(args.model, "model.tflite")
    times = []
    if args.child in ("alternate_one", "alternate_two", "same_length"):
        rng = np.random.default_rng(0)
        a, b = (rng.integers(1000, 20000, n).tolist() for n in args.lengths)
        one = interpreter(path)
        runs = {"alternate_one": [(one, a), (one, b)], "same_length": [(one, a), (one, a)],
                "alternate_two": [(interpreter(path), a), (interpreter(path), b)]}[args.child]
        for i in range(400):
            run, ids = runs[i % 2]
            begin = time.perf_counter()
            call(run, ids)
            times.append(1000 * (time.perf_counter() - begin))
        return {"p50_ms": round(float(np.median(times[200:])), 3)}
    if args.child == "runner":
        from bert_tf.prediction.litert_runner import LiteRTRunner
        runner = LiteRTRunner(path, num_threads=2)
        run = lambda ids: call(runner, ids)                              # noqa: E731
    elif args.child == "per_shape":
        runners = {}
        run = lambda ids: call(runners.setdefault(len(ids), interpreter(path)), ids)  # noqa
    else:
        one = interpreter(path)
        run = lambda ids: call(one, ids)                                 # noqa: E731
    texts = requests(args)
    for ids in texts:
        run(ids)
    for _ in range(args.rounds):
        for ids in texts:
            begin = time.perf_counter()
            run(ids)
            times.append(1000 * (time.perf_counter() - begin))
    return {"p50_ms": round(float(np.median(times)), 3), "mean_ms": round(float(np.mean(times)), 3),
            "pss_mb": pss_mb(), "distinct_lengths": len({len(t) for t in texts})}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--jsonl")
    parser.add_argument("--lengths", type=int, nargs=2, default=(20, 28))
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return
    from bert_tf.cpu_features import cpu_flags, cpu_model, usable_cores
    flags = cpu_flags()
    with open(os.path.join(args.model, "export_info.json"), encoding="utf-8") as f:
        info = json.load(f)
    lines = [{"record": "header", "probe": "litert_shape_models", "cpu": cpu_model(),
              "flags": {f: f in flags for f in ("avx2", "avx512_vnni", "avx512_bf16",
                                                 "amx_int8")},
              "cores": usable_cores(), "export": {k: v for k, v in info.items()
                                                   if k in ("task", "format", "precision")},
              "model_bytes": os.path.getsize(os.path.join(args.model, "model.tflite")),
              "commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, text=True,
                                       capture_output=True).stdout.strip()}]
    settings = ["alternate_one", "alternate_two", "same_length", "interpreter", "runner",
                "per_shape"]
    for repeat in range(args.repeats):
        for setting in settings:
            cmd = [sys.executable, __file__, "--child", setting, "--model", args.model,
                   "--lengths", *map(str, args.lengths), "--requests", str(args.requests),
                   "--rounds", str(args.rounds)]
            out = subprocess.run(cmd, check=True, text=True, capture_output=True).stdout
            lines.append(dict(json.loads(out.splitlines()[-1]), setting=setting,
                              repeat=repeat, lengths=list(args.lengths)))
            print(json.dumps(lines[-1]), flush=True)
    if args.jsonl:
        with open(args.jsonl, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(line) + "\n" for line in lines)


if __name__ == "__main__":
    main()
